"""The `opbench` command: argument parsing and wiring only.

Exit codes (also in README): 0 every verdict PASS; 1 some SLOW or MISMATCH; 2 usage,
case-file or set-up error; 3 only ERROR / INCONCLUSIVE besides PASS; 130 interrupted.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import sys
from pathlib import Path
from typing import Any, Sequence

import click
from rich.console import Console
from rich.markup import escape

from .verdict import EXIT_USAGE, Verdict, exit_code

EXIT_INTERRUPTED = 130
DEFAULT_CASES_DIR = "cases"
CASES_ENV = "OPBENCH_CASES"

# Piped output (CI logs, files) gets a wide fixed width: rich's 80-column default would fold
# instance ids and intervals into unreadable stacks.
PIPED_WIDTH = 180
out = Console(width=None if sys.stdout.isatty() else PIPED_WIDTH)
err = Console(stderr=True, width=None if sys.stderr.isatty() else PIPED_WIDTH)


def fail(message: str, code: int = EXIT_USAGE) -> None:
    """A user-facing error: the message, no traceback."""
    # escaped: messages carry paths, ids and framework text whose "[...]" rich would eat
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, markup=True,
              soft_wrap=True)
    sys.exit(code)


def default_cases_path() -> str:
    path = os.environ.get(CASES_ENV, DEFAULT_CASES_DIR)
    if not Path(path).exists():
        fail(f"no case directory '{path}' here; pass case paths or --cases DIR "
             f"(or set {CASES_ENV})")
    return path


def load_instances(paths: Sequence[str], ops=None, keyword=None, tags=None):
    from .cases import CaseError, expand, load_cases, select

    try:
        cases = load_cases(list(paths))
        instances = [inst for case in cases for inst in expand(case)]
    except CaseError as exc:
        fail(str(exc))
    selected = select(instances, ops=ops, keyword=keyword, tags=tags)
    if not selected:
        what = []
        if ops:
            what.append(f"op {', '.join(ops)}")
        if keyword:
            what.append(f"-k {keyword!r}")
        if tags:
            what.append(f"tag {', '.join(tags)}")
        known = sorted({i.op for i in instances})
        fail(f"no case instance matches {' and '.join(what) or 'the given paths'} in "
             f"{', '.join(paths)} (ops there: {', '.join(known[:40]) or 'none'})")
    return selected


def timing_options(f):
    options = [
        click.option("--mode", type=click.Choice(["serial", "async", "both"]), default="serial",
                     show_default=True,
                     help="serial: sync after every call (latency); async: one sync per "
                          "sample (throughput); both: each, side by side."),
        click.option("--threshold", type=float, default=None,
                     help="Ratio threshold for cases that set none (default 0.8)."),
        click.option("--device", default="cpu", show_default=True,
                     help="cpu, cuda[:N] or ascend[:N]."),
        click.option("--threads", type=int, default=None,
                     help="Intra-op threads, set equal in both frameworks (default: cores)."),
        click.option("--reference", default="torch", show_default=True),
        click.option("--target", default="mindspore", show_default=True),
        click.option("--rounds", type=int, default=None,
                     help="Interleaved rounds per instance (default 15; >= 6 for a 95% CI)."),
        click.option("--min-sample-time", "min_sample_time_s", type=float, default=None,
                     help="Seconds each timed sample lasts at least (default 0.02)."),
        click.option("--max-time", "max_time_s", type=float, default=None,
                     help="Budget per measurement for the timed rounds, seconds (default 4)."),
        click.option("--no-backward", is_flag=True, help="Skip forward+backward timing."),
        click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
                     help="Results file (written after every instance). Default: "
                          "out/opbench-<time>.json."),
        click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False),
                     default=None, help="Also write a Markdown summary."),
        click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
                     help="Also write an HTML report."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def build_config(mode, threshold, device, threads, reference, target, rounds,
                 min_sample_time_s, max_time_s, no_backward, timing=True):
    from .measure import MeasureSettings
    from .runner import RunConfig, default_threads
    from .verdict import DEFAULT_THRESHOLD

    settings_kw: dict[str, Any] = {}
    if rounds is not None:
        settings_kw["rounds"] = rounds
    if min_sample_time_s is not None:
        settings_kw["min_sample_time_s"] = min_sample_time_s
    if max_time_s is not None:
        settings_kw["max_time_s"] = max_time_s
    try:
        return RunConfig(reference=reference, target=target, device=device,
                         threads=threads or default_threads(),
                         modes=("serial", "async") if mode == "both" else (mode,),
                         threshold=DEFAULT_THRESHOLD if threshold is None else threshold,
                         backward=not no_backward, timing=timing,
                         settings=MeasureSettings(**settings_kw))
    except ValueError as exc:
        fail(str(exc))


def _progress_printer(quiet: bool):
    def on_progress(i, n, inst, result):
        if quiet:
            return
        if result is None:
            err.print(f"[dim]\\[{i + 1}/{n}] {escape(inst.id)} ...[/]", highlight=False)
            return
        v = result.get("verdict") or "ERROR"
        ms = result.get("measurements") or {}
        ratios = " ".join(f"{k} {m['ratio']:.3g}" for k, m in ms.items())
        err.print(f"[dim]\\[{i + 1}/{n}][/] {escape(inst.id)}: {v} {ratios} "
                  f"[dim]({result.get('duration_s', 0):.1f} s)[/]", highlight=False)
    return on_progress


def execute(instances, config, json_path, markdown_path=None, html_path=None,
            quiet=False, worst_first=False) -> None:
    """Run, save, print, exit with the verdict code. Never shows a traceback for the
    user's mistakes or a missing framework/device."""
    from .frameworks import DeviceUnavailable, FrameworkUnavailable
    from .report import render_html, render_markdown, render_terminal
    from .runner import ApiError, Session, run

    if json_path is None:
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        json_path = os.path.join("out", f"opbench-{stamp}.json")
    session = Session(config)
    try:
        session.open()
    except (FrameworkUnavailable, DeviceUnavailable, ValueError) as exc:
        fail(str(exc))
    if not quiet:
        err.print(f"[dim]{len(instances)} instances; {config.reference} vs {config.target} on "
                  f"{config.device}, {config.threads} threads; results -> "
                  f"{escape(str(json_path))}[/]",
                  highlight=False)
    try:
        record = run(instances, config, json_path=json_path, session=session,
                     on_progress=_progress_printer(quiet))
    except ApiError as exc:
        fail(f"unknown APIs in the cases (nothing was timed):\n{exc}")
    except KeyboardInterrupt:
        saved = _count_saved(json_path)
        err.print(f"\n[bold]interrupted[/]: {saved} finished instances saved in "
                  f"{escape(str(json_path))}", highlight=False)
        sys.exit(EXIT_INTERRUPTED)
    render_terminal(record, out, worst_first=worst_first)
    if markdown_path:
        Path(markdown_path).write_text(render_markdown(record))
    if html_path:
        Path(html_path).write_text(render_html(record))
    err.print(f"[dim]results: {escape(str(json_path))}[/]", highlight=False)
    sys.exit(exit_code_for(record))


def exit_code_for(record: dict[str, Any]) -> int:
    return exit_code(Verdict(inst.get("verdict") or "ERROR") for inst in record["instances"])


def _count_saved(json_path: str) -> int:
    try:
        return len(json.loads(Path(json_path).read_text())["instances"])
    except (OSError, ValueError, KeyError):
        return 0


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="opbench", prog_name="opbench")
def cli() -> None:
    """Which operators are slower in MindSpore than in PyTorch, by how much, with what
    confidence. Ratio = reference time / target time (below 1: the target is slower)."""


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("-k", "keyword", default=None, help="Only instances whose id contains this.")
@click.option("--op", "ops", multiple=True, help="Only these operators (repeatable).")
@click.option("--tag", "tags", multiple=True, help="Only cases with one of these tags.")
@click.option("-q", "--quiet", is_flag=True, help="No per-instance progress lines.")
@timing_options
def run(paths, keyword, ops, tags, quiet, json_path, markdown_path, html_path, **timing):
    """Time every selected case instance (default: ./cases) in both frameworks."""
    instances = load_instances(paths or [default_cases_path()], ops, keyword, tags)
    execute(instances, build_config(**timing), json_path, markdown_path, html_path, quiet)


@cli.command()
@click.argument("ops", nargs=-1, required=True)
@click.option("--cases", "cases_dir", default=None, help="Case directory (default ./cases).")
@click.option("-k", "keyword", default=None, help="Only instances whose id contains this.")
@click.option("-q", "--quiet", is_flag=True)
@timing_options
def compare(ops, cases_dir, keyword, quiet, json_path, markdown_path, html_path, **timing):
    """Every shipped case instance of the operators OPS, both frameworks, one table."""
    instances = load_instances([cases_dir or default_cases_path()], ops, keyword)
    execute(instances, build_config(**timing), json_path, markdown_path, html_path, quiet)


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("-k", "keyword", default=None)
@click.option("--op", "ops", multiple=True)
@click.option("--tag", "tags", multiple=True)
@click.option("--device", default="cpu", show_default=True)
@click.option("--threads", type=int, default=None)
@click.option("--reference", default="torch", show_default=True)
@click.option("--target", default="mindspore", show_default=True)
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None)
@click.option("-q", "--quiet", is_flag=True)
def check(paths, keyword, ops, tags, device, threads, reference, target, json_path, quiet):
    """Correctness only: run each instance once in both frameworks and compare outputs
    (and gradients for backward cases). No timing."""
    instances = load_instances(paths or [default_cases_path()], ops, keyword, tags)
    config = build_config("serial", None, device, threads, reference, target, None, None, None,
                          False, timing=False)
    execute(instances, config, json_path, quiet=quiet)


@cli.command(name="list")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--tag", "tags", multiple=True)
@click.option("-k", "keyword", default=None)
@click.option("--instances", "show_instances", is_flag=True, help="List every instance id.")
def list_cases(paths, tags, keyword, show_instances):
    """Coverage of the case library: operators, instances, tags, backward, dtypes."""
    from .coverage import coverage_table, summarize_coverage

    instances = load_instances(paths or [default_cases_path()], None, keyword, tags)
    if show_instances:
        for inst in instances:
            # ids hold brackets ("add[shape=4x8]") that rich would read as markup
            out.print(inst.id, highlight=False, markup=False)
        return
    cov = summarize_coverage(instances)
    out.print(coverage_table(cov))
    out.print(f"[bold]{cov.n_operators} operators, {cov.n_instances} instances, "
              f"{cov.n_backward_operators} with backward, dtypes: {', '.join(cov.dtypes)}[/]",
              highlight=False)


@cli.command()
@click.argument("results", type=click.Path(exists=True, dir_okay=False))
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False), default=None)
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None)
@click.option("--worst-first", is_flag=True)
def report(results, markdown_path, html_path, worst_first):
    """Show a saved results file (and write Markdown / HTML)."""
    from .report import render_html, render_markdown, render_terminal
    from .results import ResultsError, read_results

    try:
        record = read_results(results)
    except ResultsError as exc:
        fail(str(exc))
    render_terminal(record, out, worst_first=worst_first)
    if markdown_path:
        Path(markdown_path).write_text(render_markdown(record))
    if html_path:
        Path(html_path).write_text(render_html(record))


@cli.command()
@click.argument("which", type=click.Choice(["case", "results"]), default="case")
def schema(which):
    """Print the JSON Schema of case files (for editors) or of results files."""
    from .cases import load_schema
    from .results import results_schema

    click.echo(json.dumps(load_schema() if which == "case" else results_schema(), indent=2))


def _add_optional_commands() -> None:
    """Instruments and gates live in their own packages; each contributes a click command."""
    import importlib

    for module, attr in [("opbench.trace.command", "trace_command"),
                         ("opbench.scan.command", "scan_command"),
                         ("opbench.gate.command", "gate_command"),
                         ("opbench.gate.command", "history_command")]:
        try:
            command = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError):
            continue
        cli.add_command(command)


_add_optional_commands()


def main(argv: Sequence[str] | None = None) -> None:
    cli.main(args=list(argv) if argv is not None else None, prog_name="opbench")


if __name__ == "__main__":
    main()

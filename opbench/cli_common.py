"""What every `opbench` command shares: consoles, user-facing errors, case selection, the
timing options and the run-save-print-exit sequence. The commands themselves live in
opbench/cli.py and in the instruments' own `command` modules, which all import this one
(never cli.py, so there is no import cycle).

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

from .frameworks.base import LAUNCH_MODES, LAUNCH_QUEUED
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
        click.option("--mode", type=click.Choice(["serial", "async", "both"]), default=None,
                     help="serial: sync after every call (latency); async: one sync per "
                          "sample (throughput); both: each, side by side. Default: serial."),
        click.option("--launch", type=click.Choice(LAUNCH_MODES), default=None,
                     help="queued: each framework launches operators its own way (MindSpore "
                          "through PyNative's launch queue); blocking: every operator runs to "
                          "completion in its call, so a serial time is the op's own cost "
                          "without the queue's hand-off. Default: queued."),
        click.option("--passes", type=int, default=None,
                     help="Spread each instance's rounds over this many passes through the "
                          "selection, so slow drift of the machine lands inside every "
                          "measurement instead of between runs. Default: 1."),
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
                     help="Budget per measurement for the timed rounds, seconds (default 2)."),
        click.option("--no-backward", is_flag=True, help="Skip forward+backward timing."),
        click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
                     help="Results file (written after every instance). Default: "
                          "out/opbench-<time>.json."),
        click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False),
                     default=None, help="Also write a Markdown summary."),
        click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
                     help="Also write an HTML report."),
        click.option("--history-db", "history_db", type=click.Path(dir_okay=False),
                     default=None, help="Also record the run in this SQLite history database "
                                        "(see `opbench history`)."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def build_config(mode, threshold, device, threads, reference, target, rounds,
                 min_sample_time_s, max_time_s, no_backward, timing=True, launch=None,
                 passes=None):
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
                         modes=(("serial", "async") if mode == "both"
                                else (mode or "serial",)),
                         launch=launch or LAUNCH_QUEUED, passes=1 if passes is None else passes,
                         threshold=DEFAULT_THRESHOLD if threshold is None else threshold,
                         backward=not no_backward, timing=timing,
                         settings=MeasureSettings(**settings_kw))
    except ValueError as exc:
        fail(str(exc))


def check_results_path(json_path) -> None:
    """Exit 2 before anything is measured when the results file cannot be written."""
    from .safe_write import unwritable_reason

    reason = unwritable_reason(json_path)
    if reason:
        fail(f"cannot save results to {json_path}: {reason}")


def signal_name_of(exc: BaseException) -> str:
    from .interrupts import signal_name

    return signal_name(getattr(exc, "signum", 2))


def exit_status(exc: BaseException) -> int:
    from .interrupts import exit_status as status

    return status(exc)


def _progress_printer(quiet: bool):
    def on_progress(i, n, inst, result):
        from .interrupts import reclaim

        reclaim()   # MindSpore installs its own SIGINT handler at its first operator
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


def pass_printer(quiet: bool):
    def on_pass(pass_index, passes):
        if not quiet:
            err.print(f"[dim]pass {pass_index}/{passes}: more rounds for every measured "
                      f"instance[/]", highlight=False)
    return on_pass


def execute(instances, config, json_path, markdown_path=None, html_path=None,
            quiet=False, worst_first=False, history_db=None) -> None:
    """Run, save, print, exit with the verdict code. Never shows a traceback for the
    user's mistakes or a missing framework/device."""
    from .frameworks import DeviceUnavailable, FrameworkUnavailable
    from .report import render_html, render_markdown, render_terminal
    from .runner import ApiError, Session, run
    from .safe_write import ResultsNotSaved

    if json_path is None:
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        json_path = os.path.join("out", f"opbench-{stamp}.json")
    check_results_path(json_path)
    session = Session(config)
    try:
        session.open()
    except (FrameworkUnavailable, DeviceUnavailable, ValueError) as exc:
        fail(str(exc))
    if not quiet:
        err.print(f"[dim]{len(instances)} instances; {config.reference} vs {config.target} on "
                  f"{config.device}, {config.threads} threads, {config.launch} launches"
                  f"{f', {config.passes} passes' if config.passes > 1 else ''}; results -> "
                  f"{escape(str(json_path))}[/]",
                  highlight=False)
    try:
        record = run(instances, config, json_path=json_path, session=session,
                     on_progress=_progress_printer(quiet), on_pass=pass_printer(quiet))
    except ApiError as exc:
        fail(f"unknown APIs in the cases (nothing was timed):\n{exc}")
    except KeyboardInterrupt as exc:
        saved = _count_saved(json_path)
        err.print(f"\n[bold]interrupted[/] ({signal_name_of(exc)}): {saved} finished instances "
                  f"saved in {escape(str(json_path))}", highlight=False)
        sys.exit(exit_status(exc))
    except ResultsNotSaved as exc:
        render_terminal(exc.record, out, worst_first=worst_first)
        fail(str(exc))
    render_terminal(record, out, worst_first=worst_first)
    if markdown_path:
        Path(markdown_path).write_text(render_markdown(record))
    if html_path:
        Path(html_path).write_text(render_html(record))
    if history_db:
        record_history(history_db, record, json_path)
    err.print(f"[dim]results: {escape(str(json_path))}[/]", highlight=False)
    sys.exit(exit_code_for(record))


def record_history(db_path: str, record: dict[str, Any], json_path: str | None,
                   label: str = "run") -> None:
    from .gate.history import HistoryError, HistoryStore

    try:
        with HistoryStore(db_path) as store:
            run_id, added = store.record_run(record, source=json_path, label=label)
    except HistoryError as exc:
        fail(str(exc))
    err.print(f"[dim]history: run #{run_id} {'recorded in' if added else 'already in'} "
              f"{escape(db_path)}[/]", highlight=False)


def exit_code_for(record: dict[str, Any]) -> int:
    return exit_code(Verdict(inst.get("verdict") or "ERROR") for inst in record["instances"])


def _count_saved(json_path: str) -> int:
    try:
        return len(json.loads(Path(json_path).read_text())["instances"])
    except (OSError, ValueError, KeyError):
        return 0



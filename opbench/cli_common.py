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


def _click_option(spec):
    """A click option from an options.OptionSpec (same flag, type and help as pytest's)."""
    if spec.kind is bool:
        return click.option(f"--{spec.flag}", spec.field, is_flag=True, default=None,
                            help=spec.help)
    kind = click.Choice(spec.kind) if isinstance(spec.kind, tuple) else spec.kind
    return click.option(f"--{spec.flag}", spec.field, type=kind, default=spec.default,
                        show_default=spec.default is not None, help=spec.help)


def timing_options(f):
    from .options import OPTIONS

    options = [_click_option(spec) for spec in OPTIONS] + [
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


def build_config(timing=True, **given):
    """The RunConfig of the options a command line gave (options.RunOptions does the
    defaults and the checks); a bad value is a usage error naming the option."""
    from .options import OptionError, RunOptions

    try:
        return RunOptions.from_mapping(given).to_config(timing=timing)
    except OptionError as exc:
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
    from .runner import ApiError, open_session, run
    from .workers import WorkerError

    if json_path is None:
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        json_path = os.path.join("out", f"opbench-{stamp}.json")
    if not quiet:
        err.print(f"[dim]{len(instances)} instances; {config.reference} vs {config.target} on "
                  f"{config.device}, {config.threads} threads, {config.launch} launches, "
                  f"{config.processes} worker process{'es' if config.processes > 1 else ''}"
                  f"{f', {config.passes} passes' if config.passes > 1 else ''}; results -> "
                  f"{escape(str(json_path))}[/]",
                  highlight=False)
    try:
        session = open_session(config)
    except (FrameworkUnavailable, DeviceUnavailable, ValueError, WorkerError) as exc:
        fail(str(exc))
    try:
        record = run(instances, config, json_path=json_path, session=session,
                     on_progress=_progress_printer(quiet), on_pass=pass_printer(quiet))
    except ApiError as exc:
        fail(f"unknown APIs in the cases (nothing was timed):\n{exc}")
    except KeyboardInterrupt:
        saved = _count_saved(json_path)
        err.print(f"\n[bold]interrupted[/]: {saved} finished instances saved in "
                  f"{escape(str(json_path))}", highlight=False)
        sys.exit(EXIT_INTERRUPTED)
    finally:
        if hasattr(session, "close"):
            session.close()
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



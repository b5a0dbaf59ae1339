"""What every `opbench` command shares: consoles, user-facing errors, case selection, the
timing options and the run-save-print-exit sequence. The commands themselves live in
opbench/cli/main.py and in the other command modules beside it, which all import this one
(never cli.py, so there is no import cycle).

Exit codes (also in README): 0 every verdict PASS; 1 some SLOW or MISMATCH; 2 usage,
case-file or set-up error; 3 only ERROR / INCONCLUSIVE besides PASS; 130 interrupted.
"""
from __future__ import annotations

import datetime as _dt
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import click
from rich.console import Console
from rich.markup import escape

from opbench.report.console import console_width
from opbench.verdicts.rules import EXIT_USAGE, Verdict, exit_code

if TYPE_CHECKING:   # the records load with the first command that reads or writes one
    from opbench.config import RunConfig
    from opbench.results.records import RunRecord

EXIT_INTERRUPTED = 130
CASES_ENV = "OPBENCH_CASES"

out = Console(width=console_width(sys.stdout))
err = Console(stderr=True, width=console_width(sys.stderr))


def fail(message: str, code: int = EXIT_USAGE) -> None:
    """A user-facing error: the message, no traceback."""
    # escaped: messages carry paths, ids and framework text whose "[...]" rich would eat
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, markup=True,
              soft_wrap=True)
    sys.exit(code)


def default_cases_path() -> str:
    """$OPBENCH_CASES, else the shipped case library (opbench/cases/library.py): commands work
    from any directory, not only inside a checkout."""
    path = os.environ.get(CASES_ENV)
    if path is not None:
        if not Path(path).exists():
            fail(f"{CASES_ENV}={path}: no such case directory")
        return path
    from opbench.cases.library import LibraryMissing, display_path, shipped_cases_dir

    try:
        return display_path(shipped_cases_dir())
    except LibraryMissing as exc:
        fail(str(exc))


def load_instances(paths: Sequence[str], ops=None, keyword=None, tags=None,
                   extra_paths: Sequence[str] = ()):
    """The selected instances of the cases in `paths`, plus those in `extra_paths`
    (`--cases DIR`: added, or replacing a case of the same name)."""
    from opbench.cases.case_files import CaseError, expand, load_cases
    from opbench.cases.library import merge_cases
    from opbench.cases.selection import Selection, SelectionError, as_tuple

    try:
        selection = Selection(keyword, as_tuple(ops), as_tuple(tags))
    except SelectionError as exc:
        fail(str(exc))
    try:
        cases = load_cases(list(paths))
        if extra_paths:
            cases = merge_cases(cases, load_cases(list(extra_paths)))
        instances = [inst for case in cases for inst in expand(case)]
    except CaseError as exc:
        fail(str(exc))
    selected = selection.instances(instances)
    if not selected:
        known = sorted({i.op for i in instances})
        fail(f"no case instance matches {selection.describe() or 'the given paths'} in "
             f"{', '.join([*paths, *extra_paths])} (ops there: "
             f"{', '.join(known[:40]) or 'none'})")
    return selected


def _click_option(spec):
    """A click option from an options.OptionSpec (same flag, type and help as pytest's)."""
    if spec.kind is bool:
        return click.option(f"--{spec.flag}", spec.field, is_flag=True, default=None,
                            help=spec.help)
    kind = click.Choice(spec.kind) if isinstance(spec.kind, tuple) else spec.kind
    # the help text states the default ("Default: X."), so click does not repeat it
    return click.option(f"--{spec.flag}", spec.field, type=kind, default=spec.default,
                        metavar=spec.metavar, help=spec.help)


def _declare(f, options):
    for option in reversed(options):
        f = option(f)
    return f


def timing_options(f):
    from opbench.config.options import OPTIONS

    return _declare(f, [_click_option(spec) for spec in OPTIONS] + [
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
    ])


def check_options(f):
    """The run options a correctness-only run uses (options.CHECK_OPTIONS), and --json."""
    from opbench.config.options import CHECK_OPTIONS

    return _declare(f, [_click_option(spec) for spec in CHECK_OPTIONS] + [
        click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
                     help="Results file (written after every instance). Default: "
                          "out/opbench-<time>.json."),
    ])


def limit_options(f):
    """--max-instances and --input-budget (options.LIMIT_OPTIONS, shared with pytest's
    --opbench-max-instances / --opbench-input-budget)."""
    from opbench.config.options import LIMIT_OPTIONS

    return _declare(f, [_click_option(spec) for spec in LIMIT_OPTIONS])


def apply_limits(max_instances, input_budget) -> None:
    """The limit options, checked and applied before any case is read; a bad value is a
    usage error naming the option."""
    from opbench.config.options import OptionError, apply_limit_options

    try:
        apply_limit_options(max_instances, input_budget)
    except OptionError as exc:
        raise click.UsageError(str(exc)) from None


def shard_option(f):
    """--shard K/N (declared in options.SHARD_OPTION, shared with pytest's --opbench-shard)."""
    from opbench.config.options import SHARD_OPTION

    return click.option(f"--{SHARD_OPTION.flag}", "shard_text", default=None, metavar="K/N",
                        help=SHARD_OPTION.help)(f)


def parse_shard(text):
    """The shard.Shard of --shard (None without it); a bad value is a usage error, before
    the cases are read."""
    from opbench.config.options import OptionError, parse_shard_option

    try:
        return parse_shard_option(text)
    except OptionError as exc:
        fail(str(exc))


def take_shard(instances, shard, config):
    """The instances of `shard` and the config that records it (both unchanged without a
    shard). An empty shard is a usage error naming how many shards the selection allows."""
    from dataclasses import replace

    from opbench.cases.shard import select, shard_info
    from opbench.config import ShardError

    if shard is None:
        return instances, config
    try:
        chosen = select(instances, shard)
    except ShardError as exc:
        fail(str(exc))
    return chosen, replace(config, shard=shard_info(shard, instances))


def build_config(timing=True, sequential=False, **given):
    """The RunConfig of the options a command line gave (options.RunOptions does the
    defaults and the checks); a bad value is a usage error naming the option.
    sequential: the command stops early on the verdict unless the protocol is fixed."""
    from opbench.config.options import OptionError, RunOptions

    try:
        return RunOptions.from_mapping(given).to_config(timing=timing, sequential=sequential)
    except OptionError as exc:
        fail(str(exc))


def check_results_path(json_path) -> None:
    """Exit 2 before anything is measured when the results file cannot be written."""
    from opbench.results.safe_write import unwritable_reason

    reason = unwritable_reason(json_path)
    if reason:
        fail(f"cannot save results to {json_path}: {reason}")


def signal_name_of(exc: BaseException) -> str:
    from opbench.cli.interrupts import signal_name

    return signal_name(getattr(exc, "signum", 2))


def exit_status(exc: BaseException) -> int:
    from opbench.cli.interrupts import exit_status as status

    return status(exc)


def reclaiming(on_progress):
    """on_progress, taking SIGINT/SIGTERM back first: MindSpore installs its own SIGINT
    handler at its first operator (in this process when it measures here)."""
    def wrapped(*args):
        from opbench.cli.interrupts import reclaim

        reclaim()
        on_progress(*args)
    return wrapped


def pass_printer(quiet: bool):
    from opbench.report.progress import pass_text

    def on_pass(pass_index, passes, measured, decided):
        if not quiet:
            err.print(f"[dim]pass {pass_index}/{passes}: {pass_text(measured, decided)}[/]",
                      highlight=False)
    return on_pass


def execute(instances, config, json_path, markdown_path=None, html_path=None,
            quiet=False, worst_first=False, history_db=None) -> None:
    """Run, save, print, exit with the verdict code. Never shows a traceback for the
    user's mistakes or a missing framework/device."""
    from opbench.report.terminal import render_terminal

    def not_saved(exc):
        # what was measured is shown before the error that it could not be kept
        render_terminal(exc.record, out, worst_first=worst_first)
        fail(str(exc))

    json_path = json_path or default_json_path()
    record = run_and_record(instances, config, json_path, quiet=quiet, on_not_saved=not_saved)
    show_and_exit(record, json_path, markdown_path, html_path, worst_first, history_db)


def run_and_record(instances, config, json_path, *, quiet=False, stage="", injection=None,
                   on_not_saved=None, early_stop=None) -> RunRecord:
    """The one way a command measures (`run`, `compare`, `check`, the gate's first stage):
    open the session (worker processes or this one), run every instance through
    results.recorded_run with progress on stderr, the record saved to json_path after each,
    and close. Returns the record. An unwritable results file, a missing framework or
    device and an unknown API are usage errors before anything is timed; an interrupt says
    what was saved and exits 130/143. When the finished record cannot be saved,
    on_not_saved(ResultsNotSaved) decides (default: a usage error). early_stop: the gate's
    rule that stops decided instances at a worker process's end (runloop/gate_early_stop.py)."""
    from opbench.frameworks import DeviceUnavailable, FrameworkUnavailable
    from opbench.report.progress import RunProgress
    from opbench.runloop.recorded_run import open_session, run
    from opbench.results.safe_write import ResultsNotSaved
    from opbench.runner.session import ApiError
    from opbench.runner.workers import WorkerError

    # under sequential stopping the bar counts the first process's instances; each later
    # process is announced with its decided/undecided counts (RunProgress.on_look)
    progress = RunProgress(err, quiet, stage=stage,
                           passes=(config.passes * config.processes
                                   if config.timing and config.sequential is None else 1))
    check_results_path(json_path)
    try:
        with progress.starting(f"setting up {config.reference_name} and {config.target_name}"
                               + _processes_text(config, " in ")):
            session = open_session(config, injection=injection)
    except (FrameworkUnavailable, DeviceUnavailable, ValueError, WorkerError) as exc:
        fail(str(exc))
    if not quiet:
        err.print(f"[dim]{len(instances)} instances; {config.reference_name} vs "
                  f"{config.target_name} on "
                  f"{config.device}, {config.threads} threads, {config.launch} launches, "
                  + (_processes_text(config, "") or "in this process") +
                  (f", each instance until its verdict is decided (up to "
                   f"{config.sequential.max_processes} processes)" if config.sequential
                   else "") +
                  f"{f', {config.passes} passes' if config.passes > 1 else ''}; results -> "
                  f"{escape(str(json_path))}[/]",
                  highlight=False)
    try:
        with progress:
            record = run(instances, config, json_path=json_path, session=session,
                         on_progress=reclaiming(progress.on_progress),
                         on_pass=progress.on_pass, on_look=progress.on_look,
                         early_stop=early_stop)
    except ApiError as exc:
        fail(f"unknown APIs in the cases (nothing was timed):\n{exc}")
    except KeyboardInterrupt as exc:
        saved = _count_saved(json_path)
        err.print(f"\n[bold]interrupted[/] ({signal_name_of(exc)}): {saved} finished instances "
                  f"saved in {escape(str(json_path))}", highlight=False)
        sys.exit(exit_status(exc))
    except ResultsNotSaved as exc:
        if on_not_saved is None:
            fail(str(exc))
        return on_not_saved(exc)
    finally:
        session.close()
    return save_figures(record, json_path)


def save_figures(record: RunRecord, json_path) -> RunRecord:
    """The finished record with the gap map's figures (causes, fits, roofline:
    gapmap/figures.py) written into its results file, so CI reads them from the JSON. A
    file that cannot take them keeps the record as measured, and says so."""
    from opbench.gapmap.figures import with_figures
    from opbench.results.records import write_results

    record = with_figures(record)
    try:
        write_results(json_path, record)
    except OSError as exc:
        err.print(f"[yellow]the gap map's figures could not be added to "
                  f"{escape(str(json_path))} ({exc}); it holds the measurements[/]",
                  highlight=False)
    return record


def default_json_path(name: str = "opbench") -> str:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return os.path.join("out", f"{name}-{stamp}.json")


def show_and_exit(record, json_path, markdown_path=None, html_path=None, worst_first=False,
                  history_db=None) -> None:
    """The end of every run: the table, the other views, the history, the verdict's exit."""
    from opbench.report.html import render_html
    from opbench.report.markdown import render_markdown
    from opbench.report.terminal import render_terminal

    render_terminal(record, out, worst_first=worst_first)
    if markdown_path:
        Path(markdown_path).write_text(render_markdown(record))
    if html_path:
        Path(html_path).write_text(render_html(record))
    if history_db:
        record_history(history_db, record, json_path)
    err.print(f"[dim]results: {escape(str(json_path))}[/]", highlight=False)
    sys.exit(exit_code_for(record))


def execute_in_workers(instances, given, workers, shard_text, json_path, markdown_path=None,
                       html_path=None, quiet=False, history_db=None) -> None:
    """`opbench run --workers N`: `pytest --benchmark -n N` on the instances in a subprocess
    (xdist_run.py), then the record its controller wrote, shown like any run. A refusal
    (workers that would share cores) is a usage error with pytest's reason."""
    import importlib.util
    import subprocess

    from opbench.cli.xdist_run import pytest_command
    from opbench.results.io import ResultsError
    from opbench.results.records import load_results

    if importlib.util.find_spec("xdist") is None:
        fail("--workers runs pytest-xdist's workers, which is not installed: "
             "pip install 'opbench[xdist]'")
    json_path = str(json_path or default_json_path())
    check_results_path(json_path)
    # a file left from an earlier run must not pass for this run's results
    Path(json_path).unlink(missing_ok=True)
    command = pytest_command(instances, given, workers, json_path, shard_text)
    if not quiet:
        err.print(f"[dim]{len(instances)} instances in {workers} pytest-xdist workers "
                  f"(pytest --benchmark -n {workers}); results -> {escape(json_path)}[/]",
                  highlight=False)
    lines = []
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True) as proc:
        for line in proc.stdout:
            lines.append(line)
            if not quiet:
                err.print(line.rstrip("\n"), highlight=False, markup=False)
    if proc.returncode == 4:       # pytest's usage error: the plugin's refusal, or options
        reasons = [ln.strip() for ln in lines if ln.lstrip().startswith("ERROR")]
        fail("; ".join(reasons) or "".join(lines[-5:]).strip())
    try:
        record = load_results(json_path)
    except ResultsError:
        fail(f"the pytest-xdist run (exit {proc.returncode}) wrote no results:\n"
             + "".join(lines[-20:]).rstrip())
    show_and_exit(record, json_path, markdown_path, html_path, history_db=history_db)


def record_history(db_path: str, record: RunRecord, json_path: str | None,
                   label: str = "run") -> None:
    from opbench.results.history import HistoryError, HistoryStore

    try:
        with HistoryStore(db_path) as store:
            run_id, added = store.record_run(record, source=json_path, label=label)
    except HistoryError as exc:
        fail(str(exc))
    err.print(f"[dim]history: run #{run_id} {'recorded in' if added else 'already in'} "
              f"{escape(db_path)}[/]", highlight=False)


def exit_code_for(record: RunRecord) -> int:
    return exit_code(inst.verdict or Verdict.ERROR for inst in record.instances)


def _count_saved(json_path: str) -> int:
    from opbench.results.io import ResultsError
    from opbench.results.records import load_results

    try:
        return len(load_results(json_path).instances)
    except ResultsError:
        return 0


def _processes_text(config: RunConfig, lead: str) -> str:
    """The worker processes a run starts with, as the progress line says it: under
    sequential stopping one starts first and more only for undecided instances
    (runner/workers.py first_batch), so "3 worker processes" would be untrue."""
    from opbench.runner.workers import first_batch   # lazily, as the rest of the run

    if config.processes <= 1:
        return ""
    starting = len(first_batch(config))
    if starting < config.processes:
        return f"{lead}{starting} worker process at first (more when needed)"
    return f"{lead}{config.processes} worker processes"

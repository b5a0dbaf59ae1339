"""`opbench trace [OPTIONS] -- python script.py ARGS` (wiring only: parse, run, write outputs),
and `opbench trace compare A.json B.json` (trace_compare.py)."""
from __future__ import annotations

import os
import sys
import traceback

from typing import Any, Sequence

import click
from rich.console import Console

from opbench.cli.trace_compare import compare_command
from opbench.model import markers
from opbench.report.console import console_width
from opbench.report.progress import activity
from opbench.trace.chrome import write_chrome_trace
from opbench.trace.emit import emit_cases
from opbench.trace.events import ASYNC, SERIAL
from opbench.trace.record import write_log, write_record
from opbench.trace.record_format import RECORD_FILE
from opbench.trace.summary import SORT_KEYS, summarize
from opbench.trace.table import TEXT_WIDTH, build_table
from opbench.cli.common import fail
from opbench.runner.interpreters import InterpreterError, check_interpreter
from opbench.runner.spawn import spawn_child
from opbench.trace.target import TargetError, named_interpreter, parse_target, run_target
from opbench.trace.tracer import FRAMEWORK_CHOICES, TraceError, Tracer

DEFAULT_OUTPUT_DIR = "opbench-trace"
CHROME_FILE = "trace.json"
LOG_FILE = "trace.log"
CASES_FILE = "cases.yaml"
# Exit status when the traced program raised (what `python script.py` exits with then).
UNCAUGHT_EXCEPTION_STATUS = 1


class _TraceCommand(click.Command):
    """`opbench trace [OPTIONS] -- CMD` runs a program; `opbench trace compare A B` compares
    two records. One name, two forms: the word right after `trace` picks the form (a
    program named like a form still runs as `opbench trace -- compare ...`)."""

    forms = {"compare": compare_command}

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        form = self.forms.get(args[0]) if args else None
        if form is not None:
            return form.make_context(f"{info_name} {args[0]}", list(args[1:]), parent=parent,
                                     **extra)
        return super().make_context(info_name, args, parent=parent, **extra)


def _options_again(nested: bool, mode: str | None, legacy_serial: bool | None, quiet: bool,
                   output_dir: str, framework: str, write_cases: bool, group_by_shape: bool,
                   sort_by: str, limit: int | None) -> list[str]:
    """This command's options as words for the same command in another interpreter."""
    if mode is None and legacy_serial is not None:
        mode = ASYNC if legacy_serial is False else SERIAL
    words = ["-o", os.path.abspath(output_dir), "--framework", framework, "--sort-by", sort_by]
    words += ["--mode", mode] if mode else []
    words += ["--limit", str(limit)] if limit is not None else []
    for flag, on in (("--nested", nested), ("-q", quiet), ("--cases", write_cases),
                     ("--group-by-shape", group_by_shape)):
        words += [flag] if on else []
    return words


def trace_in(python: str, framework: str, options: list[str], words: Sequence[str]) -> int:
    """`opbench trace OPTIONS -- WORDS` run in the interpreter `python`, as `opbench model`
    runs its capture: this opbench first on its path (so it needs the framework traced and
    opbench's dependencies, not an install of opbench), checked first by the runner's one
    interpreter check, started by the runner's one spawn function with this terminal; its
    exit status."""
    frameworks = () if framework == "both" else (framework,)
    try:
        check_interpreter(python, frameworks, this_opbench=True)
    except InterpreterError as exc:
        fail(str(exc))
    process = spawn_child("opbench.cli", ["trace", *options, "--", *words], python,
                          this_opbench=True, stdin=None)
    try:
        return process.wait()
    except BaseException:           # Ctrl-C reaches the child too: leave nothing behind
        process.kill()
        process.wait()
        raise


@click.command("trace", cls=_TraceCommand, context_settings={"ignore_unknown_options": True,
                                          "allow_interspersed_args": False},
               short_help="Run a Python program and time every framework API call it makes.")
@click.option("--nested", is_flag=True,
              help="Also record calls made inside APIs, as their children (default: only the "
                   "outermost API call a program made is timed).")
@click.option("--mode", type=click.Choice([SERIAL, ASYNC]), default=None,
              help="serial: sync after every call (per-call latency); async: host-side "
                   "launch time only. Default: serial.")
# The spelling before --mode (every other command says --mode): still accepted, not shown.
@click.option("--serial/--async", "legacy_serial", default=None, hidden=True)
@click.option("-q", "--quiet", is_flag=True, help="No progress display while the program runs.")
@click.option("-o", "--output", "output_dir", default=DEFAULT_OUTPUT_DIR,
              type=click.Path(file_okay=False),
              help=f"Directory for {CHROME_FILE}, {RECORD_FILE}, {LOG_FILE} (and {CASES_FILE}). "
                   f"Default: {DEFAULT_OUTPUT_DIR}.")
@click.option("--framework", type=click.Choice(FRAMEWORK_CHOICES), default="both",
              help="Which framework to trace; both = whichever the program imports. "
                   "Default: both.")
@click.option("--cases", "write_cases", is_flag=True,
              help=f"Also write {CASES_FILE}: one case per (API, shapes, dtypes) seen, for both "
                   f"frameworks.")
@click.option("--group-by-shape", is_flag=True, help="One table row per API and input shapes.")
@click.option("--sort-by", type=click.Choice(SORT_KEYS), default="total",
              help="Order of the table rows. Default: total.")
@click.option("--limit", type=int, default=None, help="Show only the first N table rows.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
def trace_command(nested: bool, mode: str | None, legacy_serial: bool | None, quiet: bool,
                  output_dir: str, framework: str, write_cases: bool, group_by_shape: bool,
                  sort_by: str, limit: int | None, command: tuple[str, ...]) -> None:
    """Run a Python program unchanged and time every torch / MindSpore API call it makes.

    \b
      opbench trace -- python train.py --epochs 1
      opbench trace --nested --mode async -o out/ -- python -m mypkg.eval
      opbench trace compare torch-out/ mindspore-out/   # two records, API by API
    """
    python = named_interpreter(command)
    if python is not None:
        words = _options_again(nested, mode, legacy_serial, quiet, output_dir, framework,
                               write_cases, group_by_shape, sort_by, limit)
        sys.exit(trace_in(python, framework, words, command[1:]))
    try:
        target = parse_target(command)
    except TargetError as err:
        raise click.UsageError(str(err)) from err
    os.makedirs(output_dir, exist_ok=True)
    if mode is None:
        mode = ASYNC if legacy_serial is False else SERIAL
    tracer = Tracer(nested=nested, sync=mode, framework=framework)
    failure: BaseException | None = None
    status = 0
    try:
        tracer.start()
    except TraceError as err:
        raise click.ClickException(str(err)) from err
    markers.activate(tracer)     # the script's opbench.model.step() marks land in the record
    try:
        with activity(Console(stderr=True, width=console_width(sys.stderr)),
                      f"tracing {target.describe()}", count=lambda: tracer.recorded_calls,
                      quiet=quiet):
            outcome = run_target(target)
        status = outcome.status
        if outcome.message:
            click.echo(outcome.message, err=True)
    except BaseException as err:       # the program's own error: report it after the outputs
        failure, status = err, UNCAUGHT_EXCEPTION_STATUS
    finally:
        markers.deactivate()
        data = tracer.stop()

    if failure is not None:
        traceback.print_exception(type(failure), failure, failure.__traceback__)
        if isinstance(failure, KeyboardInterrupt):
            status = 130                # what a shell reports for Ctrl-C
    rows = summarize(data, group_by_shape=group_by_shape, sort_by=sort_by)
    shown = rows[:limit] if limit is not None else rows
    console = Console()
    if not console.is_terminal:          # piped or captured: don't squeeze into 80 columns
        console = Console(width=TEXT_WIDTH)
    console.print(build_table(data, shown))
    if len(shown) < len(rows):
        console.print(f"(showing {len(shown)} of {len(rows)} rows; --limit)")

    chrome_path = os.path.join(output_dir, CHROME_FILE)
    tracks = write_chrome_trace(data, chrome_path)
    write_record(data, os.path.join(output_dir, RECORD_FILE))
    write_log(data, os.path.join(output_dir, LOG_FILE))
    track_text = ", ".join(f"{track}: {count}" for track, count in tracks.items()) or "no events"
    click.echo(f"traced: {target.describe()}")
    click.echo(f"wrote {chrome_path} (open in https://ui.perfetto.dev or chrome://tracing; "
               f"events per track: {track_text})")
    click.echo(f"wrote {os.path.join(output_dir, RECORD_FILE)} and "
               f"{os.path.join(output_dir, LOG_FILE)}")
    if write_cases:
        report = emit_cases(data, os.path.join(output_dir, CASES_FILE))
        if report.written:
            click.echo(f"wrote {report.path}: {len(report.cases)} cases "
                       f"({len(report.skipped)} call signatures listed as not emitted)")
        else:
            click.echo(f"no cases written: none of the {len(report.skipped)} call signatures "
                       f"seen can become a case (see {RECORD_FILE})")
    sys.stdout.flush()
    if status:
        sys.exit(status)

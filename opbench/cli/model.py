"""`opbench model [OPTIONS] -- python script.py ARGS` (wiring only: options -> measure_model
-> the views and files)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import click
from rich.markup import escape

from opbench.cli.common import err, fail, out
from opbench.config.options import OptionError, parse_duration
from opbench.config.environment_table import load_environments
from opbench.config.sides import Side, SideSpecError, parse_side
from opbench.model.impact.pipeline import (DEFAULT_MAX_PROCESSES, DEFAULT_PROCESSES, FRAMEWORKS,
                                           ModelError, ModelOptions, measure_model)
from opbench.model.impact.project import MODES_APART
from opbench.model.steady import DEFAULT_CAPTURE_STEPS
from opbench.model.affinity.measure import DEFAULT_SUGGEST_PROCESSES
from opbench.model.affinity.run import suggest, suggest_for_step
from opbench.model.impact.processes import split_command
from opbench.model.impact.record import ModelRecord, impact_json
from opbench.report.suggestions import csv_text, render_suggestions_terminal
from opbench.report.model import (DEFAULT_TOP, render_model_html, render_model_markdown,
                                  render_model_terminal)
from opbench.results.io import write_json_atomic

__all__ = ["model_command", "model_sides", "suggest_command"]

DEFAULT_OUTPUT_DIR = "opbench-model"
# The projection was made, but part of it is in doubt: the script failed, a replay process
# failed, or a call's outputs differ between the frameworks.
EXIT_INCOMPLETE = 3


def _duration(ctx: click.Context, param: click.Parameter, value: str) -> float:
    """'90s', '5m', '1h' or plain seconds -> seconds, by the one duration parser
    (config/options.py); 0 (any unit) means none."""
    text = str(value).strip().lower()
    if text.rstrip("smh").strip() in ("0", "0.", "0.0"):
        return 0.0
    try:
        return parse_duration(param.name or "budget", value)
    except OptionError as exc:
        raise click.BadParameter(f"{exc} (or 0: none)") from None


def model_sides(reference: str, target: str, directory: Path) -> tuple[Side, Side]:
    """`--reference`/`--target` as sides, spelled as for `opbench run` (config/sides.py):
    `torch`, `mindspore@envs/ms29/bin/python` or a named environment of `directory`'s
    opbench.toml / pyproject.toml. Raises click.BadParameter saying which and what to do."""
    try:
        environments = load_environments(directory)
        sides = (parse_side(reference, environments), parse_side(target, environments))
    except SideSpecError as exc:
        raise click.BadParameter(str(exc)) from None
    for which, side in zip(("--reference", "--target"), sides):
        if side.framework not in FRAMEWORKS:
            raise click.BadParameter(
                f"{which} {side.framework!r}: a model replays in {' or '.join(FRAMEWORKS)} "
                f"(FRAMEWORK, FRAMEWORK@PYTHON or a named environment)")
    # one side against itself (`--reference torch --target torch`) is an A/A comparison:
    # the target goes by its label with config.sides.AGAIN_SUFFIX
    return sides


# Options end at the command's first word (allow_interspersed_args off: `python -u t.py`
# keeps its -u); an unknown option before it is opbench's to refuse (with
# ignore_unknown_options, `--jsno x -- python t.py` went to the script's interpreter as
# "python option '--jsno' is not supported").
@click.command("model", context_settings={"allow_interspersed_args": False},
               short_help="Which APIs cost a script's model how much of its step time.")
@click.option("--reference", default="torch", metavar="SIDE",
              help="The side the ratio divides by: a framework, FRAMEWORK@PYTHON (its "
                   "replays in that interpreter) or a named environment. Default: torch.")
@click.option("--target", default="mindspore", metavar="SIDE",
              help="The side whose lost time is counted, spelled as --reference (one "
                   "framework on both sides compares two builds of it). Default: "
                   "mindspore.")
@click.option("--processes", type=click.IntRange(1, 20), default=DEFAULT_PROCESSES,
              help=f"Replay processes per framework (interleaved). Default: "
                   f"{DEFAULT_PROCESSES}.")
@click.option("--max-processes", type=click.IntRange(1, 40), default=DEFAULT_MAX_PROCESSES,
              help=f"Replay processes of a framework whose processes ran in modes (one "
                   f"{MODES_APART}x slower than another), planned ones included (at most "
                   f"--processes: none added). Default: {DEFAULT_MAX_PROCESSES}.")
@click.option("--launch", type=click.Choice(["queued", "blocking"]), default=None,
              help="The projected framework's launch mode (default: its own; the traced one "
                   "keeps the script's).")
@click.option("--skip-first-calls", type=click.IntRange(0), default=None,
              help="Take the steady state from this call on instead of finding the repeated "
                   "step.")
@click.option("--capture-steps", type=click.IntRange(0), default=DEFAULT_CAPTURE_STEPS,
              help=f"Steady steps the capture records (after a warm-up step), then it ends "
                   f"the script, found by the step markers or the repeated calls (0: run the "
                   f"whole script). Default: {DEFAULT_CAPTURE_STEPS}.")
@click.option("--run-on", is_flag=True,
              help="After the captured steps, let the script run on untraced instead of "
                   "ending it.")
@click.option("--keep-going", is_flag=True,
              help="When the script fails, replay what it ran before it failed (default: "
                   "say its error and exit 2).")
@click.option("--budget", "budget", default="3m", callback=_duration,
              help="Time for measuring call signatures alone (e.g. 90s, 5m; 0: none): the five "
                   "that lose the most time first, then by traced time. Default: 3m.")
@click.option("--top", type=click.IntRange(1), default=DEFAULT_TOP,
              help=f"APIs shown in the tables. Default: {DEFAULT_TOP}.")
@click.option("-o", "--output", "output_dir", default=DEFAULT_OUTPUT_DIR,
              type=click.Path(file_okay=False),
              help=f"Directory for the captured program and the replay files. Default: "
                   f"{DEFAULT_OUTPUT_DIR}.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Write the model record (schema: opbench schema model).")
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False), default=None,
              help="Write the tables as Markdown.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
              help="Write one offline HTML page with the time-lost chart.")
@click.option("--suggest", is_flag=True,
              help="Also find the calls and call patterns of the step that have an "
                   "equivalent in the script's own framework, check each swap's outputs "
                   "equal and measure what it saves per step (docs/model.md, Suggestions).")
@click.option("--suggest-processes", type=click.IntRange(1, 20),
              default=DEFAULT_SUGGEST_PROCESSES,
              help="Replay processes per suggestion (each times original and swapped step "
                   f"interleaved). Default: {DEFAULT_SUGGEST_PROCESSES}.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False), default=None,
              help="Write the suggestions as CSV (the Ascend affinity CSV's columns first).")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
def model_command(reference: str, target: str, processes: int, max_processes: int,
                  launch: str | None, skip_first_calls: int | None, capture_steps: int,
                  run_on: bool, keep_going: bool, budget: float, top: int,
                  output_dir: str, json_path: str | None, markdown_path: str | None,
                  html_path: str | None, suggest: bool, suggest_processes: int,
                  csv_path: str | None, quiet: bool, command: tuple[str, ...]) -> None:
    """Run a script unchanged under the tracer, keep its steady state, replay its framework
    calls in both frameworks and say which APIs cost the model how much time.

    The script runs in the interpreter the command names (`-- /venv/bin/python train.py`),
    or in this one when it names a script directly; each side's replays run in its own
    interpreter (`--reference mindspore@envs/ms29/bin/python`), else in the script's. Mark
    steps with opbench.model.step() where you can edit the script; otherwise the repeated
    step is found."""
    try:
        reference_side, target_side = model_sides(reference, target, Path.cwd())
    except click.BadParameter as exc:
        fail(exc.message)
    options = ModelOptions(reference=reference_side, target=target_side, processes=processes,
                           max_processes=max(max_processes, processes),
                           launch=launch, skip_first_calls=skip_first_calls,
                           capture_steps=capture_steps or None, run_on=run_on,
                           keep_going=keep_going, isolated_budget_s=budget)

    def progress(message: str) -> None:
        if not quiet:
            err.print(f"[dim]{escape(message)}[/]", highlight=False)

    try:
        impact = measure_model(list(command), options, workdir=Path(output_dir),
                               on_progress=progress)
    except ModelError as exc:
        fail(str(exc))
    written = impact_json(impact)
    if suggest or csv_path:
        rows = suggest_for_step(impact.program, impact.region, split_command(list(command))[0],
                                Path(output_dir), suggest_processes, progress)
        written["suggestions"] = [row.to_json() for row in rows]
        if csv_path:
            Path(csv_path).write_text(csv_text(rows), encoding="utf-8")
    if json_path:
        write_json_atomic(json_path, {"model": written})
    record = ModelRecord.from_json(written)
    if markdown_path:
        Path(markdown_path).write_text(render_model_markdown(record, top), encoding="utf-8")
    if html_path:
        Path(html_path).write_text(render_model_html(record, top), encoding="utf-8")
    render_model_terminal(record, out, top)
    for path in (json_path, markdown_path, html_path, csv_path):
        if path:
            err.print(f"[dim]wrote {escape(os.fspath(path))}[/]", highlight=False)
    incomplete = record.script.status != 0 or record.errors or record.mismatches
    sys.exit(EXIT_INCOMPLETE if incomplete else 0)



@click.command("suggest", context_settings={"allow_interspersed_args": False},
               short_help="Measured same-framework swaps for a script's step.")
@click.option("--processes", type=click.IntRange(1, 20), default=DEFAULT_SUGGEST_PROCESSES,
              help="Replay processes per suggestion (each times original and swapped step "
                   f"interleaved). Default: {DEFAULT_SUGGEST_PROCESSES}.")
@click.option("--skip-first-calls", type=click.IntRange(0), default=None,
              help="The steady steps start at this call (default: marked or found).")
@click.option("-o", "--output", "output_dir", default=DEFAULT_OUTPUT_DIR,
              help="Directory for the capture and the replay processes' files. Default: "
                   f"{DEFAULT_OUTPUT_DIR}.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Write {\"suggestions\": [...]} (the model record's rows).")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False), default=None,
              help="Write the suggestions as CSV (the Ascend affinity CSV's columns first).")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
def suggest_command(processes: int, skip_first_calls: int | None, output_dir: str,
                    json_path: str | None, csv_path: str | None, quiet: bool,
                    command: tuple[str, ...]) -> None:
    """`opbench model --suggest` without the cross-framework projection: run a script
    under the capture, find the calls and call patterns of its steady step that have an
    equivalent in its own framework, check each swap's outputs equal and measure what it
    saves per step (original and swapped step interleaved in fresh processes)."""
    def progress(message: str) -> None:
        if not quiet:
            err.print(f"[dim]{escape(message)}[/]", highlight=False)

    try:
        rows = suggest(list(command), processes, skip_first_calls, Path(output_dir), progress)
    except ModelError as exc:
        fail(str(exc))
    if json_path:
        write_json_atomic(json_path, {"suggestions": [row.to_json() for row in rows]})
    if csv_path:
        Path(csv_path).write_text(csv_text(rows), encoding="utf-8")
    render_suggestions_terminal(rows, out)
    for path in (json_path, csv_path):
        if path:
            err.print(f"[dim]wrote {escape(os.fspath(path))}[/]", highlight=False)

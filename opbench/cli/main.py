"""The `opbench` command: argument parsing and wiring only (shared pieces: common.py)."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Sequence

import click

from opbench.cli.common import (
                                apply_limits,
                                build_config,
                                check_options,
                                default_cases_path,
                                execute,
                                execute_in_workers,
                                fail,
                                limit_options,
                                load_instances,
                                out,
                                parse_shard,
                                shard_option,
                                take_shard,
                                timing_options,
                                )
from opbench.cli.bisect import bisect_command
from opbench.cli.env import env_command
from opbench.cli.gate import gate_command, history_command
from opbench.cli.gate_noise import noise_command, replay_alias_command, resample_command
from opbench.cli.merge import merge_command
from opbench.cli.model import model_command, suggest_command
from opbench.cli.profile import profile_command
from opbench.cli.scan import scan_command
from opbench.cli.selection_options import selection_options
from opbench.cli.trace import trace_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="opbench", prog_name="opbench")
@limit_options
def cli(max_instances, input_budget) -> None:
    """Which operators are slower in MindSpore than in PyTorch, by how much, with what
    confidence. Ratio = reference time / target time (below 1: the target is slower)."""
    # Through the environment, so the gate's fresh second-stage process has them too.
    apply_limits(max_instances, input_budget)


@cli.command(short_help="Time every selected case instance in both frameworks.")
@click.argument("paths", nargs=-1, type=click.Path())
@selection_options
@click.option("-q", "--quiet", is_flag=True, help="No progress display.")
@click.option("--for-gate", is_flag=True,
              help="Measure with the regression gate's settings (blocking launches, 1 thread, "
                   "40 rounds over 4 processes x 5 passes, 6 s budget; options given here "
                   "win): the way to record a baseline for `opbench gate`.")
@click.option("--aa", is_flag=True,
              help="A/A: the target side against itself, each in its own worker processes: "
                   "how many this selection flags by chance (docs/measurement.md).")
@shard_option
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Measure in N pytest-xdist workers at once (pytest --benchmark -n N), each "
                   "on CPU cores - or a device - of its own, with threads = its cores; "
                   "refused when the workers would share cores. Needs opbench[xdist].")
@timing_options
def run(paths, keyword, ops, tags, quiet, for_gate, aa, shard_text, workers, json_path,
        markdown_path, html_path, history_db, **timing):
    """Time every selected case instance in both frameworks (PATHS: case files or
    directories; default: the shipped case library, or $OPBENCH_CASES)."""
    if for_gate:
        from opbench.gate.settings import GATE_RUN_SETTINGS

        timing = GATE_RUN_SETTINGS.fill(timing)
    if aa:
        source = click.get_current_context().get_parameter_source("reference")
        if source is not click.core.ParameterSource.DEFAULT or workers:
            fail("--aa measures the target side against itself: without --reference and "
                 "--workers")
        timing["reference"] = timing.get("target") or "mindspore"
    # bad options fail before the cases are read; the gate's settings and pytest-xdist
    # workers measure the fixed protocol
    config = build_config(sequential=not (for_gate or workers), **timing)
    shard = parse_shard(shard_text)
    whole = load_instances(paths or [default_cases_path()], ops, keyword, tags)
    instances, config = take_shard(whole, shard, config)
    if workers:
        # the plugin takes the shard's slice itself, from the whole selection
        execute_in_workers(whole, timing, workers, shard and str(shard), json_path,
                           markdown_path, html_path, quiet, history_db)
    else:
        execute(instances, config, json_path, markdown_path, html_path, quiet,
                history_db=history_db)


@cli.command(short_help="Time the named operators' cases in both frameworks, one table.")
@click.argument("operators", nargs=-1)
@click.option("--cases", "cases_dirs", multiple=True, type=click.Path(exists=True),
              help="Also load the cases in this file or directory (repeatable); a case named "
                   "like a shipped one replaces it. Default: the shipped library only.")
@selection_options
@click.option("-q", "--quiet", is_flag=True, help="No progress display.")
@timing_options
def compare(operators, cases_dirs, keyword, ops, tags, quiet, json_path, markdown_path,
            html_path, history_db, **timing):
    """Every case instance of the operators OPERATORS (shipped, plus --cases), both
    frameworks, one table."""
    wanted = (*operators, *ops)
    if not (wanted or keyword or tags):
        fail("name the operators to compare (opbench compare reshape softmax), or select "
             "with -k / --op / --tag; `opbench list` shows what there is")
    config = build_config(sequential=True, **timing)
    instances = load_instances([default_cases_path()], wanted, keyword, tags,
                               extra_paths=cases_dirs)
    execute(instances, config, json_path, markdown_path, html_path, quiet,
            history_db=history_db)


@cli.command(short_help="Check that both frameworks' outputs agree, without timing.")
@click.argument("paths", nargs=-1, type=click.Path())
@selection_options
@check_options
@click.option("-q", "--quiet", is_flag=True, help="No progress display.")
def check(paths, keyword, ops, tags, json_path, quiet, **options):
    """Correctness only: run each instance once in both frameworks and compare outputs
    (and gradients for backward cases). No timing."""
    config = build_config(timing=False, **options)   # bad options fail before the cases are read
    instances = load_instances(paths or [default_cases_path()], ops, keyword, tags)
    execute(instances, config, json_path, quiet=quiet)


@cli.command(name="list",
             short_help="Show the case library's coverage: operators, instances, dtypes.")
@click.argument("paths", nargs=-1, type=click.Path())
@selection_options
@click.option("--instances", "show_instances", is_flag=True, help="List every instance id.")
def list_cases(paths, keyword, ops, tags, show_instances):
    """Coverage of the case library: operators, instances, tags, backward, dtypes."""
    from opbench.cases.coverage import coverage_table, summarize_coverage

    instances = load_instances(paths or [default_cases_path()], ops, keyword, tags)
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


@cli.command(short_help="Show a saved results or model file (and write Markdown / HTML).")
@click.argument("results", type=click.Path(exists=True, dir_okay=False))
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False), default=None,
              help="Also write a Markdown summary to this file.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
              help="Also write an HTML report to this file.")
@click.option("--worst-first", is_flag=True,
              help="Order the rows by verdict and ratio, worst first. Default: run order.")
@click.option("--v3", "v3_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the PyTorch benchmark dashboard's v3 JSON lines to this file.")
def report(results, markdown_path, html_path, worst_first, v3_path):
    """Show a saved results file (and write Markdown / HTML). A model record (`opbench
    model --json`) shows as `opbench model` showed it, its APIs by time lost."""
    from opbench.model.impact.record import is_model_file

    if is_model_file(results):
        _report_model(results, markdown_path, html_path)
        return
    from opbench.report.html import render_html
    from opbench.report.markdown import render_markdown
    from opbench.report.terminal import render_terminal
    from opbench.results.io import ResultsError
    from opbench.results.records import load_results

    try:
        record = load_results(results)
    except ResultsError as exc:
        fail(str(exc))
    render_terminal(record, out, worst_first=worst_first)
    if markdown_path:
        Path(markdown_path).write_text(render_markdown(record))
    if html_path:
        Path(html_path).write_text(render_html(record))
    if v3_path:
        from opbench.report.dashboard_v3 import run_records, write_json_lines

        write_json_lines(run_records(record), v3_path)


def _report_model(path: str, markdown_path: str | None, html_path: str | None) -> None:
    from opbench.model.impact.record import ModelRecordError, load_model_record
    from opbench.report.model import (render_model_html, render_model_markdown,
                                      render_model_terminal)

    try:
        record = load_model_record(path)
    except ModelRecordError as exc:
        fail(str(exc))
    render_model_terminal(record, out)
    if markdown_path:
        Path(markdown_path).write_text(render_model_markdown(record), encoding="utf-8")
    if html_path:
        Path(html_path).write_text(render_model_html(record), encoding="utf-8")


@cli.command(short_help="Print the JSON Schema of case, results or model files.")
@click.argument("which", type=click.Choice(["case", "results", "model"]), default="case")
def schema(which):
    """Print the JSON Schema of case files (for editors), of results files or of the model
    records `opbench model --json` writes."""
    from opbench.cases.case_files import load_schema
    from opbench.model.impact.record import model_schema
    from opbench.results.io import results_schema

    found = {"case": load_schema, "results": results_schema, "model": model_schema}[which]()
    click.echo(json.dumps(found, indent=2))


# The instruments and the gate keep their commands next to their code.
for _command in (trace_command, scan_command, gate_command, noise_command, resample_command,
                 replay_alias_command, history_command, merge_command, model_command,
                 suggest_command, profile_command,
                 env_command, bisect_command):
    cli.add_command(_command)


def main(argv: Sequence[str] | None = None) -> None:
    from opbench.cli.common import err, exit_status, signal_name_of
    from opbench.cli.interrupts import install

    # First thing: a Ctrl-C or SIGTERM while loading or starting the frameworks exits
    # 130/143 with a line saying so (click alone turns Ctrl-C into "Aborted!", exit 1).
    install()
    try:
        code = cli.main(args=list(argv) if argv is not None else None, prog_name="opbench",
                        standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt) as exc:
        cause = exc if isinstance(exc, KeyboardInterrupt) else (exc.__context__ or exc)
        err.print(f"\n[bold]interrupted[/] ({signal_name_of(cause)}) before any result was "
                  f"measured", highlight=False)
        sys.exit(exit_status(cause))
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()

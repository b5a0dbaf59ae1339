"""`opbench scan PATH...`: list the framework calls a code base makes, statically (and, with
--affinity, the calls and patterns that have a cheaper equivalent in the same framework).

Argument parsing and wiring only; the work is in scanner / annotate / output.
"""
from __future__ import annotations

import sys
import time
from contextlib import nullcontext
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from opbench.scan.affinity import find_affinity
from opbench.scan.annotate import annotate
from opbench.scan.coverage import default_cases_dir, load_covered_apis
from opbench.scan.output import (
                                 GROUP_API,
                                 GROUP_AUTO,
                                 GROUP_CALL,
                                 affinity_summary_line,
                                 render_affinity_table,
                                 render_errors,
                                 render_table,
                                 summary_lines,
                                 write_affinity_csv,
                                 write_affinity_json,
                                 write_csv,
                                 write_json,
                                 )
from opbench.scan.results_join import ResultsIndex
from opbench.scan.rows import summarize
from opbench.scan.scanner import discover_files, scan_paths

# A progress bar is drawn when stderr is a terminal, and also on trees this large even when
# it is not (CI logs then show that a long scan is alive).
PROGRESS_MIN_FILES_OFF_TTY = 500

# Redraw the bar at most this often: a redraw per file would cost more than scanning small
# files.
PROGRESS_REFRESH_S = 0.1

# Width of the table when stdout is not a terminal (a file or a pipe).
TABLE_WIDTH_OFF_TTY = 200

FORMATS = ("table", "csv", "json")
FRAMEWORK_CHOICES = ("torch", "mindspore", "both")
SUFFIX_FORMATS = {".csv": "csv", ".json": "json"}


def _load_mapping(path: Path | None, warn):
    from opbench.frameworks.apimap import load_mapping
    try:
        return load_mapping(path) if path is not None else load_mapping()
    except Exception as exc:   # an unreadable mapping must not stop a scan
        if path is not None:
            raise click.ClickException(f"cannot load API mapping {path}: {exc}") from exc
        warn(f"API mapping unavailable ({type(exc).__name__}: {exc}); "
             "mapped_api/mapping_status left unknown")
        return None


def _load_coverage(cases_dir: Path | None, warn):
    explicit = cases_dir is not None
    cases_dir = cases_dir if explicit else default_cases_dir()
    if cases_dir is None:
        return None
    try:
        return load_covered_apis(cases_dir)
    except Exception as exc:   # CaseError, or the cases module not being available
        if explicit:
            raise click.ClickException(f"cannot load cases from {cases_dir}: {exc}") from exc
        warn(f"case library {cases_dir} unavailable ({exc}); the covered column is left empty")
        return None


def _load_results(paths: tuple[Path, ...]) -> ResultsIndex | None:
    if not paths:
        return None
    from opbench.results.io import ResultsError

    try:
        return ResultsIndex.load(paths)
    except ResultsError as exc:     # names the file, and the key when one is wrong
        raise click.ClickException(f"cannot read results: {exc}") from exc


def _progress(stderr: Console, total_files: int):
    if not (stderr.is_terminal or total_files >= PROGRESS_MIN_FILES_OFF_TTY):
        return nullcontext(None)
    # auto_refresh off: no refresh thread runs while the scanner forks its workers; the bar
    # is redrawn from the progress callback instead.
    return Progress(TextColumn("scanning"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=stderr, transient=True, auto_refresh=False)


def _progress_updater(progress, total_files: int):
    """The scan's progress callback for a rich Progress, or None without one. Redraws at
    most every PROGRESS_REFRESH_S: the scan reports every file."""
    if progress is None:
        return None
    task = progress.add_task("scan", total=total_files)
    last_refresh_s = [0.0]

    def on_progress(done: int, total: int) -> None:
        now_s = time.monotonic()
        redraw = done == total or now_s - last_refresh_s[0] >= PROGRESS_REFRESH_S
        progress.update(task, completed=done, refresh=redraw)
        if redraw:
            last_refresh_s[0] = now_s
    return on_progress


@click.command("scan",
               short_help="List the torch / MindSpore calls in source files, statically.")
@click.argument("paths", nargs=-1, required=True,
                type=click.Path(exists=True, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write here instead of stdout (format from the suffix unless --format).")
@click.option("--format", "output_format", type=click.Choice(FORMATS),
              help="table (default on stdout), csv or json: one row per call.")
@click.option("--results", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              multiple=True, help="Results JSON of `opbench run` to join ratios from "
                                  "(repeatable; later files win for the same instance).")
@click.option("--cases", "cases_dir", type=click.Path(exists=True, path_type=Path),
              help="Case library to mark covered APIs (default: the shipped cases/).")
@click.option("--mapping", "mapping_path", type=click.Path(exists=True, dir_okay=False,
                                                           path_type=Path),
              help="API mapping YAML (default: the shipped one).")
@click.option("--framework", type=click.Choice(FRAMEWORK_CHOICES), default="both",
              help="Keep only calls of this framework. Default: both.")
@click.option("--group", type=click.Choice((GROUP_AUTO, GROUP_CALL, GROUP_API)),
              default=GROUP_AUTO,
              help="Table only: a line per call, per distinct API, or per call when few. "
                   f"Default: {GROUP_AUTO}.")
@click.option("--jobs", "-j", type=click.IntRange(min=1),
              help="Worker processes (default: one per available CPU).")
@click.option("--affinity", is_flag=True,
              help="List calls and patterns with a cheaper equivalent in the same framework "
                   "instead (static candidates, not measured).")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path),
              help="With --affinity: also write the candidates as CSV here (the Ascend "
                   "affinity columns first).")
@click.option("--json", "as_json", is_flag=True,
              help="With --affinity: JSON rows instead of the table (same as --format json).")
def scan_command(paths, output, output_format, results, cases_dir, mapping_path, framework,
                 group, jobs, affinity, csv_path, as_json):
    """List the torch / MindSpore calls in PATHS (files or directories), with the API each
    maps to, whether a case covers it and, with --results, its measured ratio. With
    --affinity, list the calls and data-flow patterns that have a cheaper equivalent in the
    same framework. The code is parsed, never imported or run."""
    stderr = Console(stderr=True)

    def warn(message: str) -> None:
        stderr.print(f"warning: {message}", style="yellow", highlight=False, markup=False,
                     soft_wrap=True)

    if as_json:
        if output_format not in (None, "json"):
            raise click.UsageError("--json and --format " + output_format + " disagree; "
                                   "give one of them")
        output_format = "json"
    if output_format is None:
        output_format = SUFFIX_FORMATS.get(output.suffix.lower(), "table") if output else "table"
    if affinity:
        given = [name for name, value in (("--results", results), ("--cases", cases_dir),
                                          ("--mapping", mapping_path)) if value]
        if given:
            raise click.UsageError(f"--affinity does not use {', '.join(given)}: drop it, or "
                                   "run the plain scan for the API mapping and ratios")
        _affinity(paths, output, output_format, csv_path, framework, stderr)
        return
    if csv_path is not None or as_json:
        raise click.UsageError("--csv and --json go with --affinity; the plain scan writes "
                               "CSV or JSON with -o FILE.csv / --format json")

    files = discover_files(paths)
    if not files:
        raise click.ClickException("no Python files found under " +
                                   ", ".join(str(p) for p in paths))
    # Load everything that can fail on user input before the (possibly long) scan.
    mapping = _load_mapping(mapping_path, warn)
    covered = _load_coverage(cases_dir, warn)
    results_index = _load_results(results)

    with _progress(stderr, len(files)) as progress:
        result = scan_paths(paths, files=files, jobs=jobs,
                            on_progress=_progress_updater(progress, len(files)))

    rows = result.rows
    if framework != "both":
        rows = tuple(r for r in rows if r.framework == framework)
    rows = annotate(rows, mapping=mapping, covered=covered, results=results_index)
    summary = summarize(result, rows, with_cases=covered is not None,
                        with_results=results_index is not None)

    stream = open(output, "w", encoding="utf-8", newline="") if output else None
    try:
        if output_format == "table":
            target = Console(file=stream) if stream else Console()
            if not target.is_terminal:
                # Piped or written to a file: no terminal width to honour, so do not fold
                # every API name at 80 columns.
                target = Console(file=stream or sys.stdout, width=TABLE_WIDTH_OFF_TTY)
            render_table(target, rows, summary, result.errors, group=group,
                         with_cases=covered is not None,
                         with_results=results_index is not None)
            if stream is None:
                return
        elif output_format == "csv":
            write_csv(rows, stream or sys.stdout)
        else:
            write_json(rows, summary, result.errors, stream or sys.stdout)
    finally:
        if stream is not None:
            stream.close()
    # Data went to a file or stdout: the human part goes to stderr.
    if output_format != "table":
        render_errors(stderr, result.errors)
    for line in summary_lines(summary):
        stderr.print(line, highlight=False, markup=False, soft_wrap=True)
    if output:
        stderr.print(f"wrote {output}", highlight=False, markup=False, soft_wrap=True)


def _affinity(paths, output, output_format, csv_path, framework, stderr: Console) -> None:
    """`opbench scan --affinity`: the static affinity candidates, as a table, CSV or JSON."""
    if not discover_files(paths):
        raise click.ClickException("no Python files found under " +
                                   ", ".join(str(p) for p in paths))
    result = find_affinity(paths)
    hits = [h for h in result.hits if framework in ("both", h.framework)]
    if csv_path is not None:
        with open(csv_path, "w", encoding="utf-8", newline="") as stream:
            write_affinity_csv(hits, stream)
    stream = open(output, "w", encoding="utf-8", newline="") if output else None
    try:
        if output_format == "table":
            target = Console(file=stream) if stream else Console()
            if not target.is_terminal:
                target = Console(file=stream or sys.stdout, width=TABLE_WIDTH_OFF_TTY)
            render_affinity_table(target, hits, result.files_scanned, result.errors)
        elif output_format == "csv":
            write_affinity_csv(hits, stream or sys.stdout)
        else:
            write_affinity_json(hits, result.files_scanned, result.errors, stream or sys.stdout)
    finally:
        if stream is not None:
            stream.close()
    if output_format != "table":
        render_errors(stderr, result.errors)
        stderr.print(affinity_summary_line(hits, result.files_scanned), highlight=False,
                     markup=False, soft_wrap=True)
    for written in (csv_path, output):
        if written is not None:
            stderr.print(f"wrote {written}", highlight=False, markup=False, soft_wrap=True)

"""`opbench trace compare A.json B.json` (wiring only: options -> compare_traces -> views).

Exit status: 0 compared, every joined API called as often in A as in B; 3 compared, and
some joined API's call counts differ (usually a port bug; the table flags it); 2 a record
or the mapping cannot be read, or bad options (the message names the file and the key)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from rich.console import Console

from opbench.frameworks.apimap import MappingError, load_mapping
from opbench.report.console import console_width
from opbench.report.trace_compare import render_comparison_markdown, render_comparison_terminal
from opbench.results.io import write_json_atomic
from opbench.trace.compare import SORT_KEYS, comparison_json, compare_traces
from opbench.trace.record_format import RECORD_FILE
from opbench.trace.record_read import TraceRecordError
from opbench.verdicts.rules import EXIT_USAGE

__all__ = ["compare_command", "EXIT_CALLS_DIFFER"]

# Compared, and a joined API is called a different number of times in the two traces.
EXIT_CALLS_DIFFER = 3


class UnreadableInput(click.ClickException):
    """A record or the mapping cannot be read: the message names the file (and the key)."""
    exit_code = EXIT_USAGE


@click.command("compare", short_help="Join two trace records API by API (a script and its "
                                     "port).")
@click.argument("trace_a", metavar="A.json", type=click.Path(dir_okay=True))
@click.argument("trace_b", metavar="B.json", type=click.Path(dir_okay=True))
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Write the comparison as JSON (format opbench-trace-compare).")
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False), default=None,
              help="Write the tables as Markdown.")
@click.option("--sort-by", type=click.Choice(SORT_KEYS), default="total",
              help="Order of the joined APIs: total (A + B), delta (B - A), calls, name. "
                   "Default: total.")
@click.option("--top", type=click.IntRange(1), default=None,
              help="Show only the first N joined APIs in the terminal (files hold all).")
@click.option("--mapping", "mapping_path", type=click.Path(dir_okay=False), default=None,
              help="An API mapping YAML file instead of the shipped one.")
def compare_command(trace_a: str, trace_b: str, json_path: str | None,
                    markdown_path: str | None, sort_by: str, top: int | None,
                    mapping_path: str | None) -> None:
    """Join two trace records (DIR/trace_record.json of `opbench trace -o DIR -- ...`), a
    torch script and its MindSpore port or two traces of one framework, API by API through
    the API mapping: calls, total and per-call time on each side, ratio A/B, the calls of
    either side with no counterpart, and joined APIs whose call counts differ.

    Exit status: 0 compared; 3 compared, and call counts differ for a joined API; 2 a file
    cannot be read or an option is wrong."""
    try:
        mapping = load_mapping(mapping_path) if mapping_path else None
    except (MappingError, OSError) as exc:
        raise UnreadableInput(f"--mapping {mapping_path}: {exc}") from None
    try:
        comparison = compare_traces(_record_path(trace_a), _record_path(trace_b),
                                    mapping=mapping, sort_by=sort_by)
    except TraceRecordError as exc:
        raise UnreadableInput(str(exc)) from None
    if json_path:
        write_json_atomic(json_path, comparison_json(comparison))
    if markdown_path:
        Path(markdown_path).write_text(render_comparison_markdown(comparison), encoding="utf-8")
    render_comparison_terminal(comparison, Console(width=console_width(sys.stdout)), top)
    for path in (json_path, markdown_path):
        if path:
            click.echo(f"wrote {os.fspath(path)}", err=True)
    sys.exit(EXIT_CALLS_DIFFER if comparison.calls_differ else 0)


def _record_path(given: str) -> str:
    """A trace's output directory stands for the record in it."""
    inside = os.path.join(given, RECORD_FILE)
    return inside if os.path.isdir(given) and os.path.exists(inside) else given


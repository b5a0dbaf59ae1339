"""The per-API table (rich), and the lines every output repeats about how times were taken."""
from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from opbench.trace.events import TIMING_NOTES
from opbench.trace.recorder import TraceData
from opbench.trace.summary import SummaryRow, summarize
from opbench.trace.units import format_ns

# Wide enough for long API names and shape lists without wrapping every row.
TEXT_WIDTH = 160


def header_lines(data: TraceData) -> list[str]:
    """How to read the times: timing mode, nesting, tracer overhead, dropped events, notes."""
    lines = [f"timing: {TIMING_NOTES[data.timing]}",
             "nested: " + ("on: calls made inside an API are recorded as its children "
                           "(a parent's time includes them; 'self' excludes them)"
                           if data.nested else
                           "off: only the outermost API call is timed")]
    for overhead in data.overheads:
        lines.append(f"tracer overhead ({overhead.framework}): "
                     f"{format_ns(overhead.per_call_ns)} per call (calibrated on "
                     f"{overhead.probe})")
    if data.recorded_calls:
        lines.append(f"tracer bookkeeping measured on every recorded call: median "
                     f"{format_ns(data.bookkeeping_median_ns)}, mean "
                     f"{format_ns(data.bookkeeping_ns_per_call)} (the mean includes rare "
                     f"pauses: garbage collections, lost CPU)")
    if data.dropped_events:
        lines.append(f"events: {data.dropped_events} events past the cap were not kept for the "
                     f"trace file and log (the table counts them)")
    lines.extend(data.notes)
    return lines


def build_table(data: TraceData, rows: list[SummaryRow]) -> Table:
    grouped = any(row.inputs is not None for row in rows)
    table = Table(title=f"opbench trace ({data.timing} timing)", title_justify="left",
                  caption="\n".join(header_lines(data)), caption_justify="left")
    table.add_column("framework")
    table.add_column("API", overflow="fold")
    if grouped:
        table.add_column("inputs", overflow="fold")
    table.add_column("calls", justify="right")
    for name in ("total", *(("self",) if data.nested else ()), "mean", "min", "max"):
        table.add_column(name, justify="right")
    table.add_column("share", justify="right")
    for row in rows:
        calls = f"{row.calls}" + (f" ({row.failed} failed)" if row.failed else "")
        cells = [row.framework, row.api, *((row.inputs or "",) if grouped else ()), calls,
                 format_ns(row.total_ns), *((format_ns(row.self_ns),) if data.nested else ()),
                 format_ns(row.mean_ns), format_ns(row.min_ns), format_ns(row.max_ns),
                 f"{row.share:.1%}"]
        table.add_row(*cells)
    if not rows:
        table.add_row("-", "(no framework API calls were traced)", *[""] * (len(table.columns) - 2))
    return table


def table_text(data: TraceData, *, sort_by: str = "total", group_by_shape: bool = False,
               limit: int | None = None, width: int = TEXT_WIDTH) -> str:
    rows = summarize(data, group_by_shape=group_by_shape, sort_by=sort_by)
    if limit is not None:
        rows = rows[:limit]
    buffer = io.StringIO()
    Console(file=buffer, width=width, no_color=True, highlight=False,
            force_terminal=False).print(build_table(data, rows))
    return buffer.getvalue()

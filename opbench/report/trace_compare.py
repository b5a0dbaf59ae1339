"""Views of a trace comparison (opbench/trace/compare.py TraceComparison): which APIs a
script and its port call, how often and how long, and the calls either side has alone.
Terminal (rich) and Markdown; the JSON is compare.comparison_json."""
from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from opbench.trace.compare import JoinedRow, TraceComparison, TraceInfo, UnmatchedRow
from opbench.trace.units import format_ns

__all__ = ["comparison_lines", "render_comparison_terminal", "render_comparison_markdown"]


def _time(ns: float | None) -> str:
    return "-" if ns is None else format_ns(ns)


def _signed(ns: int) -> str:
    return ("-" if ns < 0 else "+") + format_ns(abs(ns))


def _trace_line(side: str, trace: TraceInfo, joined_ns: int) -> str:
    versions = ", ".join(f"{fw} {version}" for fw, version in trace.versions) or "no framework"
    share = f"{joined_ns / trace.api_ns:.0%}" if trace.api_ns else "-"
    return (f"{side}: {trace.path} ({versions}; {trace.timing} timing; {trace.region}): "
            f"{trace.calls} calls, {_time(trace.api_ns)} in APIs, {share} of it joined")


def comparison_lines(c: TraceComparison) -> list[str]:
    """What every view says before the table: the two traces, the totals, the flags."""
    lines = [_trace_line("A", c.a, c.joined_ns("a")), _trace_line("B", c.b, c.joined_ns("b"))]
    lines.append(f"{len(c.rows)} APIs joined; ratio = A per call / B per call (below 1: B's "
                 f"calls are slower); unmatched: {len(c.unmatched_of('a'))} APIs only in A, "
                 f"{len(c.unmatched_of('b'))} only in B")
    differ = c.calls_differ
    if differ:
        lines.append(f"CALL COUNTS DIFFER for {len(differ)} joined APIs (usually a port bug): "
                     + "; ".join(f"{r.operation} {r.a.calls} in A, {r.b.calls} in B"
                                 for r in differ))
    else:
        lines.append("call counts: equal for every joined API")
    lines.extend(c.notes)
    return lines


_HEADERS = ["API in A", "API in B", "by", "calls A", "calls B", "total A", "total B",
            "per call A", "per call B", "ratio", "B - A"]


def _cells(row: JoinedRow) -> list[str]:
    calls_b = f"{row.b.calls}" + (" (differ)" if row.calls_differ else "")
    return [", ".join(row.a.apis), ", ".join(row.b.apis), row.joined_by, str(row.a.calls),
            calls_b, _time(row.a.total_ns), _time(row.b.total_ns), _time(row.a.per_call_ns),
            _time(row.b.per_call_ns), "-" if row.ratio is None else f"{row.ratio:.3g}",
            _signed(row.delta_ns)]


def _signature_lines(row: JoinedRow) -> list[str]:
    """Signatures that did not join, or joined with different call counts."""
    lines = []
    for s in row.signatures:
        if s.a_calls and s.b_calls and s.a_calls == s.b_calls:
            continue
        shown = s.inputs if s.b_inputs is None else f"{s.inputs} | B: {s.b_inputs}"
        lines.append(f"  {row.operation} ({shown}): {s.a_calls} calls in A, {s.b_calls} in B")
    return lines


_UNMATCHED_HEADERS = ["only in", "API", "calls", "total", "share", "why"]


def _unmatched_cells(u: UnmatchedRow) -> list[str]:
    return [u.side.upper(), u.api, str(u.calls), _time(u.total_ns), f"{u.share:.1%}", u.reason]


def render_comparison_terminal(c: TraceComparison, console: Console,
                               top: int | None = None) -> None:
    for line in comparison_lines(c):
        console.print(Text(line))
    table = Table(box=box.SIMPLE_HEAD, header_style="bold", title="joined APIs",
                  title_justify="left")
    for n, header in enumerate(_HEADERS):
        table.add_column(header, justify="left" if n < 3 else "right",
                         overflow="fold" if n < 2 else "ellipsis")
    rows = c.rows[:top] if top else c.rows
    for row in rows:
        table.add_row(*_cells(row), style="bold red" if row.calls_differ else None)
    console.print(table)
    if len(rows) < len(c.rows):
        console.print(Text(f"{len(c.rows) - len(rows)} more joined APIs in the JSON "
                           f"(--top to show more)", style="dim"))
    for row in c.rows:
        for line in _signature_lines(row):
            console.print(Text(line, style="dim"))
    if c.unmatched:
        unmatched = Table(box=box.SIMPLE_HEAD, header_style="bold",
                          title="calls with no counterpart", title_justify="left")
        for n, header in enumerate(_UNMATCHED_HEADERS):
            unmatched.add_column(header, justify="right" if 2 <= n <= 4 else "left",
                                 overflow="fold")
        for u in c.unmatched:
            unmatched.add_row(*_unmatched_cells(u))
        console.print(unmatched)


def _markdown_table(headers: list[str], rows: list[list[str]], code_columns: set[int],
                    align: str) -> list[str]:
    """align: one letter per column, l or r."""
    out = ["| " + " | ".join(headers) + " |",
           "|" + "".join("---:|" if a == "r" else "---|" for a in align)]
    for cells in rows:
        shown = [f"`{cell}`" if n in code_columns and cell else cell
                 for n, cell in enumerate(cells)]
        out.append("| " + " | ".join(shown) + " |")
    return out


def render_comparison_markdown(c: TraceComparison) -> str:
    out = ["### opbench trace compare", ""]
    out += [f"- {line}" for line in comparison_lines(c)] + [""]
    out += _markdown_table(_HEADERS, [_cells(r) for r in c.rows], {0, 1}, "lll" + "r" * 8) + [""]
    signature_lines = [line.strip() for r in c.rows for line in _signature_lines(r)]
    if signature_lines:
        out += ["Signatures that did not join one to one:", ""]
        out += [f"- {line}" for line in signature_lines] + [""]
    if c.unmatched:
        out += ["Calls with no counterpart:", ""]
        out += _markdown_table(_UNMATCHED_HEADERS, [_unmatched_cells(u) for u in c.unmatched],
                               {1}, "llrrrl") + [""]
    return "\n".join(out)

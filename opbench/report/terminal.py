"""The terminal view of a results record: rich tables of every instance, the per-call
floors, the largest kernel gaps, the top causes and the notes (text pieces: text.py)."""
from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from opbench.cases.ids import short_ids
from opbench.gapmap.analysis import GapMap, analyse, ceilings_lines
from opbench.results.records import RunRecord
from opbench.report.inside_text import PROFILE_HEADERS, profile_cause_lines, profile_rows
from opbench.report.text import (
    VERDICT_STYLE,
    fmt_ratio,
    fmt_time,
    header_text,
    kernel_gap_headers,
    kernel_gap_rows,
    notes_lines,
    problem_lines,
    rows,
    run_notes,
    sorted_rows,
    summary_line,
    verdict_of,
    verdict_word,
)

__all__ = ["render_terminal", "results_table", "overhead_table", "kernel_gap_table"]


def results_table(record: RunRecord, worst_first: bool = False) -> Table:
    """One row per instance and mode, readable at 100 columns: short ids (the JSON has the
    full ones; ids.py), no inputs column (the id holds the shapes and dtypes), and the mode
    and threshold columns only when they vary (else they are in the caption)."""
    ref, tgt = record.config.reference, record.config.target
    table_rows = list(sorted_rows(record) if worst_first else rows(record))
    measured = [m for _, _, m in table_rows if m is not None]
    modes = {key for _, key, m in table_rows if m is not None}
    thresholds = {m.threshold for m in measured}
    show_mode, show_threshold = len(modes) > 1, len(thresholds) > 1
    names = short_ids(inst.id for inst, _, _ in table_rows)
    caption = ["medians per call"]
    if modes and not show_mode:
        caption.append(f"mode {next(iter(modes))}")
    if thresholds and not show_threshold:
        caption.append(f"threshold {next(iter(thresholds)):g}")
    table = Table(title=f"{tgt} against {ref}: ratio = {ref} time / {tgt} time "
                        f"(below 1: {tgt} slower), 95% interval",
                  caption="; ".join(caption), box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                  header_style="bold")
    # fold, never cut: a truncated id can make float16 and float32 rows read the same
    table.add_column("instance", overflow="fold", ratio=1, min_width=12)
    if show_mode:
        table.add_column("mode", no_wrap=True)
    for header in (ref, tgt, "ratio [95% CI]"):
        table.add_column(header, justify="right", no_wrap=True)
    if show_threshold:
        table.add_column("thr", justify="right", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    for inst, key, m in table_rows:
        if m is None:
            v = verdict_of(inst)
            cells = ["-", "-", "-"]
        else:
            v = str(m.verdict)
            cells = [fmt_time(m.median_s(ref)), fmt_time(m.median_s(tgt)), fmt_ratio(m)]
        # ids hold brackets ("reshape[8x16]") that rich would read as markup: Text()
        row: list[Any] = [Text(names[inst.id])]
        if show_mode:
            row.append(key or "-")
        row += cells
        if show_threshold:
            row.append(f"{m.threshold:g}" if m else "-")
        row.append(Text(verdict_word(v, record), style=VERDICT_STYLE.get(v, "")))
        table.add_row(*row)
    return table


def overhead_table(record: RunRecord) -> Table | None:
    overhead = record.overhead
    if not overhead:
        return None
    table = Table(title="Per-call overhead (a trivial 1-element add): an op near its floor is "
                        "dispatch-bound", header_style="bold")
    for col in ("framework", "sync (idle)", "floor serial", "floor async", "first call+sync"):
        table.add_column(col, justify="right" if col != "framework" else "left")
    for name, o in overhead.items():
        table.add_row(name, fmt_time(o.sync_cost_s), fmt_time(o.dispatch_floor_serial_s),
                      fmt_time(o.dispatch_floor_async_s), fmt_time(o.first_call_serial_s))
    return table


def render_terminal(record: RunRecord, console: Console, worst_first: bool = False,
                    show_notes: bool = True) -> None:
    console.print(Text(header_text(record), style="dim"))
    ot = overhead_table(record)
    if ot is not None:
        console.print(ot)
    console.print(results_table(record, worst_first=worst_first))
    problems = problem_lines(record)
    if problems:
        console.print(Group(Text("Problems:", style="bold"),
                            *[Text("  " + ln) for ln in problems]))
    gap = analyse(record)
    if gap.headlines:
        console.print(Group(Text("Top causes of the SLOW verdicts:", style="bold"),
                            *[Text("  " + ln) for ln in gap.headlines]))
    gaps = kernel_gap_table(record, gap)
    if gaps is not None:
        console.print(gaps)
    inside = profile_table(record)
    if inside is not None:
        console.print(inside)
        causes = profile_cause_lines(record)
        if causes:
            console.print(Group(Text("Inside the SLOW calls (profiles):", style="bold"),
                                *[Text("  " + ln) for ln in causes]))
    ceilings = ceilings_lines(record)
    if ceilings:
        console.print(Group(Text("Machine ceilings (per framework, the run's threads):",
                                 style="bold"), *[Text("  " + ln) for ln in ceilings]))
    if show_notes:
        lines = (run_notes(record) + list(gap.shared_notes)
                 + notes_lines(record, short=True, grouped=True))
        if lines:
            console.print(Group(Text("What explains these ratios:", style="bold"),
                                *[Text("  " + ln) for ln in lines]))
    console.print(Text(summary_line(record), style="bold"))


def profile_table(record: RunRecord) -> Table | None:
    rows_ = profile_rows(record)
    if not rows_:
        return None
    table = Table(title="Inside each call (--profile: the frameworks' own profilers; host = "
                        "the timed call less its kernels)", header_style="bold",
                  box=box.SIMPLE_HEAD)
    for n, header in enumerate(PROFILE_HEADERS):
        table.add_column(header, justify="right" if 3 <= n <= 5 else "left",
                         overflow="fold")
    for row in rows_:
        table.add_row(*[Text(cell) for cell in row])
    return table


def kernel_gap_table(record: RunRecord, gap: GapMap) -> Table | None:
    rows_ = kernel_gap_rows(record, gap.kernel_gaps())
    if not rows_:
        return None
    table = Table(title="Largest kernel gaps (size sweeps: time = fixed + work / throughput; "
                        "kernel ratio = throughput ratio)", header_style="bold",
                  box=box.SIMPLE_HEAD)
    for n, header in enumerate(kernel_gap_headers(record)):
        table.add_column(header, justify="left" if n < 2 else "right",
                         overflow="fold" if n == 0 else "ellipsis")
    for row in rows_:
        table.add_row(Text(row[0]), *row[1:])
    return table

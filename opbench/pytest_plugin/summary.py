"""The end-of-session summary: ratios worst first, and how many instances got each verdict.

Pure text from result records (what the items attached to their reports, so it works the
same in-process and when reports arrive from elsewhere). Plain columns, not rich: pytest's
terminal writer owns the terminal, and captured output (CI logs, pytester) stays readable.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence

from opbench.pytest_plugin.outcome import ratio_text
from opbench.report.text import (
    VERDICT_ORDER,
    fmt_ratio,
    fmt_time,
    sorted_instance_rows,
    verdict_of,
)
from opbench.results.records import InstanceRecord

# A nightly run has hundreds of instances; the worst ones are what a reader acts on, the
# rest is in the saved results. -v shows every row.
DEFAULT_MAX_ROWS = 30
COLUMN_GAP = "  "


def verdict_counts(records: Iterable[InstanceRecord]) -> Counter:
    return Counter(verdict_of(r) for r in records)


def counts_line(records: Sequence[InstanceRecord]) -> str:
    counts = verdict_counts(records)
    parts = [f"{counts[v]} {v}" for v in VERDICT_ORDER if counts.get(v)]
    expected = sum(1 for r in records if r.check is not None and r.check.expected_mismatch)
    if expected:
        parts.append(f"{expected} with an expected mismatch")
    noun = "instance" if len(records) == 1 else "instances"
    return f"{len(records)} {noun}: " + (", ".join(parts) or "none")


def ratio_table(records: Sequence[InstanceRecord], reference: str, target: str,
                max_rows: int | None = DEFAULT_MAX_ROWS) -> list[str]:
    """Rows worst first: findings, then by ratio ascending. Instances without a measurement
    (MISMATCH, ERROR) get a row with their problem instead of numbers."""
    header = ("instance", "mode", f"{reference} median", f"{target} median",
              "ratio [95% CI]", "thr", "verdict")
    rows: list[tuple[str, ...]] = []
    for inst, mode, m in sorted_instance_rows(records):
        if m is None or mode is None:
            rows.append((inst.id, "-", "-", "-", "-", "-", verdict_of(inst)))
            continue
        rows.append((inst.id, mode, fmt_time(m.median_s(reference)),
                     fmt_time(m.median_s(target)), fmt_ratio(m), f"{m.threshold:g}",
                     str(m.verdict)))
    hidden = 0
    if max_rows is not None and len(rows) > max_rows:
        hidden = len(rows) - max_rows
        rows = rows[:max_rows]
    lines = _columns([header, *rows], right_aligned={2, 3, 4, 5})
    if hidden:
        lines.append(f"... {hidden} more rows (-v shows all; --opbench-json or "
                     f"--benchmark-json keeps every number)")
    return lines


def problem_lines(records: Sequence[InstanceRecord]) -> list[str]:
    """One line per instance that failed correctness or could not run (no ratio to show)."""
    lines = []
    for r in records:
        verdict = verdict_of(r)
        if verdict not in ("MISMATCH", "ERROR"):
            continue
        grads_differ = r.grad_check is not None and r.grad_check.ok is False
        check = r.grad_check if grads_differ else r.check
        why = r.error or (check.detail if check is not None else "") or ""
        lines.append(f"{verdict} {r.id}: {why.splitlines()[0] if why else ''}".rstrip())
    return lines


def inconclusive_lines(records: Sequence[InstanceRecord]) -> list[str]:
    """Why each inconclusive measurement could not decide (its row shows only the numbers)."""
    lines = []
    for r in records:
        for mode, m in r.measurements.items():
            if m.verdict == "INCONCLUSIVE":
                lines.append(f"INCONCLUSIVE {r.id} [{mode}]: {ratio_text(m)}")
    return lines


def summary_lines(records: Sequence[InstanceRecord], reference: str, target: str,
                  timing: bool, max_rows: int | None = DEFAULT_MAX_ROWS) -> list[str]:
    """The whole summary section: the ratio table when timing, else the problems."""
    if not records:
        return []
    lines: list[str] = []
    if timing:
        lines.append(f"ratio = {reference} time / {target} time per call (below 1: {target} "
                     f"slower); worst first")
        lines += ratio_table(records, reference, target, max_rows)
        lines += problem_lines(records) + inconclusive_lines(records)
    else:
        lines.append(f"correctness: {target} outputs against {reference} (no timing; "
                     f"--benchmark times them)")
        lines += problem_lines(records)
    lines.append(counts_line(records))
    return lines


def _columns(rows: Sequence[Sequence[str]], right_aligned: set[int]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = [cell.rjust(w) if i in right_aligned else cell.ljust(w)
                 for i, (cell, w) in enumerate(zip(row, widths))]
        out.append(COLUMN_GAP.join(cells).rstrip())
    return out

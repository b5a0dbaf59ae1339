"""The profiles' text every view shares (`--profile`): one row per measured side with its
timed call split into kernel and host time, its heaviest kernels and its extra work, and one
line per SLOW row with the profile's cause beside the sweep's (and where they disagree).
Reads the record only (gapmap/inside.py's figures, computed here for a file whose profile
entries lack the split).
"""
from __future__ import annotations

from typing import Any, Mapping

from opbench.gapmap.inside import inside_figures
from opbench.report.text import fmt_time
from opbench.results.records import InstanceRecord, RunRecord

__all__ = ["PROFILE_HEADERS", "profile_rows", "profile_cause_lines", "TOP_KERNELS"]

PROFILE_HEADERS = ("instance", "mode", "side", "call", "kernel", "host", "kernels per call",
                   "extra work")
# Kernels named per side in a row: the heaviest three say where the time goes; the JSON
# keeps them all.
TOP_KERNELS = 3


def _entries(inst: InstanceRecord, record: RunRecord) -> Mapping[str, Mapping[str, Any]]:
    needs_split = any("error" not in e and "host_s" not in e
                      for sides in inst.profile.values() for e in sides.values())
    if not needs_split:
        return inst.profile
    return inside_figures(inst, record.config.reference, record.config.target).profile


def _kernels(entry: Mapping[str, Any]) -> str:
    kernels = list(entry.get("kernels", ()))
    if not kernels:
        return "none (no kernel launched)"
    shown = [f"{k['name']} x{k['calls']:.3g} {fmt_time(k['time_s'])}"
             for k in kernels[:TOP_KERNELS]]
    more = len(kernels) - TOP_KERNELS
    return ", ".join(shown) + (f", +{more} more" if more > 0 else "")


def _extra(entry: Mapping[str, Any]) -> str:
    extra = entry.get("extra") or {}
    return ", ".join(f"{n:.3g} {kind}" for kind, n in extra.items() if n) or "-"


def profile_rows(record: RunRecord) -> list[list[str]]:
    rows = []
    for inst in record.instances:
        if not inst.profile:
            continue
        for key, sides in _entries(inst, record).items():
            for side, entry in sides.items():
                if "error" in entry:
                    rows.append([inst.id, key, side, "", "", "", f"profiler failed: "
                                 f"{entry['error']}", ""])
                    continue
                host = fmt_time(entry.get("host_s"))
                if entry.get("host_floored"):
                    host += " (floored: kernels >= call)"
                rows.append([inst.id, key, side, fmt_time(entry.get("call_s")),
                             fmt_time(entry.get("kernel_s")), host, _kernels(entry),
                             _extra(entry)])
    return rows


def profile_cause_lines(record: RunRecord) -> list[str]:
    """One line per SLOW measurement with a profile cause: what it says, and whether the
    sweep's cause agrees."""
    lines = []
    for inst in record.instances:
        for key, m in inst.measurements.items():
            cause = m.profile_cause
            if not cause:
                continue
            line = f"{inst.id} [{key}]: {cause['basis']}"
            agrees = cause.get("agrees_with_sweep")
            if agrees is False and m.cause:
                line += (f" -- the size sweep says {m.cause['kind']} "
                         f"({m.cause['basis']}): the two disagree")
            rows_word = {True: " (the sweep agrees)", None: ""}.get(agrees, "")
            lines.append(line + rows_word)
    return lines

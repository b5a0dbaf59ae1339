"""The whole gap map of one results record: sweeps, causes and the lines that lead a
report. What every view (terminal, Markdown, HTML) shows comes from here, so they agree."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from .attribute import Attribution, attribute, headlines, shared_note_lines
from .decompose import Sweep, sweeps

# How many kernel gaps a summary lists (the closing note asks for the 10 largest).
TOP_KERNEL_GAPS = 10

_UNIT_SCALE = {"bytes": (1e9, "GB/s"), "flops": (1e9, "GFLOP/s")}


@dataclass(frozen=True)
class GapMap:
    sweeps: tuple[Sweep, ...]
    attributions: tuple[Attribution, ...]
    headlines: tuple[str, ...]
    shared_notes: tuple[str, ...]

    def kernel_gaps(self, limit: int = TOP_KERNEL_GAPS) -> list[Sweep]:
        """Sweeps with a kernel ratio, the largest gap (lowest ratio) first."""
        rated = [s for s in self.sweeps if s.kernel_ratio is not None]
        return sorted(rated, key=lambda s: s.kernel_ratio)[:limit]


def throughput_text(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    scale, name = _UNIT_SCALE.get(unit, (1.0, unit + "/s"))
    return f"{value / scale:.3g} {name}"


def measurement_notes(record: Mapping[str, Any]) -> list[str]:
    return [n for inst in record.get("instances", [])
            for m in (inst.get("measurements") or {}).values() for n in m.get("notes", [])]


def analyse(record: Mapping[str, Any]) -> GapMap:
    found = sweeps(record) if record.get("config", {}).get("timing", True) else []
    attributions = attribute(record, found)
    return GapMap(tuple(found), tuple(attributions), tuple(headlines(record, attributions)),
                  tuple(shared_note_lines(measurement_notes(record))))


__all__ = ["GapMap", "analyse", "throughput_text", "TOP_KERNEL_GAPS"]

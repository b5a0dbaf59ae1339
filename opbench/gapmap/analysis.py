"""The whole gap map of one results record: sweeps, causes and the lines that lead a
report. What every view (terminal, Markdown, HTML) shows comes from here, so they agree."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from opbench.gapmap.attribute import (
    Attribution,
    attribute,
    headlines,
    shared_note_lines,
    stored_attributions,
)
from opbench.gapmap.decompose import Sweep, sweeps
from opbench.gapmap.roofline import RooflinePoint, roofline, stored_roofline
from opbench.results.records import RunRecord

# How many kernel gaps a summary lists (the closing note asks for the 10 largest).
TOP_KERNEL_GAPS = 10


@dataclass(frozen=True)
class GapMap:
    sweeps: tuple[Sweep, ...]
    attributions: tuple[Attribution, ...]
    headlines: tuple[str, ...]
    shared_notes: tuple[str, ...]
    # (instance id, measurement key) -> side -> its roofline point (gapmap/roofline.py)
    roofline: Mapping[tuple[str, str], Mapping[str, RooflinePoint]]

    @property
    def fractions(self) -> dict[tuple[str, str], dict[str, float]]:
        """(instance id, key) -> side -> share of its level's ceiling (0..1), where one
        applies (not cache-resident)."""
        return {k: {side: p.fraction for side, p in sides.items() if p.fraction is not None}
                for k, sides in self.roofline.items()}

    def kernel_gaps(self, limit: int = TOP_KERNEL_GAPS) -> list[Sweep]:
        """Sweeps with a kernel ratio, the largest gap (lowest ratio) first."""
        rated = [s for s in self.sweeps if s.kernel_ratio is not None]
        return sorted(rated, key=lambda s: s.kernel_ratio)[:limit]


def ceilings_lines(record: RunRecord) -> list[str]:
    """The machine ceilings each framework reached, one line each."""
    lines = []
    for name, c in record.ceilings.items():
        if c.has("error"):
            lines.append(f"{name}: ceilings not measured ({c.error})")
        else:
            lines.append(f"{name}: memory bandwidth {c.memory_bandwidth_bytes_per_s / 1e9:.3g}"
                         f" GB/s (copy of {c.copy_bytes / 2**20:.0f} MiB), peak "
                         f"{c.peak_flops_per_s / 1e9:.3g} GFLOP/s ({c.gemm_n}^3 float32 "
                         f"product), {c.threads} threads" + _cores_text(c))
    return lines


def _cores_text(c) -> str:
    """The cores the ceilings' copy and product really used, when measured."""
    levels = "".join(f"; {level} copy {found['bandwidth_bytes_per_s'] / 1e9:.3g} GB/s"
                     for level, found in c.cache_levels.items())
    if c.gemm_cores is None:
        return levels
    return f" (using {c.copy_cores:.2f} and {c.gemm_cores:.2f} cores){levels}"


def measurement_notes(record: RunRecord) -> list[str]:
    return [n for inst in record.instances for m in inst.measurements.values()
            for n in m.notes]


def roofline_fractions(record: RunRecord) -> dict[tuple[str, str], dict[str, float]]:
    """Each forward measurement's share of its level's ceiling (gapmap/roofline.py), where
    one applies."""
    return {k: {side: p.fraction for side, p in sides.items() if p.fraction is not None}
            for k, sides in roofline(record).items()}


def analyse(record: RunRecord) -> GapMap:
    """The gap map of a record: the causes and roofline points it holds (gapmap/figures.py
    wrote them at the end of its run), computed here only for a file without them."""
    found = sweeps(record) if record.config.timing else []
    attributions = stored_attributions(record)
    if attributions is None:
        attributions = attribute(record, found)
    points = stored_roofline(record)
    if points is None:
        points = roofline(record)
    return GapMap(tuple(found), tuple(attributions), tuple(headlines(record, attributions)),
                  tuple(shared_note_lines(measurement_notes(record))), points)


__all__ = ["GapMap", "analyse", "ceilings_lines", "roofline_fractions",
           "TOP_KERNEL_GAPS"]

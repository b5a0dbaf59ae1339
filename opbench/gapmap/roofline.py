"""The roofline each forward measurement is held against: the memory level its working set
fits (L2, L3, DRAM: copy bandwidth measured at that size), or the float32 product's FLOP/s
for matrix products and convolutions; "cache-resident" where no ceiling applies.

Why levels: the run's bandwidth ceiling used to be one 64 MiB copy (DRAM), and small
working sets live in cache: torch's add of 1x128x768 read 660% of that "ceiling". Each
level's ceiling is the machine's: the best any framework of the run reached there (its own
copy, pinned to the run's cores), so a framework's per-call cost shows as a lower fraction
rather than a lower ceiling. A working set that fits L1 has no ceiling (a copy that small
measures dispatch, runner/ceilings.py), and an instance that beats its level's ceiling
kept its data in a nearer cache than its size says: both read "cache-resident", never a
fraction above 1.

Pure: a record in, frozen points out.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from opbench.config.record_codec import record_from
from opbench.gapmap.work import FLOPS, work_of
from opbench.results.records import Ceilings, RunRecord

__all__ = ["COMPUTE", "CACHE_RESIDENT", "RooflinePoint", "level_of", "machine_ceilings",
           "roofline", "stored_roofline"]

COMPUTE = "compute"
CACHE_RESIDENT = "cache-resident"
_LEVELS = ("L1", "L2", "L3")


@dataclass(frozen=True)
class RooflinePoint:
    """One side of one measurement against its ceiling."""

    level: str                      # L2, L3, DRAM, compute, or L1 (no ceiling)
    unit: str                       # bytes or flops
    working_set_bytes: float | None  # bytes moved (None for FLOP-counted work)
    achieved_per_s: float
    ceiling_per_s: float | None = None
    fraction: float | None = None   # 0..1; None: cache-resident

    @property
    def resident(self) -> bool:
        return self.fraction is None

    def text(self) -> str:
        if self.fraction is not None:
            return f"{self.fraction:.1%} of {self.level}"
        return "at peak" if self.level == COMPUTE else CACHE_RESIDENT

    def as_dict(self) -> dict:
        return {"level": self.level, "unit": self.unit,
                "working_set_bytes": self.working_set_bytes,
                "achieved_per_s": self.achieved_per_s, "ceiling_per_s": self.ceiling_per_s,
                "fraction": self.fraction,
                "cache_resident": self.fraction is None}


def machine_ceilings(ceilings: Mapping[str, Ceilings]) -> dict[str, float]:
    """Level -> the best ceiling any framework measured there (bytes/s; compute: FLOP/s)."""
    best: dict[str, float] = {}

    def keep(level: str, value: float | None) -> None:
        if value:
            best[level] = max(best.get(level, 0.0), float(value))
    for c in ceilings.values():
        if c.error:
            continue
        keep("DRAM", c.memory_bandwidth_bytes_per_s)
        keep(COMPUTE, c.peak_flops_per_s)
        for level, found in c.cache_levels.items():
            keep(level, found.get("bandwidth_bytes_per_s"))
    return best


def _cache_sizes(ceilings: Mapping[str, Ceilings]) -> dict[str, int]:
    for c in ceilings.values():
        if c.cache_bytes:
            return dict(c.cache_bytes)
    return {}


def level_of(working_set: float, sizes: Mapping[str, int]) -> str:
    """The nearest cache level the working set fits, else DRAM."""
    for level in _LEVELS:
        if level in sizes and working_set <= sizes[level]:
            return level
    return "DRAM"


def roofline(record: RunRecord) -> dict[tuple[str, str], dict[str, RooflinePoint]]:
    """(instance id, measurement key) -> side -> its point, for forward measurements (the
    work of a forward+backward call is not counted)."""
    best = machine_ceilings(record.ceilings)
    if not best:
        return {}
    sizes = _cache_sizes(record.ceilings)
    out: dict[tuple[str, str], dict[str, RooflinePoint]] = {}
    for inst in record.instances:
        work = work_of(inst)
        if work is None:
            continue
        flops = work.unit == FLOPS
        level = COMPUTE if flops else level_of(work.amount, sizes)
        ceiling = best.get(level)
        for key, m in inst.measurements.items():
            if "+" in key:
                continue
            sides = {}
            for side, s in m.summary.items():
                if not s.median_s or s.median_s <= 0:
                    continue
                achieved = work.amount / s.median_s
                fraction = achieved / ceiling if ceiling else None
                if fraction is not None and fraction > 1.0:
                    fraction = None         # beat its level: its data sat nearer
                sides[side] = RooflinePoint(level, work.unit, None if flops else work.amount,
                                            achieved, ceiling, fraction)
            if sides:
                out[(inst.id, key)] = sides
    return out


def stored_roofline(record: RunRecord
                    ) -> dict[tuple[str, str], dict[str, RooflinePoint]] | None:
    """The roofline points the record holds; None when no measurement has any."""
    out: dict[tuple[str, str], dict[str, RooflinePoint]] = {}
    for inst in record.instances:
        for key, m in inst.measurements.items():
            if m.roofline:
                out[(inst.id, key)] = {side: _point(p) for side, p in m.roofline.items()}
    return out or None


def _point(p: Mapping[str, Any]) -> RooflinePoint:
    """A stored point (as_dict's keys; its derived `cache_resident` is not read back)."""
    return record_from(RooflinePoint, {"working_set_bytes": None, **p})

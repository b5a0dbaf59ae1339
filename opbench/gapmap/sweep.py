"""A size sweep and its fits as frozen records: what decompose.py computes, and what
attribute.py, plots.py and the views read. No numbers are computed here, so the readers of a
sweep do not depend on the fitting (or on how work is counted)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping

__all__ = ["OK", "OVERHEAD_BOUND", "POOR", "Point", "SideFit", "Sweep", "by_instance"]

# A side's fit status (decompose.fit_line says when each applies).
OK, POOR, OVERHEAD_BOUND = "ok", "poor fit", "overhead-bound"


@dataclass(frozen=True)
class Point:
    """One size of a sweep: its work and, per side, the median time and its error."""
    instance_id: str
    work: float
    time_s: Mapping[str, float]
    error_s: Mapping[str, float]
    ratio: float | None = None
    ci: tuple[float, float] | None = None


@dataclass(frozen=True)
class SideFit:
    status: str                       # OK, POOR or OVERHEAD_BOUND
    reason: str                       # why, for POOR and OVERHEAD_BOUND
    fixed_s: float
    fixed_ci_s: tuple[float, float]
    per_unit_s: float                 # slope: seconds per byte or per FLOP
    per_unit_se_s: float
    throughput: float | None          # units per second (1 / slope); None unless OK
    throughput_ci: tuple[float, float] | None
    r2: float
    chi2_per_dof: float | None


@dataclass(frozen=True)
class Sweep:
    case: str
    op: str
    key: str                          # measurement key: serial, async, serial+backward
    variant: str                      # the non-size parameters, "dtype=float32"
    unit: str                         # bytes or flops
    work_source: str
    points: tuple[Point, ...]
    fits: Mapping[str, SideFit]
    kernel_ratio: float | None        # throughput target / throughput reference
    kernel_ci: tuple[float, float] | None
    reference: str
    target: str

    @property
    def name(self) -> str:
        return f"{self.case}[{self.variant}]" if self.variant else self.case

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["name"] = self.name
        return d


def by_instance(found: Iterable[Sweep]) -> dict[tuple[str, str], Sweep]:
    """(instance id, measurement key) -> the sweep it belongs to."""
    return {(p.instance_id, s.key): s for s in found for p in s.points}

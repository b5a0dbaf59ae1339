"""The cores a side really used: the measuring process's CPU time (all its threads) over
a sample's wall time, and the samples that used more than the run allows. Pure; the
measuring process is pinned to the allowed cores by pinning.py, which says why."""
from __future__ import annotations

from typing import Sequence

__all__ = ["CORES_TOLERANCE", "sample_cores", "effective_cores", "samples_over"]

# A side counts as using more cores than allowed when its CPU time over wall time exceeds
# the allowed count by this factor: process CPU time and wall time are read by two clocks,
# and a pinned side measured 0.97-1.02 cores per core allowed here.
CORES_TOLERANCE = 1.1


def sample_cores(cpu_s: float | None, wall_s: float) -> float | None:
    """Cores a sample used: the process's CPU time over the sample's wall time."""
    if cpu_s is None or wall_s <= 0:
        return None
    return cpu_s / wall_s


def effective_cores(cpu_s: Sequence[float | None], wall_s: Sequence[float]) -> float | None:
    """A side's cores over all its samples: total CPU time over total wall time."""
    pairs = [(c, w) for c, w in zip(cpu_s, wall_s) if c is not None and w > 0]
    if not pairs:
        return None
    return sum(c for c, _ in pairs) / sum(w for _, w in pairs)


def samples_over(cpu_s: Sequence[float | None], wall_s: Sequence[float],
                 allowed: int) -> int:
    """How many samples used more than `allowed` cores (CORES_TOLERANCE)."""
    return sum(1 for c, w in zip(cpu_s, wall_s)
               if (cores := sample_cores(c, w)) is not None
               and cores > allowed * CORES_TOLERANCE)

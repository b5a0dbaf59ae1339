"""What a swap saves per step, from interleaved timings (pure: no I/O, no clock).

Each replay process times the original (A) and the swapped (B) step in alternating rounds;
its paired difference is median(A) - median(B) over its samples (both in the same process
and mode). Over two or more processes the saving is the mean of those differences with a t
interval over processes (the process is the unit: MindSpore's speed moves between them);
over one process, the mean of the per-round differences with a t interval over rounds.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Sequence

from opbench.verdicts.stats import student_t_quantile

__all__ = ["Saving", "saving_from", "FASTER", "NO_GAIN", "SLOWER", "RESOLUTION_SHARE",
           "verdict_of"]

FASTER = "faster"
NO_GAIN = "no measurable gain here"
SLOWER = "slower"
CONFIDENCE = 0.95

# per process: per program (A, B): per round: step samples (seconds)
Rounds = Sequence[Sequence[float]]


@dataclass(frozen=True)
class Saving:
    estimate: float            # seconds per step saved (negative: the swap is slower)
    ci_low: float
    ci_high: float
    units: int                 # processes (or rounds, with one process) in the interval
    time_now_s: float          # the original step, mean of the process medians
    time_after_s: float

    @property
    def share(self) -> float:
        return self.estimate / self.time_now_s if self.time_now_s > 0 else 0.0


def _t_interval(values: Sequence[float]) -> tuple[float, float, float]:
    center = statistics.fmean(values)
    if len(values) < 2:
        return center, -math.inf, math.inf
    half = (student_t_quantile(1.0 - (1.0 - CONFIDENCE) / 2.0, len(values) - 1)
            * statistics.stdev(values) / math.sqrt(len(values)))
    return center, center - half, center + half


def saving_from(processes: Sequence[tuple[Rounds, Rounds]]) -> Saving:
    """processes: per process, (original rounds, swapped rounds)."""
    usable = [(a, b) for a, b in processes if a and b and any(a) and any(b)]
    if not usable:
        raise ValueError("no timed process")
    now = [statistics.median([s for r in a for s in r]) for a, _ in usable]
    after = [statistics.median([s for r in b for s in r]) for _, b in usable]
    if len(usable) >= 2:
        differences = [x - y for x, y in zip(now, after)]
    else:
        a, b = usable[0]
        differences = [statistics.median(x) - statistics.median(y)
                       for x, y in zip(a, b) if x and y]
    center, low, high = _t_interval(differences)
    return Saving(center, low, high, len(differences), statistics.fmean(now),
                  statistics.fmean(after))


# The replay resolves a step's time to about this share of it: below, a replayed swap and
# the script's own edit disagree by as much as they save. Measured on the torch
# naive/fixed pairs (2026-11-28, the written-out replay step, docs/model.md "Affinity
# pairs"): claim minus the script pair's measured saving, over the original step, +0.5%
# (linear), +1.0% (transpose + matmul: claimed 0.021 ms, measured 0.005), -0.9% (softmax),
# +1.3% (the optimizer loop: claimed 0.010 ms "faster", [0.0005, 0.019], measured -0.006,
# slower), +0.4% (masked write). A saving counts only where its estimate is at least this
# share of the step, as asv counts a change only beyond its factor.
RESOLUTION_SHARE = 0.01


def verdict_of(saving: Saving) -> str:
    """Faster when the whole interval is above zero and the estimate at least
    RESOLUTION_SHARE of the step; slower when the interval is below zero and the estimate
    at least that share below; anything else: no measurable gain here."""
    floor = RESOLUTION_SHARE * saving.time_now_s
    if saving.ci_low > 0 and saving.estimate >= floor:
        return FASTER
    if saving.ci_high < 0 and saving.estimate <= -floor:
        return SLOWER
    return NO_GAIN

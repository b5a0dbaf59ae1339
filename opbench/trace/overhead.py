"""The tracer's own cost per call, measured by calibration.

The recorder measures its bookkeeping around every recorded call, but part of the cost is
paid before it gets control (the framework's dispatch into a torch function mode, the extra
Python frame of a wrapper). So each traced framework also times its cheapest real operator
with and without the interception in place; the difference is the overhead per call.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable

Loop = Callable[[int], None]      # runs the trivial call n times

# Calls per timed round: at >= 1 us each a round lasts >= 0.3 ms, far past the clock's
# resolution, and the whole calibration stays around 10 ms per framework.
CALIBRATION_CALLS = 300
# Interleaved rounds; the median ignores a round hit by a scheduler burst on a shared machine.
CALIBRATION_ROUNDS = 7
# Warm-up calls before timing (first calls pay for caches and lazy initialisation).
WARMUP_CALLS = 20


@dataclass(frozen=True)
class TracerOverhead:
    """What the tracer's interception adds to one call (not a framework's own per-call
    floor: that is runner/measure.py's MeasuredOverhead, recorded as results' Overhead)."""

    framework: str
    probe: str                       # what was called, e.g. "torch.add on 1-element tensors"
    traced_ns_per_call: float
    untraced_ns_per_call: float

    @property
    def per_call_ns(self) -> float:
        return max(0.0, self.traced_ns_per_call - self.untraced_ns_per_call)

    def as_dict(self) -> dict[str, object]:
        return {"framework": self.framework, "probe": self.probe,
                "traced_ns_per_call": round(self.traced_ns_per_call, 1),
                "untraced_ns_per_call": round(self.untraced_ns_per_call, 1),
                "overhead_ns_per_call": round(self.per_call_ns, 1)}


def calibrate(framework: str, probe: str, run_traced: Loop, run_untraced: Loop, *,
              clock: Callable[[], int] = time.perf_counter_ns, calls: int = CALIBRATION_CALLS,
              rounds: int = CALIBRATION_ROUNDS) -> TracerOverhead:
    run_traced(WARMUP_CALLS)
    run_untraced(WARMUP_CALLS)
    traced: list[float] = []
    untraced: list[float] = []
    for round_index in range(rounds):
        # Alternate which side goes first so drift within a round hits both alike.
        order = ((run_traced, traced), (run_untraced, untraced))
        for loop, samples in (order if round_index % 2 == 0 else order[::-1]):
            start = clock()
            loop(calls)
            samples.append((clock() - start) / calls)
    return TracerOverhead(framework, probe, statistics.median(traced),
                          statistics.median(untraced))

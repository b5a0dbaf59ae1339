"""The tracer's own cost per call, measured by calibration.

The recorder measures its bookkeeping around every recorded call, but part of the cost is
paid before it gets control (the framework's dispatch into a torch function mode, the extra
Python frame of a wrapper). So each traced framework also times its cheapest real operator
with and without the interception in place; the difference is the overhead per call.

Part of that cost lands INSIDE a recorded call's duration too, between its two timestamps:
the wrapper frames between the timestamp and the framework's own code, and the caches the
tracer's (and an observer's) work between two calls left cold. Measured here on torch 2.13
CPU (docs/model.md, "The self-check's base"): in a sequence of eight different small calls,
a recorded torch.add took 3.8 us against 1.6 us untraced, F.linear 10.0 against 3.4 us; the
same torch.add repeated alone (the probe's loop: caches hot) only 0.5 us more. So
`calibrate_in_window` times a SEQUENCE of different cheap calls both ways (recorded under the
tracer, and untraced one by one with the same clock around each): the median of their
differences is `in_window_ns_per_call`, which a capture takes out of every call's traced time.
Since the window holds nothing of the tracer's but the call (no CPU sync, no second trip
through the function mode for an operator or a layer: trace/torch_intercept.py), what this
measures is the cold caches the work between two calls leaves: 1.6-1.8 us here, on calls of
1.4-8.4 us that it slows by 1.2-2.2x (closer to a factor than a constant: docs/model.md).
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
# Repeats of the in-window calibration's sequence (and its warm-up): 8 different calls x 200
# take ~15 ms traced with a capture's observer here, and the medians settle well within 0.2 us.
IN_WINDOW_REPEATS = 200
WARMUP_SEQUENCES = 10


@dataclass(frozen=True)
class TracerOverhead:
    """What the tracer's interception adds to one call (not a framework's own per-call
    floor: that is runner/measure.py's MeasuredOverhead, recorded as results' Overhead)."""

    framework: str
    probe: str                       # what was called, e.g. "torch.add on 1-element tensors"
    traced_ns_per_call: float
    untraced_ns_per_call: float
    # the tracer's cost inside a recorded call's duration (calibrate_in_window; 0: not
    # measured)
    in_window_ns_per_call: float = 0.0

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


SequenceRun = Callable[[int], None]            # runs the sequence of calls n times
TimedSequenceRun = Callable[[int], list[int]]  # the same untraced: each call's ns, in order


def calibrate_in_window(calls_per_sequence: int, run_traced: SequenceRun,
                        run_untraced: TimedSequenceRun, recorded_ns: Callable[[], list[int]],
                        *, repeats: int = IN_WINDOW_REPEATS) -> float:
    """The tracer's cost inside a recorded call's duration, in ns: a sequence of
    `calls_per_sequence` different calls run `repeats` times traced (`recorded_ns()`: the
    durations the recorder gave them, in order; the calibration records into a scratch
    store) and untraced (each call timed alone); per call of the sequence the difference of
    the two medians, and the median of those (a mean would follow the one call a scheduler
    tick hit). Never below 0."""
    run_traced(WARMUP_SEQUENCES)
    run_untraced(WARMUP_SEQUENCES)
    already = len(recorded_ns())
    untraced: list[int] = []
    for half in range(2):          # untraced, traced, traced, untraced: drift hits both
        if half == 0:
            untraced += run_untraced(repeats // 2)
            run_traced(repeats // 2)
        else:
            run_traced(repeats - repeats // 2)
            untraced += run_untraced(repeats - repeats // 2)
    traced = recorded_ns()[already:]
    if len(traced) != len(untraced) or not traced:
        return 0.0          # a call of the sequence was not recorded: no honest figure
    differences = []
    for position in range(calls_per_sequence):
        differences.append(statistics.median(traced[position::calls_per_sequence])
                           - statistics.median(untraced[position::calls_per_sequence]))
    return max(0.0, float(statistics.median(differences)))

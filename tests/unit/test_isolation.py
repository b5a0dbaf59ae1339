"""Isolation and detection against fake clocks: the pre-sample quiesce, the interference
tests (order effect, clusters), and an injected interference that a measurement must catch
without quiesce and must not suffer with it."""
from __future__ import annotations

import math

import numpy as np
import pytest

from opbench.config import MeasureSettings, default_threads
from opbench.runner import measure as measure_mod
from opbench.runner.measure import Side, interleaved_order, measure
from opbench.runner.quiesce import MAX_QUIESCE_S, QUIET_WINDOW_S, Quiescer, wait_until_quiet
from opbench.verdicts.conclusions import measurement_statistics
from opbench.verdicts.interference import (
    CLUSTERS,
    ORDER_EFFECT,
    detect_interference,
    order_effect,
    sample_clusters,
)


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self) -> float:
        self.t += 1e-9
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds


class Leftover:
    """Another thread's leftover work: busy (one full core) until `busy_until`."""

    def __init__(self, clock: Clock):
        self.clock, self.busy_until, self.cpu_ns, self.last = clock, 0.0, 0, 0.0

    def probe(self) -> int:
        now = self.clock.t
        busy = max(0.0, min(now, self.busy_until) - self.last)
        self.cpu_ns += int(busy * 1e9)
        self.last = now
        return self.cpu_ns


# ----------------------------------------------------------------------------- quiesce

def test_quiet_threads_cost_one_window():
    clock = Clock()
    left = Leftover(clock)
    result = wait_until_quiet(left.probe, clock, clock.sleep)
    assert not result.timed_out
    assert QUIET_WINDOW_S <= result.waited_s < 2 * QUIET_WINDOW_S


def test_the_wait_lasts_until_the_leftover_work_ends():
    clock = Clock()
    left = Leftover(clock)
    left.busy_until = 0.120          # e.g. MindSpore's ActorThread spinning after its sample
    result = wait_until_quiet(left.probe, clock, clock.sleep)
    assert not result.timed_out
    assert 0.120 <= result.waited_s <= 0.120 + 2 * QUIET_WINDOW_S
    assert result.busy_cpu_s == pytest.approx(0.120, abs=1e-3)


def test_the_wait_is_bounded_and_says_so():
    clock = Clock()
    left = Leftover(clock)
    left.busy_until = 10.0
    result = wait_until_quiet(left.probe, clock, clock.sleep)
    assert result.timed_out
    assert MAX_QUIESCE_S <= result.waited_s < MAX_QUIESCE_S + 0.01


def test_threads_default_leaves_a_core_for_dispatch():
    assert default_threads(2) == 1
    assert default_threads(1) == 1
    assert default_threads(16) == 15


# ----------------------------------------------------------------------------- detection

def _rounds(n: int):
    return interleaved_order(["torch", "mindspore"], n)


def test_an_order_effect_is_found_and_described():
    rng = np.random.default_rng(1)
    order = _rounds(15)
    torch = [1e-6 * (7.0 if o[0] != "torch" else 1.1) * math.exp(rng.normal(0, 0.03))
             for o in order]
    found = order_effect("torch", torch, order)
    assert found is not None and found.kind == ORDER_EFFECT
    assert found.effect == pytest.approx(7.0 / 1.1, rel=0.1)
    assert "right after the other side" in found.detail


@pytest.mark.parametrize("noise_sd", [0.02, 0.2])
def test_no_order_effect_is_rarely_claimed(noise_sd):
    """False alarms turn good measurements INCONCLUSIVE: under no effect they must be rare
    (simulated with normal and heavy-tailed noise)."""
    rng = np.random.default_rng(7)
    order = _rounds(15)
    alarms = 0
    trials = 400
    for _ in range(trials):
        noise = rng.standard_t(3, size=15) * noise_sd
        samples = list(1e-4 * np.exp(noise))
        alarms += order_effect("torch", samples, order) is not None
    assert alarms / trials < 0.02


def test_clusters_within_one_process_are_found():
    # MindSpore's 2-thread ops: ~0.15 ms, or a 4 ms scheduler tick
    samples = [0.15e-3, 4.0e-3, 0.16e-3, 4.1e-3, 0.15e-3, 0.15e-3, 4.0e-3, 0.16e-3, 0.15e-3,
               0.15e-3, 0.16e-3, 4.0e-3, 0.15e-3, 0.15e-3, 0.15e-3]
    found = sample_clusters("mindspore", samples)
    assert found is not None and found.kind == CLUSTERS and found.effect > 20
    assert "4 near 4 ms" in found.detail and "11 near 150 us" in found.detail


def test_clusters_made_only_by_processes_are_not_interference():
    """A process's own offset is between-process variation: the interval covers it."""
    samples = [1e-4] * 5 + [1.6e-4] * 5 + [1e-4] * 5
    groups = [1] * 5 + [2] * 5 + [3] * 5
    assert sample_clusters("torch", samples, groups) is None
    assert sample_clusters("torch", samples, [1] * 15) is not None


def test_a_single_burst_is_not_a_cluster():
    samples = [1e-4] * 14 + [9e-4]
    assert sample_clusters("torch", samples) is None


def test_interference_that_can_change_the_verdict_makes_it_inconclusive():
    """torch's samples in two clusters (1.37 us, and 3 of 15 at 12 us) against MindSpore's
    8 us: 0.17 (SLOW) as measured, 1.5 (PASS) with every torch sample in the upper one."""
    torch = [1.37e-6] * 12 + [12e-6] * 3
    torch = torch[::2] + torch[1::2]
    mindspore = [8e-6] * 15
    fields = measurement_statistics({"torch": torch, "mindspore": mindspore}, "torch",
                                    "mindspore", 0.8, order=_rounds(15))
    assert fields.verdict.value == "INCONCLUSIVE"
    assert fields.inconclusive_reason.startswith("would be SLOW, but torch's samples")
    assert "with torch's clusters at its worst [1.5, 1.5] (PASS)" in \
        fields.inconclusive_reason
    assert fields.interference[0].kind == CLUSTERS
    assert fields.interference_ruled_out is None
    clean = measurement_statistics({"torch": [1.37e-6] * 15, "mindspore": mindspore},
                                   "torch", "mindspore", 0.8, order=_rounds(15))
    assert clean.verdict.value == "SLOW" and clean.interference == ()


def test_interference_that_cannot_change_the_verdict_keeps_it_and_says_so():
    """The issue's add[16x64]: torch 1.37 us with 3 of 15 samples at 2.43 us (two clusters
    in one process) against MindSpore's 34.5 us. Every torch sample at 2.43 us still gives
    0.07: SLOW either way."""
    torch = [1.37e-6] * 12 + [2.43e-6] * 3
    torch = torch[::2] + torch[1::2]      # the slow ones spread among the rounds
    fields = measurement_statistics({"torch": torch, "mindspore": [34.5e-6] * 15}, "torch",
                                    "mindspore", 0.8, order=_rounds(15))
    assert [f.kind for f in fields.interference] == [CLUSTERS]
    assert fields.verdict.value == "SLOW" and fields.inconclusive_reason is None
    line = fields.interference_ruled_out
    assert line.startswith("SLOW whatever the interference: with torch's clusters at its "
                           "worst [0.0704, 0.0704] (SLOW)")
    assert "without torch's clusters [0.0397, 0.0397] (SLOW)" in line


def test_injected_order_effect_that_cannot_change_the_verdict_keeps_it():
    """Fake clock: torch (10 us) slowed 1.7x right after each MindSpore sample (400 us):
    0.025 or 0.042, SLOW either way, and the record says why the verdict stands."""
    fake = FakeFrameworks(ms_call_s=400e-6)
    m = measure(fake.sides(), SETTINGS, fake.clock, resolution_s=1e-9)
    fields = _judge(m)
    assert ("torch", ORDER_EFFECT) in {(f.side, f.kind) for f in fields.interference}
    assert fields.verdict.value == "SLOW"
    assert "with torch's order effect at its worst" in fields.interference_ruled_out


# ----------------------------------------------------------------------------- injected

class FakeFrameworks:
    """Two sides on one fake clock. After each `mindspore` sample a leftover thread keeps a
    core busy for `tail_s`; a torch call made while it is busy costs `slowdown` times more
    (it shares the core), and the probe sees the leftover's CPU time."""

    def __init__(self, tail_s: float = 0.01, slowdown: float = 5.0, ms_call_s: float = 40e-6):
        self.clock = Clock()
        self.ms_call_s = ms_call_s
        self.left = Leftover(self.clock)
        self.tail_s, self.slowdown = tail_s, slowdown
        self.last_side = None

    def torch_call(self):
        busy = self.clock.t < self.left.busy_until
        self.clock.t += 10e-6 * (self.slowdown if busy else 1.0)

    def ms_call(self):
        self.clock.t += self.ms_call_s

    def ms_sync(self):
        # the sync returns, but the runtime's threads keep spinning a while
        self.left.busy_until = self.clock.t + self.tail_s

    def sides(self):
        return [Side("torch", self.torch_call, lambda: None),
                Side("mindspore", self.ms_call, self.ms_sync)]


# Samples (20 ms) outlast the leftover (10 ms): torch's sample right after MindSpore's is
# partly slowed, its sample after its own is not. (A leftover longer than a sample slows
# both positions; the detection then sees nothing, which is why quiesce comes first.)
SETTINGS = MeasureSettings(rounds=16, min_sample_time_s=20e-3, warmup_time_s=1e-3,
                           max_time_s=100.0)


def _judge(m):
    return measurement_statistics(m.per_call_s, "torch", "mindspore", 0.8, order=m.order)


def test_injected_interference_is_detected_without_quiesce():
    """torch (10 us) read 1.7x right after MindSpore's sample (15 us): 0.67 (SLOW) clean,
    1.1 (PASS) at its worst, so the interference can change the verdict."""
    fake = FakeFrameworks(ms_call_s=15e-6)
    m = measure(fake.sides(), SETTINGS, fake.clock, resolution_s=1e-9)
    fields = _judge(m)
    assert fields.verdict.value == "INCONCLUSIVE"
    kinds = {(f.side, f.kind) for f in fields.interference}
    assert ("torch", ORDER_EFFECT) in kinds


def test_quiesce_waits_the_injected_interference_out():
    fake = FakeFrameworks()
    quiescer = Quiescer(fake.left.probe, fake.clock, fake.clock.sleep)
    m = measure(fake.sides(), SETTINGS, fake.clock, resolution_s=1e-9,
                settle=quiescer.settle)
    fields = _judge(m)
    assert fields.interference == ()
    assert fields.verdict.value == "SLOW"   # torch 10 us vs MindSpore 40 us: ratio 0.25
    assert fields.estimate.ratio == pytest.approx(0.25, rel=0.01)
    # a wait only where the side changes: torch's samples right after MindSpore's waited
    # for the 10 ms tail; a sample right after its own side's took no wait
    waits = [r for r in m.settled["torch"] if r is not None]
    assert max(r.waited_s for r in waits) >= 0.01 and not any(r.timed_out for r in waits)
    assert len(waits) == sum(1 for o in m.order if o[0] == "mindspore") + 1


def test_detect_interference_looks_at_every_side():
    order = _rounds(15)
    ms = [40e-6 * (3.0 if o[0] != "mindspore" else 1.0) for o in order]
    found = detect_interference({"torch": [1e-5] * 15, "mindspore": ms}, order)
    # noise-free, the two positions are also two clusters
    assert {(f.side, f.kind) for f in found} == {("mindspore", ORDER_EFFECT),
                                                 ("mindspore", CLUSTERS)}


# ------------------------------------------------------- the other side's cache footprint

class ColdCaches:
    """No thread is left running (the idle-wait sees nothing), but after MindSpore's sample
    torch's calls stay slow until it has made `recovery_s` of calls: its caches, TLBs and
    predictors hold the other side's state. Measured on the real frameworks (torch's bias
    add after MindSpore's): slow for ~1.5 ms of calls, then steady."""

    def __init__(self, recovery_s: float = 1.5e-3, slowdown: float = 1.4):
        self.clock = Clock()
        self.left = Leftover(self.clock)
        self.recovery_s, self.slowdown = recovery_s, slowdown
        self.torch_since_ms = float("inf")

    def torch_call(self):
        cold = self.torch_since_ms < self.recovery_s
        cost = 10e-6 * (self.slowdown if cold else 1.0)
        self.clock.t += cost
        self.torch_since_ms += cost

    def ms_call(self):
        self.clock.t += 40e-6
        self.torch_since_ms = 0.0

    def sides(self):
        return [Side("torch", self.torch_call, lambda: None),
                Side("mindspore", self.ms_call, lambda: None)]


def test_rewarm_keeps_the_other_sides_cache_footprint_out_of_the_sample():
    fake = ColdCaches()
    quiescer = Quiescer(fake.left.probe, fake.clock, fake.clock.sleep)
    settings = MeasureSettings(rounds=16, min_sample_time_s=2e-3, warmup_time_s=1e-3,
                               max_time_s=100.0)
    m = measure(fake.sides(), settings, fake.clock, resolution_s=1e-9, settle=quiescer.settle)
    # every torch sample reads the steady 10 us: none is inflated by the recovery
    assert max(m.per_call_s["torch"]) == pytest.approx(10e-6, rel=1e-6)
    assert _judge(m).interference == ()


def test_one_rewarm_call_would_not_have_been_enough():
    # the same fake with a single untimed call: torch's samples after MindSpore's read slow
    fake = ColdCaches()
    quiescer = Quiescer(fake.left.probe, fake.clock, fake.clock.sleep)
    settings = MeasureSettings(rounds=16, min_sample_time_s=2e-3, warmup_time_s=1e-3,
                               max_time_s=100.0)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(measure_mod, "REWARM_TIME_S", 0.0)
        m = measure(fake.sides(), settings, fake.clock, resolution_s=1e-9,
                    settle=quiescer.settle)
    assert max(m.per_call_s["torch"]) > 11e-6
    assert any(f.side == "torch" for f in _judge(m).interference)


def test_rewarm_calls_for_its_time_at_least_once_at_most_a_sample():
    clock = Clock()
    calls = []

    def call():
        calls.append(1)
        clock.t += 1e-3

    side = Side("torch", call, lambda: None)
    assert measure_mod.rewarm(side, "serial", clock, max_calls=100, min_time_s=3e-3) == 3
    assert measure_mod.rewarm(side, "serial", clock, max_calls=2, min_time_s=3e-3) == 2
    assert measure_mod.rewarm(side, "serial", clock, max_calls=100, min_time_s=0.0) == 1
    assert measure_mod.rewarm(side, "serial", clock, max_calls=0, min_time_s=1.0) == 1
    assert len(calls) == 7

"""The timing protocol against a fake clock: deterministic, no frameworks, no real time."""
from __future__ import annotations

import pytest

from opbench.config import ASYNC, MIN_ROUNDS, SERIAL, MeasureSettings
from opbench.runner.measure import (
    BUDGET_SLACK,
    CALIBRATION_HEADROOM,
    MIN_WARMUP_CALLS,
    Calibration,
    Side,
    WarmUp,
    calibrate,
    clock_resolution_s,
    expected_sample_s,
    interleaved_order,
    measure,
    measure_overhead,
    rounds_within_budget,
    run_sample,
)


class FakeClock:
    """Time advances only when the fake work says so, plus a tiny step per read (a real clock
    never returns the same value forever) quantised to `tick_s`."""

    def __init__(self, tick_s: float = 1e-9, read_cost_s: float = 0.0):
        self.t = 0.0
        self.tick_s = tick_s
        self.read_cost_s = read_cost_s
        self.reads = 0

    def advance(self, seconds: float) -> None:
        self.t += seconds

    def __call__(self) -> float:
        self.reads += 1
        self.t += self.read_cost_s
        return round(self.t / self.tick_s) * self.tick_s


class FakeDevice:
    """An asynchronous device: a call costs `launch_s` on the host and queues `kernel_s` of
    work; sync waits for the queue (plus `sync_s`). That is the model both real frameworks
    follow on an accelerator, and the one where serial and async differ."""

    def __init__(self, clock: FakeClock, launch_s: float, kernel_s: float, sync_s: float):
        self.clock, self.launch_s, self.kernel_s, self.sync_s = clock, launch_s, kernel_s, sync_s
        self.queue_ends_at = 0.0
        self.calls = 0
        self.syncs = 0

    def call(self) -> None:
        self.calls += 1
        self.clock.advance(self.launch_s)
        start = max(self.clock.t, self.queue_ends_at)
        self.queue_ends_at = start + self.kernel_s

    def sync(self) -> None:
        self.syncs += 1
        if self.queue_ends_at > self.clock.t:
            self.clock.t = self.queue_ends_at
        self.clock.advance(self.sync_s)

    def side(self, name: str) -> Side:
        return Side(name, self.call, self.sync)


def test_clock_resolution_is_the_smallest_visible_step():
    clock = FakeClock(tick_s=1e-6, read_cost_s=3e-7)
    assert clock_resolution_s(clock) == pytest.approx(1e-6)


def test_serial_sample_pays_the_sync_every_call_async_once():
    clock = FakeClock()
    dev = FakeDevice(clock, launch_s=1e-6, kernel_s=10e-6, sync_s=5e-6)
    serial = run_sample(dev.side("a"), 100, SERIAL, clock)
    # per call: launch, then wait for the kernel, then the sync's own cost
    assert serial == pytest.approx(100 * (1e-6 + 10e-6 + 5e-6), rel=1e-6)
    dev.syncs = 0
    async_ = run_sample(dev.side("a"), 100, ASYNC, clock)
    assert dev.syncs == 2  # one to drain before, one after the loop
    # kernels queue back to back: 100 kernels plus one sync
    assert async_ == pytest.approx(100 * 10e-6 + 5e-6 + 1e-6, rel=0.02)


def test_calibration_sets_one_loop_count_from_the_fastest_side():
    clock = FakeClock()
    fast = FakeDevice(clock, launch_s=0, kernel_s=1e-6, sync_s=0)
    slow = FakeDevice(clock, launch_s=0, kernel_s=4e-6, sync_s=0)
    # a budget the slow side's samples fit in (15 rounds x 2 sides x 40 ms)
    settings = MeasureSettings(mode=ASYNC, min_sample_time_s=0.01, max_time_s=2.0)
    cal = calibrate([fast.side("fast"), slow.side("slow")], settings, clock, resolution_s=1e-9)
    assert cal.target_sample_time_s == pytest.approx(0.01)
    # the fastest side's sample reaches the target; the slow side's is 4x as long
    assert cal.loops * 1e-6 >= 0.01
    assert cal.loops * 1e-6 < 0.01 * 12  # not wildly past it (growth is capped)
    last_loops, last_times = cal.probes[-1]
    assert last_loops == cal.loops
    assert last_times["slow"] == pytest.approx(4 * last_times["fast"], rel=1e-6)


def test_calibration_target_respects_sync_cost_and_clock_resolution():
    clock = FakeClock()
    dev = FakeDevice(clock, launch_s=0, kernel_s=1e-6, sync_s=1e-3)
    settings = MeasureSettings(mode=ASYNC, min_sample_time_s=0.001)
    cal = calibrate([dev.side("a")], settings, clock, resolution_s=1e-9)
    # a 1 ms sync needs samples of at least 100 ms, or the closing sync dominates
    assert cal.sync_cost_s["a"] == pytest.approx(1e-3)
    assert cal.target_sample_time_s == pytest.approx(0.1)
    cal2 = calibrate([dev.side("a")], settings, clock, resolution_s=1e-3)
    assert cal2.target_sample_time_s == pytest.approx(1.0)  # 1000 ticks of a coarse clock


def test_calibration_keeps_one_loop_when_a_single_call_is_long_enough():
    clock = FakeClock()
    dev = FakeDevice(clock, launch_s=0, kernel_s=0.05, sync_s=0)
    cal = calibrate([dev.side("a")], MeasureSettings(min_sample_time_s=0.02), clock, 1e-9)
    assert cal.loops == 1


def _serial_pair(clock: FakeClock, fast_s: float, slow_s: float):
    fast = FakeDevice(clock, launch_s=0, kernel_s=fast_s, sync_s=0)
    slow = FakeDevice(clock, launch_s=0, kernel_s=slow_s, sync_s=0)
    return [fast.side("fast"), slow.side("slow")]


def _calibrated(per_call_s: tuple[float, float], warm_s: tuple[float, float] | None,
                **settings) -> tuple[Calibration, MeasureSettings]:
    """A serial calibration of a fast and a slow side costing per_call_s, started from
    warm-ups that saw warm_s per call (None: no warm-up figures)."""
    clock = FakeClock()
    settings = MeasureSettings(mode=SERIAL, min_sample_time_s=0.01, **settings)
    warm = None if warm_s is None else {
        "fast": WarmUp(calls=50, per_call_s=warm_s[0]),
        "slow": WarmUp(calls=5, per_call_s=warm_s[1])}
    return calibrate(_serial_pair(clock, *per_call_s), settings, clock, resolution_s=1e-9,
                     warm=warm), settings


def test_a_serial_calibration_starts_from_the_warm_ups_per_call_times_in_one_probe():
    cal, _ = _calibrated((1e-6, 4e-6), (1e-6, 4e-6), max_time_s=2.0)
    assert len(cal.probes) == 1                    # against 3 probes grown from one loop
    assert cal.loops == pytest.approx(CALIBRATION_HEADROOM * 0.01 / 1e-6, rel=1e-6)
    assert cal.probes[0][1]["fast"] >= 0.01 and not cal.capped_by_budget
    without, _ = _calibrated((1e-6, 4e-6), None, max_time_s=2.0)
    assert len(without.probes) > 1


def test_a_cap_the_warm_up_already_shows_needs_one_probe_to_believe():
    # MindSpore-like: the slow side 1000x slower per call; its sample share is 1.2 s / 30
    cal, settings = _calibrated((1e-6, 1e-3), (1e-6, 1e-3))
    cap_s = settings.max_time_s / (settings.rounds * 2)
    assert cal.capped_by_budget and len(cal.probes) == 1
    assert cal.loops == int(cap_s / (1e-3 * CALIBRATION_HEADROOM))
    old, _ = _calibrated((1e-6, 1e-3), None)
    assert old.capped_by_budget and old.loops == cal.loops and len(old.probes) >= 3


def test_a_warm_up_that_overstates_the_per_call_time_still_reaches_the_target():
    # a call whose single-call time (with its sync) is 3x its time inside a loop: the first
    # probe falls short and calibration grows on from it, as without the warm-up
    cal, _ = _calibrated((1e-6, 2e-6), (3e-6, 6e-6), max_time_s=2.0)
    assert cal.probes[-1][1]["fast"] >= 0.01 and len(cal.probes) == 2


def test_an_async_calibration_does_not_start_from_single_calls():
    # one async call and its sync cost launch + kernel + sync: nothing like a queued loop's
    clock = FakeClock()
    dev = FakeDevice(clock, launch_s=1e-6, kernel_s=1e-6, sync_s=50e-6)
    settings = MeasureSettings(mode=ASYNC, min_sample_time_s=0.01)
    warmed = calibrate([dev.side("a")], settings, clock, resolution_s=1e-9,
                       warm={"a": WarmUp(calls=100, per_call_s=52e-6)})
    cold = calibrate([dev.side("a")], settings, clock, resolution_s=1e-9)
    assert [p[0] for p in warmed.probes] == [p[0] for p in cold.probes]


def test_warm_up_reports_its_steady_per_call_time():
    from opbench.runner.measure import warm_up
    clock = FakeClock()
    dev = FakeDevice(clock, launch_s=0, kernel_s=2e-4, sync_s=0)
    done = warm_up(dev.side("a"), SERIAL, clock, warmup_time_s=0.01)
    assert done.calls >= 0.01 / 2e-4 and done.per_call_s == pytest.approx(2e-4, rel=1e-6)


def test_interleaved_order_alternates():
    assert interleaved_order(["a", "b"], 4) == (("a", "b"), ("b", "a"), ("a", "b"), ("b", "a"))


def test_measure_recovers_true_per_call_times_and_keeps_every_sample():
    clock = FakeClock()
    ref = FakeDevice(clock, launch_s=0, kernel_s=2e-6, sync_s=0)
    tgt = FakeDevice(clock, launch_s=0, kernel_s=5e-6, sync_s=0)
    settings = MeasureSettings(mode=ASYNC, rounds=9, min_sample_time_s=0.005,
                               warmup_time_s=0.001)
    m = measure([ref.side("torch"), tgt.side("mindspore")], settings, clock, resolution_s=1e-9)
    assert m.rounds == 9 and len(m.per_call_s["torch"]) == 9
    assert all(v == pytest.approx(2e-6, rel=1e-6) for v in m.per_call_s["torch"])
    assert all(v == pytest.approx(5e-6, rel=1e-6) for v in m.per_call_s["mindspore"])
    assert m.order[0] == ("torch", "mindspore") and m.order[1] == ("mindspore", "torch")
    assert m.warmup_calls["torch"] >= MIN_WARMUP_CALLS


def test_serial_and_async_differ_when_sync_dominates():
    """The effect seen on MindSpore CPU: a cheap op behind a costly sync."""
    clock = FakeClock()
    dev = FakeDevice(clock, launch_s=1e-6, kernel_s=1e-6, sync_s=100e-6)
    common = dict(rounds=7, min_sample_time_s=0.01, warmup_time_s=0.001)
    s = measure([dev.side("ms")], MeasureSettings(mode=SERIAL, **common), clock, 1e-9)
    a = measure([dev.side("ms")], MeasureSettings(mode=ASYNC, **common), clock, 1e-9)
    serial_s, async_s = s.per_call_s["ms"][0], a.per_call_s["ms"][0]
    assert serial_s == pytest.approx(102e-6, rel=0.02)
    assert async_s < 3e-6
    assert serial_s / async_s > 25


def test_rounds_shrink_to_the_budget_but_not_below_the_minimum():
    clock = FakeClock()
    dev = FakeDevice(clock, launch_s=0, kernel_s=0.5, sync_s=0)
    settings = MeasureSettings(rounds=15, min_sample_time_s=0.01, warmup_time_s=0, max_time_s=2)
    m = measure([dev.side("a"), FakeDevice(clock, 0, 0.5, 0).side("b")], settings, clock, 1e-9)
    assert m.rounds == MIN_ROUNDS
    assert any("rounds cut" in n for n in m.notes)


def test_measure_rejects_duplicate_names():
    clock = FakeClock()
    dev = FakeDevice(clock, 0, 1e-6, 0)
    with pytest.raises(ValueError):
        measure([dev.side("a"), dev.side("a")], MeasureSettings(), clock, 1e-9)


def test_settings_reject_unknown_mode():
    with pytest.raises(ValueError, match="mode"):
        MeasureSettings(mode="fast")


def test_overhead_reports_dispatch_floor_in_both_modes_and_sync_cost():
    clock = FakeClock()
    dev = FakeDevice(clock, launch_s=2e-6, kernel_s=1e-6, sync_s=50e-6)
    o = measure_overhead("ms", dev.call, dev.sync, clock, min_sample_time_s=0.002, rounds=3,
                         resolution_s=1e-9)
    assert o.sync_cost_s == pytest.approx(50e-6)
    assert o.dispatch_floor_serial_s == pytest.approx(2e-6 + 1e-6 + 50e-6 - 1e-6, rel=0.05)
    assert o.dispatch_floor_async_s == pytest.approx(2e-6, rel=0.05)


def test_a_clock_that_never_moves_is_an_error_not_a_hang():
    with pytest.raises(RuntimeError, match="does not advance"):
        clock_resolution_s(lambda: 1.0, probes=1)


def test_loop_count_is_capped_when_one_side_is_orders_of_magnitude_slower():
    """torch at 1 us against MindSpore at 3 ms per serial call: the shared loop count that
    gives torch a 20 ms sample would make every MindSpore sample last a minute."""
    clock = FakeClock()
    fast = FakeDevice(clock, launch_s=0, kernel_s=1e-6, sync_s=0)
    slow = FakeDevice(clock, launch_s=0, kernel_s=3e-3, sync_s=0)
    settings = MeasureSettings(rounds=10, min_sample_time_s=0.02, warmup_time_s=0,
                               max_time_s=2.0)
    m = measure([fast.side("torch"), slow.side("mindspore")], settings, clock, 1e-9)
    assert m.calibration.capped_by_budget
    # each slow sample within its share of the budget: 2 s / (10 rounds x 2 sides)
    assert max(m.per_call_s["mindspore"]) * m.loops <= 0.1 + 1e-9
    assert m.loops >= 1
    assert any("held at" in n for n in m.notes)
    # the per-call times are still exact
    assert m.per_call_s["torch"][0] == pytest.approx(1e-6)
    assert m.per_call_s["mindspore"][0] == pytest.approx(3e-3)
    # and the whole timed part respects the budget
    total = sum(sum(v) * m.loops for v in m.per_call_s.values())
    assert total <= settings.max_time_s * 1.01


def test_one_burst_in_the_first_probe_does_not_pin_the_loop_count_at_one():
    """Seen on a loaded 2-core machine: the first probe of a 3 ms op took 0.5 s, and the
    budget cap computed from it fixed every sample at a single call."""
    clock = FakeClock()
    slow = FakeDevice(clock, launch_s=0, kernel_s=3e-3, sync_s=0)
    fast = FakeDevice(clock, launch_s=0, kernel_s=1e-6, sync_s=0)
    calls = {"n": 0}

    def bursty_call():
        calls["n"] += 1
        slow.call()
        if calls["n"] == 1:          # the calibration's first probe (warm-up is off)
            clock.advance(0.5)

    settings = MeasureSettings(rounds=10, min_sample_time_s=0.02, warmup_time_s=0,
                               max_time_s=2.0)
    cal = calibrate([fast.side("torch"), Side("mindspore", bursty_call, slow.sync)], settings,
                    clock, resolution_s=1e-9)
    # 2 s / (10 rounds x 2 sides) = 0.1 s per sample at 3 ms per call: ~33 loops
    assert cal.loops > 10


def _jittery_side(clock: FakeClock, name: str, per_call_s: float, spread: float,
                  seed: int = 7) -> Side:
    """A side whose calls cost per_call_s x U(1, 1 + spread): the calibration's best
    per-call time is its floor, and longer samples average above it, as real calls do."""
    import random

    rng = random.Random(seed)
    return Side(name, lambda: clock.advance(per_call_s * (1 + spread * rng.random())),
                lambda: None)


def test_a_budget_capped_sample_a_little_over_its_share_keeps_its_rounds():
    """Bug: a measurement spread over passes of 2 rounds (`--for-gate`: 40 rounds in 20
    passes, 0.3 s per pass) had every budget-capped pass cut to 1 round, because the cap
    came from the best per-call time, the samples ran 7-35% above it, and int(1.97) is 1.
    MindSpore's dispatch-bound instances got 20 rounds instead of 40."""
    clock = FakeClock()
    settings = MeasureSettings(rounds=2, min_rounds=1, min_sample_time_s=0.01,
                               warmup_time_s=0, max_time_s=0.3)
    fast = FakeDevice(clock, launch_s=0, kernel_s=1e-6, sync_s=0).side("torch")
    slow = _jittery_side(clock, "mindspore", 3e-3, spread=0.3)
    m = measure([fast, slow], settings, clock, 1e-9)
    assert m.calibration.capped_by_budget
    assert m.rounds == 2
    assert not any("rounds cut" in n for n in m.notes)
    # the budget is still kept, give or take its slack
    total = sum(sum(v) * m.loops for v in m.per_call_s.values())
    assert total <= settings.max_time_s * BUDGET_SLACK


def test_rounds_are_sized_from_the_median_probe_not_one_burst():
    cal = Calibration(loops=20, target_sample_time_s=0.01, clock_resolution_s=1e-9,
                      sync_cost_s={"a": 0.0, "b": 0.0},
                      probes=((1, {"a": 1e-6, "b": 3e-3}), (20, {"a": 2e-5, "b": 0.06}),
                              (20, {"a": 2e-5, "b": 0.5}), (20, {"a": 2e-5, "b": 0.062})),
                      capped_by_budget=True)
    assert expected_sample_s(cal) == pytest.approx(0.062)
    settings = MeasureSettings(rounds=2, min_rounds=1, max_time_s=0.3)
    assert rounds_within_budget(settings, expected_sample_s(cal), 2) == 2
    # a real overrun still cuts: samples twice their share
    assert rounds_within_budget(settings, 0.15, 2) == 1


def test_times_slower_never_rounds_a_real_gap_down_to_1x():
    from opbench.runner.measure import times_slower

    assert times_slower(1.3e-3, 1e-3) == "1.3x"
    assert times_slower(1.04e-3, 1e-3) == "1.04x"
    assert times_slower(13.4e-3, 1e-3) == "13x"

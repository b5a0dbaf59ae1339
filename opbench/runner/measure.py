"""Timing protocol: warm-up, one shared loop count, interleaved rounds, serial or async.

Everything a measurement needs comes through arguments (the callables, the sync, the
clock, the settings), so the protocol is tested with a fake clock, deterministically.
No printing, no framework imports: a framework is just a `Side` (a call and its sync).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence, Union, runtime_checkable

from opbench.config import (
    ASYNC,
    DEFAULT_MIN_SAMPLE_TIME_S,
    DEFAULT_WARMUP_TIME_S,
    MODES,
    SERIAL,
    MeasureSettings,
)

Clock = Callable[[], float]
# Called before every timed sample: waits until the other side's leftover work (spinning or
# queued threads) is off the cores, and returns what it saw (opbench/quiesce.py). None: no
# wait (the fake-clock tests, or a user who turned it off).
Settle = Callable[[], Any]


# A sample must last far longer than the clock's resolution, or quantisation error shows up
# in the ratio: 1000 ticks keeps it under 0.1%.
RESOLUTION_FACTOR = 1000
# ... and far longer than one sync, so in async mode the single closing sync (which is not
# part of the work being measured) adds at most ~1% to a sample.
SYNC_COST_FACTOR = 100
MIN_WARMUP_CALLS = 3
# Some operators settle only after dozens of calls. Measured here: MindSpore's mint.matmul
# of 1x768 @ 768x768 took 27 ms, then ~250 us with a ~3 ms spike every third call for ~30
# calls, then a steady ~190 us. So warm-up goes on, past its time, until the last
# STEADY_CALLS calls hold no call above WARMUP_SPIKE_FACTOR times their median, for at
# most MAX_WARMUP_FACTOR times the warm-up time (an op that never steadies is left to the
# cluster detection, opbench/verdicts/interference.py).
STEADY_CALLS = 5
WARMUP_SPIKE_FACTOR = 1.5
MAX_WARMUP_FACTOR = 6.0
# Calibration grows the loop count by at most this factor per step, so one mis-timed
# probe (a burst) cannot blow the sample length up by orders of magnitude.
MAX_GROWTH_PER_STEP = 10.0
# Aim a bit above the target so ordinary jitter does not put samples under it.
CALIBRATION_HEADROOM = 1.2
# A clock that shows no change in this many reads is broken (or a fake that needs time
# advanced by work); fail rather than spin forever.
MAX_CLOCK_READS = 1_000_000
# The budget cap on the loop count is only believed after this many probes agree; a single
# probe can be a burst.
CAP_CONFIRM_PROBES = 3
ROUNDS_CUT_NOTE = "rounds cut from"
# The budget is a target, not a wall: rounds are only cut when the samples overrun their
# share by more than this. Flooring the affordable rounds exactly made a sample 1% over its
# share halve the rounds of a measurement spread over passes of 2 rounds (measured: 6 of 18
# `--for-gate` instances cut from 40 to 20 rounds, their intervals widened to +-8-12%).
BUDGET_SLACK = 1.25
# Untimed calls of a side right before each of its samples that follows the other side's
# sample, so it starts from its own cache state rather than the other side's: calls for at
# least REWARM_TIME_S, at least one, at most one sample's worth. Measured here (torch's bias
# add, 1x128x4096 float32, after 4 MindSpore calls of the same op and an idle-wait; median
# per-call times over 12 repeats): call 1 took 3.9x its steady time, call 2 1.5x, calls 3-20
# 1.1-1.2x, and only from ~1.5 ms of calls on was it steady. One untimed call left torch's
# whole 10 ms sample 20-45% slow after MindSpore's, and the order-effect test flagged it.
REWARM_TIME_S = 0.003


@dataclass(frozen=True)
class Side:
    """One framework's callable under test, with the sync that waits for its queued work."""

    name: str
    call: Callable[[], Any]
    sync: Callable[[], None]


@runtime_checkable
class RemoteSide(Protocol):
    """A side measured in another process (runner/side_server.py): each primitive below runs
    there on its own clock, whole, and only its figure comes back, so the parent keeps the
    schedule (which side, when, after which settle) while no sample pays for the request."""

    name: str

    def sample(self, loops: int, mode: str, rewarm_first: bool = False
               ) -> tuple[float, float | None]:
        """(seconds for `loops` calls, the side process's CPU seconds during them or None),
        after a re-warm (rewarm()) in the same request when `rewarm_first`."""
        ...

    def warm_up(self, mode: str, warmup_time_s: float) -> "WarmUp": ...

    def sync_cost(self) -> float: ...


AnySide = Union[Side, RemoteSide]


@dataclass(frozen=True)
class WarmUp:
    """What a side's warm-up did: how many calls, and the median time of its last
    STEADY_CALLS calls (one call and its sync each), where calibration starts from."""

    calls: int
    per_call_s: float


@dataclass(frozen=True)
class Calibration:
    loops: int
    target_sample_time_s: float
    clock_resolution_s: float
    sync_cost_s: dict[str, float]
    probes: tuple[tuple[int, dict[str, float]], ...]  # (loops, {side: sample seconds}) tried
    capped_by_budget: bool = False   # the slowest side's sample time, not the target, set loops


@dataclass(frozen=True)
class MeasuredRounds:
    """Raw result of one interleaved measurement (one share of a measurement's rounds; the
    measurement itself is the record results/records.py types as Measurement).
    per_call_s[side][i] is round i's mean time per call; order[i] is the order the sides ran
    in round i."""

    mode: str
    loops: int
    per_call_s: dict[str, tuple[float, ...]]
    order: tuple[tuple[str, ...], ...]
    warmup_calls: dict[str, int]
    calibration: Calibration
    rounds_requested: int
    notes: tuple[str, ...] = field(default_factory=tuple)
    # What settle() returned before each round's sample of each side (None without one).
    settled: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    # The measuring process's CPU seconds during each round's sample of each side (all its
    # threads: a framework's own helper threads too); empty without a CPU clock.
    cpu_s: dict[str, tuple[float, ...]] = field(default_factory=dict)

    @property
    def rounds(self) -> int:
        return len(self.order)


def clock_resolution_s(clock: Clock = time.perf_counter, probes: int = 50) -> float:
    """Smallest non-zero step the clock shows (perf_counter's advertised resolution is
    often a nominal 1 ns; what matters is what consecutive reads actually return)."""
    smallest = math.inf
    for _ in range(probes):
        t0 = clock()
        t1 = clock()
        reads = 0
        while t1 == t0:
            reads += 1
            if reads > MAX_CLOCK_READS:
                raise RuntimeError("the clock does not advance")
            t1 = clock()
        smallest = min(smallest, t1 - t0)
    return smallest


def run_sample(side: AnySide, loops: int, mode: str, clock: Clock) -> float:
    """Seconds for `loops` calls. The queue is drained first so earlier work never leaks in.
    serial: sync after every call (latency, what a user waiting on each result sees).
    async: launch all calls, sync once (throughput, what a training loop sees)."""
    if isinstance(side, RemoteSide):
        return side.sample(loops, mode)[0]
    call, sync = side.call, side.sync
    sync()
    if mode == SERIAL:
        t0 = clock()
        for _ in range(loops):
            call()
            sync()
        return clock() - t0
    t0 = clock()
    for _ in range(loops):
        call()
    sync()
    return clock() - t0


def sample_with_cpu(side: Side, loops: int, mode: str, clock: Clock,
                    cpu_clock: Clock) -> tuple[float, float]:
    """run_sample's seconds and the CPU seconds (cpu_clock: this process's, all threads)
    the sample took; earlier work is drained before the CPU clock is read."""
    side.sync()
    cpu_start = cpu_clock()
    seconds = run_sample(side, loops, mode, clock)
    return seconds, cpu_clock() - cpu_start


def rewarm(side: Side, mode: str, clock: Clock, max_calls: int,
           min_time_s: float | None = None) -> int:
    """Untimed calls until min_time_s has passed (at least one, at most max_calls): the
    caches, TLBs and predictors the other side's sample took over are the side's own again.
    Returns the number of calls."""
    min_time_s = REWARM_TIME_S if min_time_s is None else min_time_s
    start = clock()
    calls = 0
    while True:
        run_sample(side, 1, mode, clock)
        calls += 1
        if calls >= max(1, max_calls) or clock() - start >= min_time_s:
            return calls


def sync_cost_s(sync: Callable[[], None], clock: Clock, repeats: int = 200) -> float:
    """Median cost of a sync on an idle queue, from `repeats` single timings."""
    sync()
    costs = []
    for _ in range(repeats):
        t0 = clock()
        sync()
        costs.append(clock() - t0)
    costs.sort()
    return costs[len(costs) // 2]


def side_sync_cost_s(side: AnySide, clock: Clock) -> float:
    """sync_cost_s of a side, taken where the side lives."""
    if isinstance(side, RemoteSide):
        return side.sync_cost()
    return sync_cost_s(side.sync, clock)


def _steady(call_times_s: Sequence[float]) -> bool:
    """No spike among the last STEADY_CALLS calls (see WARMUP_SPIKE_FACTOR)."""
    if len(call_times_s) < STEADY_CALLS:
        return False
    last = sorted(call_times_s[-STEADY_CALLS:])
    return last[-1] <= WARMUP_SPIKE_FACTOR * last[len(last) // 2]


def warm_up(side: AnySide, mode: str, clock: Clock, warmup_time_s: float) -> WarmUp:
    """Run the call until it has run MIN_WARMUP_CALLS times and for warmup_time_s, and
    then on until its last calls are steady (no spike), at most MAX_WARMUP_FACTOR times
    warmup_time_s in all. Returns how many calls that took and their steady per-call time."""
    if isinstance(side, RemoteSide):
        return side.warm_up(mode, warmup_time_s)
    times: list[float] = []
    start = clock()
    while True:
        times.append(run_sample(side, 1, mode, clock))
        elapsed = clock() - start
        if len(times) >= MIN_WARMUP_CALLS and elapsed >= warmup_time_s and (
                _steady(times) or elapsed >= MAX_WARMUP_FACTOR * warmup_time_s):
            last = sorted(times[-STEADY_CALLS:])
            return WarmUp(calls=len(times), per_call_s=last[len(last) // 2])


def sample_time_cap_s(settings: MeasureSettings, n_sides: int) -> float:
    """The longest a single sample may last: its share of the instance's time budget."""
    return settings.max_time_s / (settings.rounds * n_sides)


def calibrate(sides: Sequence[AnySide], settings: MeasureSettings, clock: Clock,
              resolution_s: float | None = None, settle: Settle | None = None,
              warm: Mapping[str, WarmUp] | None = None) -> Calibration:
    """One loop count shared by all sides, so every side's sample covers the same work and
    the ratio of samples is the ratio of per-call times. The count is set by the *fastest*
    side: its sample must last min_sample_time_s, RESOLUTION_FACTOR clock ticks and
    SYNC_COST_FACTOR syncs; slower sides then last longer, which only helps them.

    When the sides differ by orders of magnitude (MindSpore CPU serial calls cost ~1000x a
    torch call here) that count would make the slow side's samples last minutes, so the
    count is also capped so the *slowest* sample stays within its share of the time budget;
    the fast side's samples are then shorter than the target, and `capped_by_budget` says so.

    With the sides' warm-ups (`warm`) in serial mode, the first probe is sized from their
    steady per-call times instead of one call: a serial sample is calls each followed by
    its sync, as the warm-up's calls were, so usually that one probe settles the count. And
    a cap the warm-up's steady calls already show needs one probe to confirm, not
    CAP_CONFIRM_PROBES (those calls are STEADY_CALLS agreeing samples themselves). Measured
    here (2026-11-26, cProfile of 28 measurements in one process): calibration took 310 ms a
    measurement, 194 ms of it the settle before each of ~9 probes, as much as a first
    process's share of 5 rounds.
    """
    if resolution_s is None:
        resolution_s = clock_resolution_s(clock)
    syncs = {s.name: side_sync_cost_s(s, clock) for s in sides}
    target = max(settings.min_sample_time_s, RESOLUTION_FACTOR * resolution_s,
                 SYNC_COST_FACTOR * max(syncs.values()))
    cap_s = sample_time_cap_s(settings, len(sides))
    loops = 1
    capped = False
    probes: list[tuple[int, dict[str, float]]] = []
    best_per_call_s = {s.name: math.inf for s in sides}
    probes_at_cap = 0
    if warm is not None and settings.mode == SERIAL:
        # (async samples launch many calls per sync: one call with its sync says little)
        best_per_call_s = {s.name: warm[s.name].per_call_s for s in sides}
        loops, at_cap = _loops_from_per_call(best_per_call_s, target, cap_s,
                                             settings.max_loops)
        if at_cap:
            probes_at_cap = CAP_CONFIRM_PROBES - 1
    while True:
        times = {}
        for s in sides:
            if settle is not None:
                settle()   # a probe inflated by the other side's leftovers mis-sizes loops
            times[s.name] = run_sample(s, loops, settings.mode, clock)
        probes.append((loops, times))
        for name, t in times.items():
            best_per_call_s[name] = min(best_per_call_s[name], t / loops)
        fastest = min(times.values())
        if fastest >= target or loops >= settings.max_loops:
            break
        # Scale towards the target from what this probe showed, within the growth cap.
        growth = CALIBRATION_HEADROOM * target / fastest if fastest > 0 else MAX_GROWTH_PER_STEP
        growth = min(max(growth, 2.0), MAX_GROWTH_PER_STEP)
        wanted = min(settings.max_loops, max(loops + 1, int(math.ceil(loops * growth))))
        # The cap uses each side's best per-call time over all probes: one probe hit by a
        # burst (a first call, a preempted thread) must not pin the loop count at 1.
        slowest_per_call_s = max(best_per_call_s.values())
        affordable = (_affordable_loops(cap_s, slowest_per_call_s)
                      if slowest_per_call_s > 0 else wanted)
        if affordable <= loops:
            probes_at_cap += 1
            if probes_at_cap >= CAP_CONFIRM_PROBES:
                capped = True
                break
            continue  # probe the same loop count again before believing the cap
        loops = min(wanted, affordable)
    return Calibration(loops=loops, target_sample_time_s=target, clock_resolution_s=resolution_s,
                       sync_cost_s=syncs, probes=tuple(probes), capped_by_budget=capped)


def _loops_from_per_call(per_call_s: Mapping[str, float], target_s: float, cap_s: float,
                         max_loops: int) -> tuple[int, bool]:
    """The loop count that puts the fastest side's sample at the target (with headroom),
    held so the slowest side's stays within cap_s; and whether the cap held it."""
    fastest, slowest = min(per_call_s.values()), max(per_call_s.values())
    if not fastest > 0:
        return 1, False
    wanted = min(max_loops, max(1, math.ceil(CALIBRATION_HEADROOM * target_s / fastest)))
    affordable = max(1, _affordable_loops(cap_s, slowest))
    return min(wanted, affordable), affordable < wanted


def _affordable_loops(cap_s: float, slowest_per_call_s: float) -> int:
    """The most loops the slowest side's sample can take within cap_s, aimed below it by
    the calibration headroom: its per-call time is a floor, and the timed rounds' samples
    run above it (20-35% for MindSpore's dispatch-bound CPU calls here)."""
    return int(cap_s / (slowest_per_call_s * CALIBRATION_HEADROOM))


def interleaved_order(names: Sequence[str], rounds: int,
                      first_round: int = 0) -> tuple[tuple[str, ...], ...]:
    """A B, B A, A B, ...: alternating which side goes first cancels any first/second
    position effect (cache state, turbo decay) and linear drift within a pair of rounds.
    first_round continues the alternation of earlier rounds (another pass or process), so
    a measurement pieced together from shares of a few rounds each stays balanced."""
    forward = tuple(names)
    backward = tuple(reversed(names))
    return tuple(forward if i % 2 == 0 else backward
                 for i in range(first_round, first_round + rounds))


def expected_sample_s(calibration: Calibration) -> float:
    """How long the slowest side's sample will last at the calibrated loop count: the median
    over the probes run at that count (a budget-capped calibration runs several), so one
    probe hit by a burst does not cut the rounds."""
    at_final = sorted(max(times.values()) for loops, times in calibration.probes
                      if loops == calibration.loops)
    if not at_final:   # cannot happen with calibrate(), whose last probe runs at its count
        return max(calibration.probes[-1][1].values())
    return at_final[(len(at_final) - 1) // 2]


def rounds_within_budget(settings: MeasureSettings, sample_time_s: float, n_sides: int) -> int:
    """Shrink the round count so the timed part fits max_time_s (give or take BUDGET_SLACK),
    never below min_rounds (MIN_ROUNDS by default: fewer rounds cannot give a 95% interval)
    nor above what was asked."""
    if sample_time_s <= 0:
        return settings.rounds
    affordable = int(settings.max_time_s * BUDGET_SLACK / (sample_time_s * n_sides))
    return max(min(settings.rounds, settings.min_rounds), min(settings.rounds, affordable))


def _check_distinct(sides: Sequence[AnySide]) -> None:
    if len({s.name for s in sides}) != len(sides) or not sides:
        raise ValueError("sides need distinct names")


@dataclass(frozen=True)
class _Rounds:
    per_call_s: dict[str, tuple[float, ...]]
    order: tuple[tuple[str, ...], ...]
    settled: dict[str, tuple[Any, ...]]
    cpu_s: dict[str, tuple[float, ...]]


def _interleaved_rounds(sides: Sequence[AnySide], loops: int, rounds: int, mode: str,
                        clock: Clock, settle: Settle | None = None, first_round: int = 0,
                        cpu_clock: Clock | None = None) -> _Rounds:
    """`rounds` interleaved rounds (interleaved_order) of one sample per side at `loops`
    calls each: per-call seconds by side, the order the samples ran in, what settle()
    returned before each sample and, with a `cpu_clock` (the process's CPU time), the CPU
    seconds each sample took."""
    by_name = {s.name: s for s in sides}
    per_call: dict[str, list[float]] = {s.name: [] for s in sides}
    settled: dict[str, list[Any]] = {s.name: [] for s in sides}
    cpu: dict[str, list[float]] = {s.name: [] for s in sides}
    order = interleaved_order([s.name for s in sides], rounds, first_round)
    previous = None
    for round_order in order:
        for name in round_order:
            # Wait only where the side changes: the point is to keep one side's leftovers
            # out of the *other* side's sample. A side's own leftovers before its next
            # sample are part of its steady state (MindSpore's ActorThread spins ~200 ms
            # between its own matmuls too), and waiting there doubled the cost.
            switch = settle is not None and name != previous
            settled[name].append(settle() if switch else None)
            previous = name
            side = by_name[name]
            # Untimed calls first where the side changes (REWARM_TIME_S): the other side's
            # sample has just filled the caches and TLBs with its own data, which no
            # idle-wait can see.
            if isinstance(side, RemoteSide):
                # Re-warm, sample and its CPU time in one request, back to back in the side's
                # process: a round trip between them would let that process sleep on its
                # socket after the re-warm, and the sample start from a cold wake-up.
                seconds, cpu_seconds = side.sample(loops, mode, rewarm_first=switch)
            else:
                if switch:
                    rewarm(side, mode, clock, max_calls=loops)
                if cpu_clock is None:
                    seconds, cpu_seconds = run_sample(side, loops, mode, clock), None
                else:
                    seconds, cpu_seconds = sample_with_cpu(side, loops, mode, clock, cpu_clock)
            per_call[name].append(seconds / loops)
            if cpu_clock is not None and cpu_seconds is not None:
                cpu[name].append(cpu_seconds)
    return _Rounds({k: tuple(v) for k, v in per_call.items()}, order,
                   {k: tuple(v) for k, v in settled.items()},
                   {k: tuple(v) for k, v in cpu.items() if v})


def measure(sides: Sequence[AnySide], settings: MeasureSettings,
            clock: Clock = time.perf_counter, resolution_s: float | None = None,
            settle: Settle | None = None, cpu_clock: Clock | None = None) -> MeasuredRounds:
    """The whole protocol: warm-up each side, calibrate one loop count, then interleaved
    rounds, each sample after settle() (when given). Every raw per-round sample is kept,
    with its CPU time when `cpu_clock` (time.process_time) is given."""
    _check_distinct(sides)
    warmups = {s.name: warm_up(s, settings.mode, clock, settings.warmup_time_s) for s in sides}
    calibration = calibrate(sides, settings, clock, resolution_s, settle, warm=warmups)
    slowest_sample_s = expected_sample_s(calibration)
    rounds = rounds_within_budget(settings, slowest_sample_s, len(sides))
    notes = []
    if rounds < settings.rounds:
        notes.append(f"{ROUNDS_CUT_NOTE} {settings.rounds} to {rounds} to stay within "
                     f"{settings.max_time_s:g} s")
    if calibration.loops >= settings.max_loops:
        notes.append(f"loop count capped at {settings.max_loops}")
    if calibration.capped_by_budget:
        times = calibration.probes[-1][1]
        fast = min(times, key=times.get)
        notes.append(
            f"loop count held at {calibration.loops} by the time budget: the slowest side is "
            f"{times_slower(max(times.values()), min(times.values()))} slower per call, so "
            f"{fast}'s samples last {min(times.values()) * 1e3:.3g} ms instead of "
            f"{calibration.target_sample_time_s * 1e3:.3g} ms (coarser, but the gap dwarfs it)")
    done = _interleaved_rounds(sides, calibration.loops, rounds, settings.mode, clock, settle,
                               cpu_clock=cpu_clock)
    return MeasuredRounds(mode=settings.mode, loops=calibration.loops,
                          per_call_s=done.per_call_s, order=done.order,
                          warmup_calls={name: w.calls for name, w in warmups.items()},
                          calibration=calibration,
                          rounds_requested=settings.rounds, notes=tuple(notes),
                          settled=done.settled, cpu_s=done.cpu_s)


def times_slower(slow_s: float, fast_s: float) -> str:
    """"13x", "1.3x", "1.04x": below 10x three significant digits, so a real gap never
    reads "1x"."""
    factor = slow_s / max(fast_s, 1e-12)
    return f"{factor:.0f}x" if factor >= 10 else f"{factor:.3g}x"


@dataclass(frozen=True)
class MoreRounds:
    """Rounds added to an existing measurement in a later pass (same loop count)."""

    per_call_s: dict[str, tuple[float, ...]]
    order: tuple[tuple[str, ...], ...]
    warmup_calls: dict[str, int]
    settled: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    cpu_s: dict[str, tuple[float, ...]] = field(default_factory=dict)


def more_rounds(sides: Sequence[AnySide], mode: str, loops: int, rounds: int,
                clock: Clock = time.perf_counter,
                warmup_time_s: float = DEFAULT_WARMUP_TIME_S,
                settle: Settle | None = None, first_round: int = 0,
                cpu_clock: Clock | None = None) -> MoreRounds:
    """Another pass of an earlier measurement: warm up (the callables are freshly prepared),
    then `rounds` interleaved rounds at the loop count calibrated the first time, so every
    sample of the measurement covers the same work and the rounds can be pooled."""
    _check_distinct(sides)
    if loops < 1 or rounds < 1:
        raise ValueError("loops and rounds must be >= 1")
    warmups = {s.name: warm_up(s, mode, clock, warmup_time_s).calls for s in sides}
    done = _interleaved_rounds(sides, loops, rounds, mode, clock, settle, first_round,
                               cpu_clock)
    return MoreRounds(per_call_s=done.per_call_s, order=done.order, warmup_calls=warmups,
                      settled=done.settled, cpu_s=done.cpu_s)


@dataclass(frozen=True)
class MeasuredOverhead:
    """What a framework costs before any kernel work, as one process measured it (the run
    keeps it per side as results/records.py's Overhead): the user can tell "kernel slower"
    from "per-call overhead" by comparing an op's time with these."""

    framework: str
    sync_cost_s: float
    dispatch_floor_serial_s: float   # trivial op + sync, per call
    dispatch_floor_async_s: float    # trivial op launched in a loop, per call
    first_call_serial_s: float       # one trivial op + sync on a cold-ish queue


def measure_overhead(name: str, trivial: Callable[[], Any], sync: Callable[[], None],
                     clock: Clock = time.perf_counter,
                     min_sample_time_s: float = DEFAULT_MIN_SAMPLE_TIME_S,
                     rounds: int = 7, resolution_s: float | None = None) -> MeasuredOverhead:
    """Dispatch floor of `name` in both modes (median over rounds) and its sync cost."""
    side = Side(name, trivial, sync)
    sync()
    t0 = clock()
    trivial()
    sync()
    first = clock() - t0
    floors = {}
    for mode in MODES:
        settings = MeasureSettings(mode=mode, rounds=rounds, min_sample_time_s=min_sample_time_s,
                                   warmup_time_s=min_sample_time_s)
        m = measure([side], settings, clock, resolution_s)
        samples = sorted(m.per_call_s[name])
        floors[mode] = samples[len(samples) // 2]
    return MeasuredOverhead(framework=name, sync_cost_s=sync_cost_s(sync, clock),
                    dispatch_floor_serial_s=floors[SERIAL], dispatch_floor_async_s=floors[ASYNC],
                    first_call_serial_s=first)

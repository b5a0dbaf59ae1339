"""Wait until no other thread of the measuring processes is using a core, before a sample.

Why: a framework's work does not end when its call returns. Measured here (2 cores,
`/proc/self/task/*/schedstat`): after 20 ms of 2-thread `mint.sum` calls with blocking
launches, MindSpore's `ActorThread_0` kept spinning on a core for ~200 ms; with queued
launches its `backend_queue` thread ran on after the sync. A torch sample taken in that
window shares its cores with that spinning and reads 5-1000x slow. So before every sample
the measuring thread waits (bounded) until every *other* thread of the watched processes
has been idle for a short window, and the wait is recorded next to the samples.

The decision is pure (`wait_until_quiet` takes the probe, clock and sleep as arguments and
is tested with a fake clock); `ThreadActivityProbe` reads Linux's per-thread CPU time.
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterable

__all__ = ["QUIET_WINDOW_S", "MAX_QUIESCE_S", "IDLE_CPU_FRACTION", "QuiesceResult",
           "ThreadActivityProbe", "wait_until_quiet", "Quiescer"]

# Other threads count as idle when, over this window, they used less than IDLE_CPU_FRACTION
# of one core between them. 2 ms is several poll intervals yet far below a 10-20 ms sample;
# a spinning thread uses ~100% of a core and shows up in a single interval.
QUIET_WINDOW_S = 0.002
# A background thread that wakes briefly (a heartbeat, a timer) may use a few percent.
IDLE_CPU_FRACTION = 0.05
# How long to poll between reads of the threads' CPU time.
POLL_INTERVAL_S = 0.0005
# The wait is bounded: past this the sample is taken anyway and the wait is recorded as
# timed out, so a framework that never goes idle cannot stall a run; the detection step
# (opbench/verdicts/interference.py) then judges whether its activity reached the samples. Longer
# than the ~200 ms spin measured above, so that spin is waited out.
MAX_QUIESCE_S = 0.3

ActivityProbe = Callable[[], int]   # total CPU nanoseconds of the watched threads so far


@dataclass(frozen=True)
class QuiesceResult:
    waited_s: float       # how long the wait lasted (one quiet window at least)
    timed_out: bool       # MAX_QUIESCE_S passed without a quiet window
    busy_cpu_s: float     # CPU time the other threads used while we waited


def wait_until_quiet(probe: ActivityProbe, clock: Callable[[], float],
                     sleep: Callable[[float], None], *, window_s: float = QUIET_WINDOW_S,
                     idle_fraction: float = IDLE_CPU_FRACTION,
                     max_wait_s: float = MAX_QUIESCE_S,
                     poll_s: float = POLL_INTERVAL_S) -> QuiesceResult:
    """Poll until the watched threads used < idle_fraction of a core over the last
    window_s, or until max_wait_s. The window slides: it starts again after every poll
    that saw activity, so a thread that stops spinning is noticed within one window."""
    start = clock()
    first_cpu_ns = probe()
    window_start, window_cpu_ns = start, first_cpu_ns
    while True:
        sleep(poll_s)
        now, cpu_ns = clock(), probe()
        elapsed = now - window_start
        used_s = (cpu_ns - window_cpu_ns) / 1e9
        if used_s > idle_fraction * max(elapsed, window_s):
            window_start, window_cpu_ns = now, cpu_ns       # still busy: restart the window
        elif elapsed >= window_s:
            return QuiesceResult(now - start, False, (cpu_ns - first_cpu_ns) / 1e9)
        if now - start >= max_wait_s:
            return QuiesceResult(now - start, True, (cpu_ns - first_cpu_ns) / 1e9)


def _read_run_ns(path: str) -> int:
    # schedstat: "<ns on cpu> <ns waiting> <timeslices>"; nanosecond resolution, unlike
    # the clock-tick (10 ms) counters of /proc/*/stat, which cannot see a 2 ms window.
    with open(path, "rb") as f:
        return int(f.read().split()[0])


class ThreadActivityProbe:
    """Total on-CPU nanoseconds of every thread of the watched processes except the
    calling thread (the measuring thread's own polling must not count as activity).
    Threads that appear or exit between reads are handled: only threads present in both
    reads contribute to a difference, through the running total below."""

    def __init__(self, pids: Iterable[int] = (), exclude_tid: int | None = None):
        self.pids = tuple(dict.fromkeys([os.getpid(), *pids]))
        self.exclude_tid = threading.get_native_id() if exclude_tid is None else exclude_tid
        self._last: dict[tuple[int, int], int] = {}
        self._total = 0

    @staticmethod
    def available() -> bool:
        return os.path.exists(f"/proc/{os.getpid()}/task/{threading.get_native_id()}/schedstat")

    def __call__(self) -> int:
        seen: dict[tuple[int, int], int] = {}
        for pid in self.pids:
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue           # that process has exited
            for tid_text in tids:
                tid = int(tid_text)
                if pid == os.getpid() and tid == self.exclude_tid:
                    continue
                try:
                    seen[(pid, tid)] = _read_run_ns(f"/proc/{pid}/task/{tid}/schedstat")
                except (OSError, ValueError, IndexError):
                    continue       # the thread exited between listdir and open
        for key, ns in seen.items():
            self._total += max(0, ns - self._last.get(key, ns))
        self._last = seen
        return self._total


class Quiescer:
    """What a measurement calls before a sample: waits for quiet and keeps the waits.
    `settle()` returns the QuiesceResult; `results` holds every one so far."""

    def __init__(self, probe: ActivityProbe, clock: Callable[[], float] = time.perf_counter,
                 sleep: Callable[[float], None] = time.sleep,
                 max_wait_s: float = MAX_QUIESCE_S):
        self.probe, self.clock, self.sleep, self.max_wait_s = probe, clock, sleep, max_wait_s
        self.results: list[QuiesceResult] = []

    def settle(self) -> QuiesceResult:
        result = wait_until_quiet(self.probe, self.clock, self.sleep,
                                  max_wait_s=self.max_wait_s)
        self.results.append(result)
        return result

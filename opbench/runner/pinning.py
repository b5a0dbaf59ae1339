"""Equal cores in fact: the measuring process pinned to exactly the cores the run allows,
and each sample's CPU time against its wall time (the cores a side really used).

Why: a thread count is a setting, not a fact. Measured here (2 cores, MindSpore 2.10,
`threads_num(1)`, blocking launches): a 1024^3 float32 matmul kept both cores busy (process
CPU time / wall time 1.99, busiest threads `KernelThread_0` and `ActorThread_0`, 148 GFLOP/s:
more than one core's peak), while torch at 1 thread used one core (1.00, 88 GFLOP/s). A
256x768 @ 768x768 matmul read 1535 us on two cores and 3291 us pinned to one; torch at one
thread 3104 us. So the worker process is pinned to `threads` cores before its frameworks
start their thread pools: whatever threads a framework starts share those cores.

`cores_to_pin` is pure (the machine's facts come in as arguments); `pin_process` applies
the mask to every thread of this process (sched_setaffinity(0) sets only the calling
thread's; threads started later inherit it). The cores each sample used are core_use.py's.
"""
from __future__ import annotations

import os
from typing import Callable, Iterable, Sequence

from opbench.runner.placement import machine_cpus, physical_cores, smt_siblings

__all__ = ["cores_to_pin", "current_cpus", "pin_process", "pin_run_cores"]

def cores_to_pin(threads: int, cpus: Iterable[int],
                 siblings: Callable[[int], Iterable[int]] = lambda cpu: (cpu,)
                 ) -> tuple[int, ...] | None:
    """One logical CPU on each of the last `threads` physical cores allowed (SMT siblings
    would share one core's execution units; the last cores, because the system's
    interrupts and the parent process tend to land on the first). None when the run asks
    for more threads than there are cores: nothing to pin to."""
    cores = physical_cores(cpus, siblings)
    if threads < 1 or threads > len(cores):
        return None
    return tuple(sorted(core[0] for core in cores[-threads:]))


def pin_process(cpus: Sequence[int], task_dir: str = "/proc/self/task") -> tuple[int, ...]:
    """Every thread of this process onto `cpus`; returns the calling thread's mask after."""
    wanted = set(cpus)
    os.sched_setaffinity(0, wanted)
    try:
        tids = [int(t) for t in os.listdir(task_dir)]
    except OSError:
        tids = []
    for tid in tids:
        try:
            os.sched_setaffinity(tid, wanted)
        except OSError:
            continue       # the thread ended between listdir and the call
    return tuple(sorted(os.sched_getaffinity(0)))


def current_cpus() -> tuple[int, ...]:
    """The calling thread's CPUs now (to restore them later); () where unknown."""
    try:
        return tuple(sorted(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return ()


def pin_run_cores(threads: int) -> tuple[int, ...] | None:
    """This process pinned to `threads` cores of those it may use (a container's or a
    pytest-xdist worker's share). None when it was left unpinned (not enough cores, or no
    sched_setaffinity on this system)."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    chosen = cores_to_pin(threads, machine_cpus(), smt_siblings)
    if chosen is None:
        return None
    return pin_process(chosen)

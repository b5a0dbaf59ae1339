"""The machine's ceilings as each framework reaches them: memory bandwidth (a large copy)
and peak FLOP/s (a large float32 matrix product), measured once per run in the process and
with the threads the run measures with, so an instance's achieved fraction compares it
with what the same framework gets from the same cores.

A copy moves 2 bytes per byte copied (read + write); a product of two n x n matrices does
2 n^3 FLOPs. The best of a few repeats is kept: a ceiling is what the machine can do, and
every disturbance only makes a repeat slower.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

# Well past the last-level cache (tens of MiB on server CPUs): the copy measures DRAM.
COPY_BYTES = 64 * 2**20
# A product big enough that packing and dispatch are noise (2.1 GFLOP: ~50 ms on one core).
GEMM_N = 1024
REPEATS = 3

# The copy and product in each framework (paths as in case files), and whether they write
# into a preallocated `out=`: torch's CPU allocator returns large blocks to the system, so
# a fresh 64 MiB output page-faults on every call and a clone measured 2.6 GB/s where the
# same machine copies at 11 GB/s; MindSpore's allocator keeps its blocks. neg reads and
# writes exactly what a copy does.
CEILING_APIS = {
    "torch": ("torch.neg", "torch.matmul", True),
    # mint.clone has no CPU kernel in MindSpore 2.10 (Clone unregistered); ops.deepcopy has
    "mindspore": ("mindspore.ops.deepcopy", "mindspore.mint.matmul", False),
    "numpy": ("numpy.negative", "numpy.matmul", True),
}


def ceilings_from_times(copy_bytes: int, copy_s: float, gemm_n: int,
                        gemm_s: float) -> dict[str, float]:
    """Bandwidth (bytes/s) and FLOP/s from the best times (pure)."""
    return {"memory_bandwidth_bytes_per_s": 2.0 * copy_bytes / copy_s,
            "peak_flops_per_s": 2.0 * gemm_n**3 / gemm_s,
            "copy_bytes": copy_bytes, "copy_s": copy_s, "gemm_n": gemm_n, "gemm_s": gemm_s}


def _best_time(call: Callable[[], Any], sync: Callable[[], None],
               clock: Callable[[], float], repeats: int) -> float:
    call()          # first call: allocation, kernel choice
    sync()
    best = float("inf")
    for _ in range(repeats):
        start = clock()
        call()
        sync()
        best = min(best, clock() - start)
    return best


def measure_ceilings(name: str, adapter: Any, clock: Callable[[], float],
                     copy_bytes: int = COPY_BYTES, gemm_n: int = GEMM_N,
                     repeats: int = REPEATS) -> dict[str, Any]:
    """One framework's ceilings with `adapter` (already set up: device, threads). Never
    raises: a framework without the ops gets {"error": ...} and the run goes on."""
    try:
        copy_api, gemm_api, into_out = CEILING_APIS[name]
        copy, gemm = adapter.resolve(copy_api), adapter.resolve(gemm_api)
        x = adapter.from_numpy(np.ones(copy_bytes // 4, np.float32), "float32")
        a = adapter.from_numpy(np.full((gemm_n, gemm_n), 0.5, np.float32), "float32")
        if into_out:
            y = adapter.from_numpy(np.zeros(copy_bytes // 4, np.float32), "float32")
            c = adapter.from_numpy(np.zeros((gemm_n, gemm_n), np.float32), "float32")
            copy_s = _best_time(lambda: copy(x, out=y), adapter.sync, clock, repeats)
            gemm_s = _best_time(lambda: gemm(a, a, out=c), adapter.sync, clock, repeats)
        else:
            copy_s = _best_time(lambda: copy(x), adapter.sync, clock, repeats)
            gemm_s = _best_time(lambda: gemm(a, a), adapter.sync, clock, repeats)
    except Exception as exc:  # recorded, never fatal: the ceilings only annotate a run
        return {"error": f"{type(exc).__name__}: {exc}"}
    found = ceilings_from_times(copy_bytes, copy_s, gemm_n, gemm_s)
    found["threads"] = adapter.threads()
    return found


def achieved_fraction(work: float, unit: str, time_s: float,
                      ceilings: Mapping[str, Any] | None) -> float | None:
    """The share of the framework's ceiling an instance reached: bytes/s against the copy
    bandwidth, FLOP/s against the product's. None without a ceiling or a time."""
    if not ceilings or "error" in ceilings or time_s <= 0:
        return None
    ceiling = ceilings.get("peak_flops_per_s" if unit == "flops"
                           else "memory_bandwidth_bytes_per_s")
    return work / time_s / ceiling if ceiling else None


__all__ = ["measure_ceilings", "ceilings_from_times", "achieved_fraction", "CEILING_APIS",
           "COPY_BYTES", "GEMM_N"]

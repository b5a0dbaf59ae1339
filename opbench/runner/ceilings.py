"""The machine's ceilings as each framework reaches them: memory bandwidth (a large copy)
and peak FLOP/s (a large float32 matrix product), measured once per run in the process and
with the threads the run measures with, so an instance's achieved fraction compares it
with what the same framework gets from the same cores.

A copy moves 2 bytes per byte copied (read + write); a product of two n x n matrices does
2 n^3 FLOPs. The best of a few repeats is kept: a ceiling is what the machine can do, and
every disturbance only makes a repeat slower.
"""
from __future__ import annotations

from pathlib import Path
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


# Cache levels whose copy bandwidth is measured, with each level's copy sized so source and
# destination fill a quarter of it (they stay resident beside the framework's own data).
# L1 is left out: a copy that fits it takes well under a microsecond, below every
# framework's per-call cost (torch 1.3 us, MindSpore 30 us here), so its "bandwidth" would
# measure dispatch; an instance whose working set fits L1 is "cache-resident" instead.
CACHE_LEVELS = ("L2", "L3")
DRAM = "DRAM"
# Each level's sample lasts at least this long (many calls of a small copy), best of REPEATS.
LEVEL_SAMPLE_S = 0.002


def cache_sizes(cache_dir: Path = Path("/sys/devices/system/cpu/cpu0/cache")
                ) -> dict[str, int]:
    """{"L1": bytes, "L2": ..., "L3": ...}: the data caches one core sees (Linux sysfs);
    {} where sysfs does not say."""
    found: dict[str, int] = {}
    try:
        entries = sorted(cache_dir.glob("index*"))
        for entry in entries:
            kind = (entry / "type").read_text().strip()
            if kind not in ("Data", "Unified"):
                continue
            level = int((entry / "level").read_text())
            size = (entry / "size").read_text().strip().upper()
            scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(size[-1:], 1)
            found[f"L{level}"] = int(size.rstrip("KMG")) * scale
    except (OSError, ValueError):
        return {}
    return found


def level_copy_bytes(sizes: Mapping[str, int]) -> dict[str, int]:
    """The copy measured for each cache level (a quarter of it: source + destination fill
    half), float32-aligned."""
    return {level: sizes[level] // 4 // 4 * 4 for level in CACHE_LEVELS if level in sizes}


def ceilings_from_times(copy_bytes: int, copy_s: float, gemm_n: int,
                        gemm_s: float) -> dict[str, float]:
    """Bandwidth (bytes/s) and FLOP/s from the best times (pure)."""
    return {"memory_bandwidth_bytes_per_s": 2.0 * copy_bytes / copy_s,
            "peak_flops_per_s": 2.0 * gemm_n**3 / gemm_s,
            "copy_bytes": copy_bytes, "copy_s": copy_s, "gemm_n": gemm_n, "gemm_s": gemm_s}


def _best_time(call: Callable[[], Any], sync: Callable[[], None],
               clock: Callable[[], float], repeats: int,
               cpu_clock: Callable[[], float] | None = None) -> tuple[float, float | None]:
    """The best time of `repeats` calls, and the cores they used (process CPU time over
    wall time across the repeats; None without a CPU clock)."""
    call()          # first call: allocation, kernel choice
    sync()
    best, wall = float("inf"), 0.0
    cpu_start = cpu_clock() if cpu_clock is not None else None
    for _ in range(repeats):
        start = clock()
        call()
        sync()
        took = clock() - start
        best, wall = min(best, took), wall + took
    if cpu_start is None or wall <= 0:
        return best, None
    return best, round((cpu_clock() - cpu_start) / wall, 3)


def _level_bandwidth(copy: Callable[[Any, Any], Any], adapter: Any, nbytes: int,
                     clock: Callable[[], float], into_out: bool) -> float:
    """Bytes/s (read + write) of a copy of `nbytes` repeated in a loop long enough to time
    (LEVEL_SAMPLE_S), best of REPEATS: the data stays in the cache the size fits."""
    x = adapter.from_numpy(np.ones(nbytes // 4, np.float32), "float32")
    y = adapter.from_numpy(np.zeros(nbytes // 4, np.float32), "float32")
    one = (lambda: copy(x, out=y)) if into_out else (lambda: copy(x))
    one_s, _ = _best_time(one, adapter.sync, clock, 1)
    loops = max(1, int(LEVEL_SAMPLE_S / max(one_s, 1e-9)))

    def many() -> None:
        for _ in range(loops):
            one()
    best, _ = _best_time(many, adapter.sync, clock, REPEATS)
    return 2.0 * nbytes * loops / best


def measure_ceilings(name: str, adapter: Any, clock: Callable[[], float],
                     copy_bytes: int = COPY_BYTES, gemm_n: int = GEMM_N,
                     repeats: int = REPEATS,
                     cpu_clock: Callable[[], float] | None = None,
                     level_bytes: Mapping[str, int] | None = None) -> dict[str, Any]:
    """One framework's ceilings with `adapter` (already set up: device, threads; pinned to
    the run's cores, so a framework's extra threads share them as in its samples), and the
    cores each used (`copy_cores`, `gemm_cores`) with a `cpu_clock`. Never raises: a
    framework without the ops gets {"error": ...} and the run goes on."""
    try:
        copy_api, gemm_api, into_out = CEILING_APIS[name]
        copy, gemm = adapter.resolve(copy_api), adapter.resolve(gemm_api)
        x = adapter.from_numpy(np.ones(copy_bytes // 4, np.float32), "float32")
        a = adapter.from_numpy(np.full((gemm_n, gemm_n), 0.5, np.float32), "float32")
        if into_out:
            y = adapter.from_numpy(np.zeros(copy_bytes // 4, np.float32), "float32")
            c = adapter.from_numpy(np.zeros((gemm_n, gemm_n), np.float32), "float32")
            copy_s, copy_cores = _best_time(lambda: copy(x, out=y), adapter.sync, clock,
                                            repeats, cpu_clock)
            gemm_s, gemm_cores = _best_time(lambda: gemm(a, a, out=c), adapter.sync, clock,
                                            repeats, cpu_clock)
        else:
            copy_s, copy_cores = _best_time(lambda: copy(x), adapter.sync, clock, repeats,
                                            cpu_clock)
            gemm_s, gemm_cores = _best_time(lambda: gemm(a, a), adapter.sync, clock, repeats,
                                            cpu_clock)
        levels = {level: {"copy_bytes": n, "bandwidth_bytes_per_s":
                          _level_bandwidth(copy, adapter, n, clock, into_out)}
                  for level, n in (level_bytes or {}).items()}
    except Exception as exc:  # recorded, never fatal: the ceilings only annotate a run
        return {"error": f"{type(exc).__name__}: {exc}"}
    found = ceilings_from_times(copy_bytes, copy_s, gemm_n, gemm_s)
    found["threads"] = adapter.threads()
    if copy_cores is not None:
        found["copy_cores"], found["gemm_cores"] = copy_cores, gemm_cores
    if levels:
        found["cache_levels"] = levels
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
           "COPY_BYTES", "GEMM_N", "CACHE_LEVELS", "DRAM", "cache_sizes", "level_copy_bytes"]

"""A fixed speed probe: how fast this process's MindSpore runs a small synced call right now.

MindSpore's PyNative pipeline runs in speed modes that switch within a process (docs/model.md,
"Why MindSpore's step moves"): the same synced small call took ~0.4, ~0.7 or ~2.6-3.9 ms in
four fresh processes here (2026-11-27, /tmp/selfms_exp/probe_vs_step.py: 20 synced
`mint.add` of 16 elements, alternated with a 5-call MLP forward synced after each call; the
forward read 13-20 ms where the probe read 0.4-0.7 ms and 40 ms where it read 2.6 ms). A
capture is one process in one mode, its replay another: the probe, the same few calls timed
in the capture's process and in each replay round, says whether the two ran in one mode
(impact/mode_match.py), so the self-check compares like with like.

The probe's calls are fixed (not the script's): the same in every process and every script,
a few different kinds so that no single kernel's cache decides it. Run in the script's
interpreter (the capture) and in a replay process (model/replay/main.py): both import it.
"""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable

__all__ = ["PROBE_REPEATS", "mindspore_speed_probe", "PROBE_DESCRIPTION"]

# 5 repeats of 4 calls, each synced: 20 latencies, ~10 ms in the fast mode and ~80 ms in
# the slow one (the figures above); the median of 20 does not move with one thread's
# wake-up.
PROBE_REPEATS = 5
PROBE_DESCRIPTION = ("the median latency of 20 synced small MindSpore calls (mint.add, mint.mul "
                     "on 16 elements, mint.nn.functional.relu, mint.matmul of 16x16), the "
                     "same in every process")


def mindspore_speed_probe(sync: Callable[[], None], repeats: int = PROBE_REPEATS,
                          clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds per synced probe call now (the median); MindSpore must be imported and set
    up (device, threads) as the process runs its calls."""
    import numpy as np
    from mindspore import Tensor, mint

    small = Tensor(np.linspace(-1.0, 1.0, 16, dtype=np.float32))
    square = Tensor(np.linspace(-1.0, 1.0, 256, dtype=np.float32).reshape(16, 16))
    calls: list[tuple[Callable[..., Any], tuple[Any, ...]]] = [
        (mint.add, (small, small)), (mint.mul, (small, small)),
        (mint.nn.functional.relu, (small,)), (mint.matmul, (square, square))]
    sync()
    latencies = []
    for _ in range(repeats):
        for fn, args in calls:
            start = clock()
            fn(*args)
            sync()
            latencies.append(clock() - start)
    return float(statistics.median(latencies))

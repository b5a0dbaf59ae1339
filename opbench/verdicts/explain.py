"""Plain-language reasons behind a ratio: per-call overhead against kernel time, serial
against async. Pure functions over numbers already measured; the report prints them and
the results record keeps them, so a reader can tell "kernel slower" from "dispatch slower"."""
from __future__ import annotations

from typing import Any, Callable, Mapping

# An op whose time per call is within this factor of the framework's trivial-op time is
# dominated by per-call overhead (Python dispatch, launch, sync), not by its kernel.
DISPATCH_BOUND_FACTOR = 3.0
# Serial and async per-call times further apart than this mean the sync/launch latency,
# not the kernel, decides the serial number; worth saying because users compare them.
MODE_GAP_FACTOR = 3.0


def floor_key(mode: str) -> str:
    return "dispatch_floor_async_s" if mode.startswith("async") else "dispatch_floor_serial_s"


# What a call faster than its framework's trivial op is: the floor is the cheapest call
# that launches a kernel (an add of two 1-element tensors), so a call below it launches
# none. Seen: MindSpore's reshape of 8x16 at 4.9 us against its 32-48 us serial floor,
# torch's at 0.84 us against 1.4 us (a view: new shape and strides over the same data).
NO_KERNEL = "no kernel is launched: a view or metadata change"


def below_floor(median_s: float, floor_s: float | None) -> bool:
    """A per-call time under the framework's trivial-op floor (NO_KERNEL)."""
    return bool(floor_s) and 0 < median_s < floor_s


def explain_measurement(mode: str, medians_s: Mapping[str, float],
                        overhead: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Notes for one measurement: which sides run below their per-call floor in this mode
    (no kernel), and which are dispatch-bound (within DISPATCH_BOUND_FACTOR of it)."""
    notes = []
    for name, median_s in medians_s.items():
        floor_s = (overhead.get(name) or {}).get(floor_key(mode))
        if not floor_s or median_s <= 0:
            continue
        if below_floor(median_s, floor_s):
            notes.append(f"{name} runs below its per-call floor: {_us(median_s)} per call "
                         f"against a {_us(floor_s)} trivial-op floor ({mode}): {NO_KERNEL}; "
                         f"the ratio compares the frameworks' call paths, not kernels")
        elif median_s < DISPATCH_BOUND_FACTOR * floor_s:
            notes.append(f"{name} is dispatch-bound here: {_us(median_s)} per call against a "
                         f"{_us(floor_s)} trivial-op floor ({mode}); the ratio measures "
                         f"per-call overhead more than the kernel")
    return notes


# Frameworks whose operators go through a launch queue even on the CPU: there
# `--launch blocking` (mindspore.runtime.launch_blocking) takes the queue's hand-off out of a
# serial time. torch's CPU operators run in the calling thread, so blocking changes nothing
# for torch on the CPU (CUDA_LAUNCH_BLOCKING only acts on a device).
QUEUED_ON_CPU = frozenset({"mindspore"})


def launch_blocking_matters(name: str, device: str = "cpu") -> bool:
    """Whether `--launch blocking` changes how `name` launches its operators on `device`."""
    if name == "numpy":
        return False
    return name in QUEUED_ON_CPU or not device.startswith("cpu")


def explain_modes(per_mode_medians_s: Mapping[str, Mapping[str, float]],
                  launch: str = "queued", device: str = "cpu",
                  framework_of: Callable[[str], str] = lambda name: name) -> list[str]:
    """Notes comparing serial with async for each side (forward or backward alike). With
    queued launches the note points at --launch blocking, which takes the queue out, for
    the sides where it does (launch_blocking_matters of the side's framework: a side named
    by its label, `mindspore@ms29`, runs `mindspore`)."""
    notes = []
    for serial_key in [k for k in per_mode_medians_s if k.startswith("serial")]:
        async_key = "async" + serial_key[len("serial"):]
        if async_key not in per_mode_medians_s:
            continue
        serial, async_ = per_mode_medians_s[serial_key], per_mode_medians_s[async_key]
        for name in serial:
            s, a = serial.get(name), async_.get(name)
            if s and a and s > MODE_GAP_FACTOR * a:
                hint = launch == "queued" and launch_blocking_matters(framework_of(name),
                                                                      device)
                notes.append(f"{name}: {serial_key} {_us(s)} is {s / a:.0f}x {async_key} "
                             f"{_us(a)} per call: waiting for each result (sync latency) "
                             f"dominates the serial time, not the kernel"
                             + ("; `--launch blocking` times the op without its launch "
                                "queue's hand-off" if hint else ""))
    return notes


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.3g} us"

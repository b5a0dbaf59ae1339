"""A float tensor's observed range, as the capture describes it (program.py ExternalTensor's
low and high), so a replay draws a float external within the values the script had: a
binary cross-entropy's target made by torch.rand before the step is in [0, 1], and torch
refuses one drawn in [-1, 1] (tests/conformance/vae_mlp_bce_adam.py lost its BCE, 13% of
the region, in both replays).

Every float output of every call is described (a step may read any of them as an external
made before it), so the read is bounded: a tensor of more than RANGE_SAMPLE elements is read
at most that many, whole trailing rows at evenly strided positions along the leading dims (a
view: nothing is copied). A sampled range lies inside the tensor's true range, so a draw
within it stays within what the script had. An infinite bound (a float attention mask's
-inf) is left unset (None: unbounded on that side); a NaN anywhere in what was read leaves
both unset.

Runs in the script's interpreter: the standard library only, the tensor read by duck typing
(torch's tensors by slicing and min/max, MindSpore's on the host: asnumpy() on CPU shares the
tensor's memory, 5 us whatever its size here).
"""
from __future__ import annotations

import math
from typing import Any

__all__ = ["RANGE_SAMPLE", "float_range", "sample_index"]

# The most elements one range reads. Measured here (torch 2.13 CPU, one thread, median of 200,
# min and max of a float32 tensor): 126 us whole against 9 us sampled for 768 x 768, 656 us
# against 22 us for 8 x 512 x 768; up to 8,192 elements a whole read takes under 5 us. The
# whole capture of tests/conformance/hf_gpt2_generate.py (1,192 calls a step) took 6.8 / 7.3 s
# against 7.2 / 7.6 s before the ranges (runs alternated under the CPU lock: no cost within
# the noise), and its program file 2.87 MB against 2.69 MB.
RANGE_SAMPLE = 8192


def sample_index(shape: tuple[int, ...], cap: int = RANGE_SAMPLE) -> tuple[slice, ...]:
    """A basic index that keeps at most about `cap` elements of a tensor of `shape`: trailing
    dims whole while they fit, then each leading dim strided so the rest fits."""
    index: list[slice] = []
    kept = 1
    for size in reversed(shape):
        room = max(1, cap // kept)
        step = max(1, math.ceil(size / room)) if size > 0 else 1
        index.append(slice(None, None, step))
        kept *= max(1, math.ceil(size / step))
    return tuple(reversed(index))


def _bound(value: float) -> float | None:
    return value if math.isfinite(value) else None


def float_range(tensor: Any, shape: tuple[int, ...]) -> tuple[float | None, float | None]:
    """(low, high) of what was read of a float tensor; (None, None) for an empty tensor, one
    holding NaN, or one that cannot be read back."""
    count = 1
    for size in shape:
        count *= size
    if count == 0:
        return None, None
    index = sample_index(shape) if count > RANGE_SAMPLE else ()
    try:
        if hasattr(tensor, "asnumpy"):           # MindSpore: on the host
            host = tensor.asnumpy()
            read = host[index] if index else host
            low, high = float(read.min()), float(read.max())
        else:
            read = tensor.detach()
            read = read[index] if index else read
            low, high = float(read.min().item()), float(read.max().item())
    except Exception:       # a dtype the host cannot hold (bfloat16 in numpy), a device fault
        return None, None
    if math.isnan(low) or math.isnan(high):
        return None, None
    return _bound(low), _bound(high)

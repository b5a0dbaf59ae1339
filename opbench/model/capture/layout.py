"""An external tensor's layout and small values, as the capture describes them, where they
change the work a replay does (program.py ExternalTensor's last four fields).

- Stride-0 dims (a padding column expanded over the hidden size, `pad.expand(B, H)`): the
  shape it was expanded from. A replay of a contiguous tensor of the full shape reads 256
  times the bytes of a (256, 1) mask expanded to (256, 256), and the masked_fill fix of
  examples/affinity/torch/masked_write_where cost 0.36 ms on such a mask against 0.07 ms
  on the script's (one process, before this module).
- A permuted dense view (a transposed weight): its dims from the largest stride to the
  smallest. Any other strided view (a slice with gaps) is described as contiguous.
- A small bool or integer tensor (at most MAX_KEPT_VALUES elements of its base): its values,
  so a replay masks, indexes and selects what the script did (an all-ones attention mask, a
  few padded rows) instead of a random half; a larger bool tensor its share of true values.

Runs in the script's interpreter: the standard library only, the tensor read by duck typing
(torch and MindSpore tensors both have shape, stride() and a host read).
"""
from __future__ import annotations

from typing import Any

__all__ = ["MAX_KEPT_VALUES", "VALUES_BUDGET", "ValueKeeper", "dim_order", "expanded_from",
           "layout_of"]

# The largest tensor (its base, where expanded) whose values the program keeps: a batch's
# attention mask (8 x 512), a padding column, a position index, a short batch's token ids.
# 4,096 values are at most ~20 KB of JSON (a token id is ~5 characters with its comma),
# and describing them took 0.30 ms (int64) / 0.27 ms (bool) median for an 8 x 512 torch
# tensor here (200 reads, one thread), once per tensor, after its call's traced time (the
# light pass's times have no capture work). A larger integer tensor is drawn in its range
# as before. Reading a tensor's strides (layout_of) took 2.1 us median.
MAX_KEPT_VALUES = 4096
# All kept values of one capture together: the capture file stays bounded (~1.3 MB of
# values) however many small integer outputs a long capture describes; once spent, values
# are drawn again.
VALUES_BUDGET = 1 << 18


def expanded_from(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, ...] | None:
    """The shape a view with stride-0 dims was expanded from (those dims of size 1), or None
    where no dim of more than one element has stride 0."""
    if not any(stride == 0 and size > 1 for size, stride in zip(shape, strides)):
        return None
    return tuple(1 if stride == 0 else size for size, stride in zip(shape, strides))


def dim_order(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, ...] | None:
    """A dense view's dims from the largest stride to the smallest where that is not their
    order (a transpose, a permute); None for a contiguous tensor or any other view. Dims of
    one element (any stride) go last: they move no memory."""
    big = [i for i, size in enumerate(shape) if size > 1]
    order = sorted(big, key=lambda i: -strides[i])
    expected = 1
    for i in reversed(order):
        if strides[i] != expected:
            return None            # a gap (a slice of a larger tensor) or a stride-0 dim
        expected *= shape[i]
    if order == big:
        return None
    return tuple(order) + tuple(i for i, size in enumerate(shape) if size <= 1)


def _strides(tensor: Any) -> tuple[int, ...] | None:
    try:
        return tuple(int(s) for s in tensor.stride())
    except Exception:          # a tensor type without strides: described as contiguous
        return None


def layout_of(tensor: Any, shape: tuple[int, ...]) -> dict[str, tuple[int, ...]]:
    """{"expanded_from": base shape} or {"dim_order": order} where the tensor has such a
    layout; {} for a contiguous tensor."""
    strides = _strides(tensor)
    if strides is None or len(strides) != len(shape):
        return {}
    base = expanded_from(shape, strides)
    if base is not None:
        return {"expanded_from": base}
    order = dim_order(shape, strides)
    return {"dim_order": order} if order is not None else {}


def _base(tensor: Any, shape: tuple[int, ...], base: tuple[int, ...]) -> Any:
    """The tensor an expanded view repeats: the first element along each expanded dim."""
    return tensor[tuple(slice(0, 1) if b != s else slice(None) for b, s in zip(base, shape))]


def _host_list(tensor: Any) -> list[Any]:
    if hasattr(tensor, "asnumpy"):             # MindSpore
        return tensor.asnumpy().ravel().tolist()
    return tensor.reshape(-1).tolist()


class ValueKeeper:
    """Reads small bool and integer tensors' values within VALUES_BUDGET for the capture."""

    def __init__(self, budget: int = VALUES_BUDGET):
        self.budget = budget

    def describe(self, tensor: Any, shape: tuple[int, ...], dtype: str,
                 layout: dict[str, tuple[int, ...]]) -> dict[str, Any]:
        """{"values": ...} for a small tensor, {"true_fraction": f} for a larger bool one,
        {} otherwise or when the tensor cannot be read back."""
        base_shape = layout.get("expanded_from", shape)
        count = 1
        for size in base_shape:
            count *= size
        try:
            base = _base(tensor, shape, base_shape) if "expanded_from" in layout else tensor
            if 0 < count <= MAX_KEPT_VALUES and count <= self.budget:
                self.budget -= count
                return {"values": tuple(int(v) for v in _host_list(base))}
            if dtype == "bool" and count > 0:
                if hasattr(base, "asnumpy"):
                    trues = int(base.asnumpy().sum())
                else:
                    trues = int(base.sum().item())
                return {"true_fraction": trues / count}
        except Exception:       # a tensor that cannot be read back (a device fault): drawn
            return {}
        return {}

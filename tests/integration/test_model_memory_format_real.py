"""The capture's memory_format rule (capture/observer.py without_default_memory_format) against
real torch: where it drops `memory_format=torch.contiguous_format` from a clone, clone()
(preserve_format) lays the copy out the same; where it keeps it, the layouts differ."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from opbench.model.capture.observer import without_default_memory_format  # noqa: E402

pytestmark = pytest.mark.integration

CLONE = "torch.Tensor.clone"


@pytest.mark.parametrize("make, dropped", [
    (lambda: torch.arange(12).reshape(1, 12), True),             # generate's input_ids
    (lambda: torch.arange(24).reshape(2, 12)[..., -5:], True),   # a window: not dense
    (lambda: torch.zeros(4, 1).expand(4, 6), True),              # stride 0: overlapping
    (lambda: torch.zeros(4, 6).T, False),                        # dense, permuted
    (lambda: torch.zeros(2, 3, 4, 5).to(memory_format=torch.channels_last), False),
])
def test_the_memory_format_is_dropped_only_where_clone_lays_out_the_same(make, dropped):
    tensor = make()
    kwargs = {"memory_format": torch.contiguous_format}
    kept = without_default_memory_format(CLONE, (tensor,), kwargs)
    assert (kept == {}) is dropped
    same = tensor.clone(**kwargs).stride() == tensor.clone().stride()
    assert same is dropped


def test_the_default_itself_is_dropped_and_channels_last_kept():
    x = torch.zeros(2, 3, 4, 5)
    assert without_default_memory_format(
        CLONE, (x,), {"memory_format": torch.preserve_format}) == {}
    assert without_default_memory_format(
        "torch.Tensor.contiguous", (x,), {"memory_format": torch.contiguous_format}) == {}
    channels_last = {"memory_format": torch.channels_last}
    assert without_default_memory_format(CLONE, (x,), channels_last) == channels_last

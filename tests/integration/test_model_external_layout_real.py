"""An external's layout and small values with real tensors: capture/layout.py reads torch's
and MindSpore's strides and values, and the replay (executor.with_script_layout) rebuilds an
expanded mask and a transposed weight as stride-0 and permuted views in both frameworks, with
the values external_array gives."""
from __future__ import annotations

import numpy as np
import pytest

from opbench.model.capture.layout import ValueKeeper, layout_of
from opbench.model.program import ExternalTensor
from opbench.model.replay.executor import external_array, with_script_layout

torch = pytest.importorskip("torch")
ms = pytest.importorskip("mindspore")


def _strides(tensor):
    return tuple(int(s) for s in tensor.stride())


def test_torch_expanded_mask_and_transposed_weight_are_described():
    pad = torch.zeros(6, 1, dtype=torch.bool)
    pad[4:] = True
    mask = pad.expand(6, 5)
    layout = layout_of(mask, (6, 5))
    assert layout == {"expanded_from": (6, 1)}
    assert ValueKeeper().describe(mask, (6, 5), "bool", layout) == \
        {"values": (0, 0, 0, 0, 1, 1)}
    assert layout_of(torch.zeros(8, 16).T, (16, 8)) == {"dim_order": (1, 0)}
    assert layout_of(torch.zeros(8, 16), (8, 16)) == {}
    big = torch.arange(8192) < 1024
    assert ValueKeeper().describe(big, (8192,), "bool", {}) == {"true_fraction": 0.125}


def test_mindspore_expanded_mask_is_described():
    column = ms.Tensor(np.array([[False], [True], [True]]))
    mask = ms.ops.broadcast_to(column, (3, 4))
    layout = layout_of(mask, (3, 4))
    assert layout == {"expanded_from": (3, 1)}
    assert ValueKeeper().describe(mask, (3, 4), "bool", layout) == {"values": (0, 1, 1)}


@pytest.mark.parametrize("framework", ["torch", "mindspore"])
def test_the_replay_rebuilds_the_scripts_views(framework):
    def tensor(array):
        return torch.from_numpy(array.copy()) if framework == "torch" else ms.Tensor(array)

    def host(value):
        return value.numpy() if framework == "torch" else value.asnumpy()

    pad = ExternalTensor(0, (6, 5), "bool", "input", expanded_from=(6, 1),
                         values=(0, 0, 0, 0, 1, 1))
    array = external_array(pad)
    mask = with_script_layout(tensor(array), pad)
    assert _strides(mask) == (1, 0) and np.array_equal(host(mask), array)
    weight = ExternalTensor(1, (16, 8), "float32", "input", dim_order=(1, 0))
    array = external_array(weight)
    view = with_script_layout(tensor(array), weight)
    assert _strides(view) == (1, 16) and np.array_equal(host(view), array)
    plain = ExternalTensor(2, (4, 4), "float32", "input")
    assert _strides(with_script_layout(tensor(external_array(plain)), plain)) == (4, 1)

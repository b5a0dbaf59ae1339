"""A MindSpore script written as mindcv's models are (strided 'same' convolutions with an uneven
pad split, a four-sided padding, MaxPool2d SAME, HSwish / HSigmoid, ops.mean over the spatial axes, argument-free
primitives, nn.Momentum with weight decay in groups, an ops.assign update) replayed in torch
by the rules of opbench/model/replay/mindspore_to_torch.py and momentum_route.py, with real
torch and MindSpore: every call covered and the replay's output check (outputs compared call
by call, the update's weights included) finds no mismatch."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("mindspore")

from test_model_real import _projected, _script  # noqa: E402

pytestmark = pytest.mark.integration

MINDCV_STYLE = """
import mindspore as ms
import numpy as np
from mindspore import nn, ops, Tensor

ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")
ms.set_seed(0)
np.random.seed(0)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        # 16 -> 8: 'same' with stride 2 and a 3x3 kernel pads 0 before and 1 after
        self.stem = nn.Conv2d(3, 8, 3, 2, pad_mode="same", has_bias=True)
        self.act = nn.HSwish()
        self.pool = nn.MaxPool2d(kernel_size=3, stride=2, pad_mode="same")
        self.conv = nn.Conv2d(8, 8, 3, 1, pad_mode="pad", padding=(1, 1, 2, 2))
        self.gate = nn.HSigmoid()
        self.neg = ops.Neg()
        self.head = nn.Dense(8, 4)

    def construct(self, x):
        x = self.pool(self.act(self.stem(x)))
        x = self.conv(x)
        x = x * self.gate(x)
        x = ops.mean(x, axis=(2, 3), keep_dims=False)
        return self.neg(self.head(x))


net = Net()
groups = [{"params": [p for p in net.trainable_params() if "bias" not in p.name],
           "weight_decay": 1e-2},
          {"params": [p for p in net.trainable_params() if "bias" in p.name],
           "weight_decay": 0.0},
          {"order_params": net.trainable_params()}]
optimizer = nn.Momentum(groups, learning_rate=0.05, momentum=0.9)
x = Tensor(np.random.randn(2, 3, 16, 16).astype(np.float32))
y = Tensor(np.random.randn(2, 4).astype(np.float32))
scale = ms.Parameter(Tensor(np.ones(4, np.float32)), name="scale")


def loss_fn(data, target):
    return ops.mse_loss(net(data) * scale, target)


grad_fn = ms.value_and_grad(loss_fn, None, optimizer.parameters)
for _ in range(6):
    loss, grads = grad_fn(x, y)
    optimizer(grads)
    ops.assign(scale, scale * 0.99)
print(float(loss.asnumpy()))
"""


def test_a_mindcv_style_training_step_is_covered_in_torch_with_outputs_that_agree(tmp_path):
    model, _ = _projected(tmp_path, _script(tmp_path, "mindcv_style.py", MINDCV_STYLE))
    assert model["traced_framework"] == "mindspore"
    assert model["errors"] == [] and model["mismatches"] == [], model
    assert model["not_covered"] == [], model["not_covered"]
    assert model["stand_in_share"] == {"torch": 0.0, "mindspore": 0.0}
    mapped = {row["api"]: row["mapped_api"] for row in model["apis"]}
    assert mapped["mindspore.nn.Conv2d"].startswith("torch.nn.functional.conv2d")
    assert mapped["mindspore.nn.MaxPool2d"].startswith("torch.nn.functional.max_pool2d")
    assert mapped["mindspore.nn.Momentum"].startswith("torch.optim.SGD.step")
    assert mapped["mindspore.ops.Neg"] == "torch.neg"
    assert mapped["mindspore.ops.mean"] == "torch.mean"
    assert mapped["mindspore.ops.assign"] == "torch.Tensor.copy_"

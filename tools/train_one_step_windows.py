"""What the synced calls of an nn.TrainOneStepCell step hold (docs/model.md, "What
TrainOneStepCell's aliases hold"): the step of tests/conformance/ms_train_one_step_cell.py with
the cell's construct written out, each part synced and timed on its own.

    GLOG_v=3 python tools/train_one_step_windows.py [--steps 30]

TrainOneStepCell's construct runs the network (traced through: its calls are captured), then
`self.grad(self.network, self.weights)(*inputs, sens)` (GradOperation: no captured call), the
grad reducer's Identity on the gradients' tuple, `self.optimizer(grads)` (AdamWeightDecay's
construct is `@jit`: no captured call) and `ops.depend(loss, ...)`. Under the capture each
traced call is synced, so the backward's and the optimizer's queued kernels are waited for in
the window of the next traced call: the Identity's and the depend's. Synced here part by part,
the Identity and the depend alone take microseconds, and the backward and the optimizer what
their windows held. Prints each part's median over the steps (after 5 warm-up steps), with its
min and max: MindSpore's CPU speed modes move single steps by 10x.
"""
from __future__ import annotations

import argparse
import statistics
import time

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn, ops

WARM_UP_STEPS = 5


class Net(nn.Cell):
    """The corpus script's MLP."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(64, 128)
        self.norm = nn.LayerNorm((128,))
        self.act = nn.GELU()
        self.fc2 = nn.Dense(128, 10)

    def construct(self, x):
        return self.fc2(self.act(self.norm(self.fc1(x))))


def _sync():
    from mindspore.graph.api import _pynative_executor
    _pynative_executor.sync()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    steps = parser.parse_args().steps
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_device("CPU")
    ms.set_seed(0)
    np.random.seed(0)
    net = Net()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    optimizer = nn.AdamWeightDecay(net.trainable_params(), learning_rate=1e-3,
                                   weight_decay=0.01)
    cell = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), optimizer)
    cell.set_train()
    x = Tensor(np.random.randn(64, 64).astype(np.float32))
    y = Tensor(np.random.randint(0, 10, (64,)).astype(np.int32))
    names = ("forward (captured)", "backward: GradOperation", "grad reducer's Identity",
             "optimizer: @jit AdamWeightDecay", "ops.depend", "the whole step")
    parts: dict[str, list[float]] = {name: [] for name in names}
    for step in range(WARM_UP_STEPS + steps):
        t0 = time.perf_counter()
        loss = cell.network(x, y)
        _sync()
        t1 = time.perf_counter()
        sens = ops.fill(loss.dtype, loss.shape, cell.sens)
        grads = cell.grad(cell.network, cell.weights)(x, y, sens)
        _sync()
        t2 = time.perf_counter()
        grads = cell.grad_reducer(grads)
        _sync()
        t3 = time.perf_counter()
        done = cell.optimizer(grads)
        _sync()
        t4 = time.perf_counter()
        loss = ops.depend(loss, done)
        _sync()
        t5 = time.perf_counter()
        if step >= WARM_UP_STEPS:
            for name, seconds in zip(names, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4,
                                             t5 - t0)):
                parts[name].append(seconds)
    for name, seconds in parts.items():
        print(f"{name:34s} median {statistics.median(seconds) * 1e3:8.3f} ms  "
              f"(min {min(seconds) * 1e3:.3f}, max {max(seconds) * 1e3:.3f})")


if __name__ == "__main__":
    main()

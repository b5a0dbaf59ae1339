"""Where an nn.TrainOneStepCell step's backward time goes, as the cell runs it and as the replay
measures it (docs/model.md, "TrainOneStepCell's backward and optimizer captured"): the MLP of
tests/conformance/ms_train_one_step_cell.py, one process, each part synced and timed alone.

    GLOG_v=3 python tools/grad_operation_split.py [--steps 30]

- the cell: its network's forward with grad on (`set_grad()`: the forward records what its
  backward needs), then `ops.GradOperation(get_by_list=True)(network, weights)(*inputs)`,
  which finds that forward already run and runs the backward alone;
- the replay's MindSpore measure of a backward (model/replay/executor.py): value_and_grad
  over the forward's calls, and the same forward alone (nothing recorded); the backward is
  their difference.

Prints the median of each part over the steps (after 5 warm-up steps). The two splits put the
forward's recording in different places: in the cell's forward calls, and in the replay's
backward.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    steps = parser.parse_args().steps
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_device("CPU")
    ms.set_seed(0)
    np.random.seed(0)
    from opbench.frameworks.mindspore_adapter import find_pynative_executor
    sync = find_pynative_executor()[0].sync

    net = Net()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    with_loss = nn.WithLossCell(net, loss_fn)
    with_loss.set_grad()                       # as nn.TrainOneStepCell sets it
    weights = ms.ParameterTuple(net.trainable_params())
    x = Tensor(np.random.randn(64, 64).astype(np.float32))
    y = Tensor(np.random.randint(0, 10, (64,)).astype(np.int32))
    grad_operation = ops.GradOperation(get_by_list=True)

    def forward_calls():
        return loss_fn(net(x), y)

    value_and_grad = ms.value_and_grad(forward_calls, None, weights)
    parts = {"cell: forward with grad on": lambda: with_loss(x, y),
             "cell: GradOperation (the backward)": lambda: grad_operation(with_loss, weights)(x, y),
             "replay: value_and_grad over the forward": value_and_grad,
             "replay: the forward alone": forward_calls}
    times: dict[str, list[float]] = {name: [] for name in parts}
    for step in range(WARM_UP_STEPS + steps):
        for name, part in parts.items():
            start = time.perf_counter()
            part()
            sync()
            if step >= WARM_UP_STEPS:
                times[name].append(time.perf_counter() - start)
    median = {name: statistics.median(values) * 1e3 for name, values in times.items()}
    for name, ms_ in median.items():
        print(f"{name:45s} {ms_:8.3f} ms")
    print(f"{'replay: its backward (the difference)':45s} "
          f"{median['replay: value_and_grad over the forward'] - median['replay: the forward alone']:8.3f} ms")


if __name__ == "__main__":
    main()

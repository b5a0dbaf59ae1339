"""Train the CNN's MindSpore port for a few SGD steps on one fixed batch: PyNative, queued
launches, one kernel thread.

    GLOG_v=3 python examples/cnn/run_mindspore.py --steps 10

Prints every step's loss and the median and mean step times of the timed steps (2 warm-up steps come
first: they train too, but are not timed). --save writes all losses as .npy for
check_ports.py.
"""
from __future__ import annotations

import argparse
import statistics
import time

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn

from mindspore_model import SmallCNN, load_weights
from weights import CNNConfig, make_batch, make_weights

WARMUP_STEPS = 2


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text}")
    return value


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=positive_int, default=10,
                        help="timed steps after the warm-up (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="seed of weights and batch")
    parser.add_argument("--threads", type=positive_int, default=1,
                        help="CPU kernel threads, op_tuning.threads_num (default 1)")
    parser.add_argument("--save", metavar="PATH", help="write every step's loss here (.npy)")
    return parser.parse_args()


def set_up_mindspore(threads: int) -> None:
    """Before any operator runs: the kernel thread count and the device are fixed once the
    runtime starts. threads_num is MindSpore's counterpart of torch.set_num_threads (its CPU
    default is 25); the launch mode stays MindSpore's default (queued, not launch_blocking)."""
    ms.device_context.cpu.op_tuning.threads_num(threads)
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_device("CPU")


def main() -> None:
    args = parse_args()
    set_up_mindspore(args.threads)
    config = CNNConfig()
    model = SmallCNN(config)
    load_weights(model, make_weights(config, args.seed))
    model.set_train(True)
    images, labels = make_batch(config, args.seed)
    images, labels = Tensor(images), Tensor(labels.astype(np.int32))
    loss_fn = nn.CrossEntropyLoss()
    optimizer = nn.SGD(model.trainable_params(), learning_rate=config.learning_rate,
                       momentum=config.momentum)

    def forward(images: Tensor, labels: Tensor) -> Tensor:
        return loss_fn(model(images), labels)

    loss_and_grads = ms.value_and_grad(forward, None, optimizer.parameters)

    print(f"mindspore {ms.__version__}, PyNative, queued launches, {args.threads} thread(s)")
    losses, step_seconds = [], []
    for step in range(WARMUP_STEPS + args.steps):
        start = time.perf_counter()
        loss, grads = loss_and_grads(images, labels)
        optimizer(grads)
        # Operators are queued: reading the loss back waits for them
        # (mindspore.runtime.synchronize() does nothing on CPU).
        losses.append(float(loss.asnumpy()))
        elapsed = time.perf_counter() - start
        if step >= WARMUP_STEPS:
            step_seconds.append(elapsed)
        warm = " (warm-up)" if step < WARMUP_STEPS else ""
        print(f"step {step + 1} loss {losses[-1]:.6f}{warm}")

    print(f"median step {statistics.median(step_seconds) * 1e3:.3f} ms "
          f"({args.steps} steps after {WARMUP_STEPS} warm-up)")
    print(f"mean step {statistics.fmean(step_seconds) * 1e3:.3f} ms")
    if args.save:
        np.save(args.save, np.array(losses))


if __name__ == "__main__":
    main()

"""Train the small CNN in torch for a few SGD steps on one fixed batch, one thread.

    python examples/cnn/run_torch.py --steps 10

Prints every step's loss and the median and mean step times of the timed steps (2 warm-up steps come
first: they train too, but are not timed). --save writes all losses as .npy for
check_ports.py.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
from torch import nn

from torch_model import SmallCNN, load_weights
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
                        help="torch.set_num_threads (default 1)")
    parser.add_argument("--save", metavar="PATH", help="write every step's loss here (.npy)")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    config = CNNConfig()
    model = SmallCNN(config)
    load_weights(model, make_weights(config, args.seed))
    model.train()
    images, labels = (torch.from_numpy(array) for array in make_batch(config, args.seed))
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=config.learning_rate,
                                momentum=config.momentum)

    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s)")
    losses, step_seconds = [], []
    for step in range(WARMUP_STEPS + args.steps):
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(images), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
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

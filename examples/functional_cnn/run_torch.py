"""Train a small CNN written with torch.nn.functional and a hand-written SGD update, one thread.

    python examples/functional_cnn/run_torch.py --steps 10

No nn.Module, no torch.optim: leaf weights with requires_grad_(), F.conv2d / F.relu /
F.max_pool2d / F.linear / F.cross_entropy, loss.backward(), then `p -= lr * p.grad;
p.grad = None` under torch.no_grad(), as research code often writes a training step.
Prints every step's loss and the median and mean step times of the timed steps (2 warm-up
steps come first: they train too, but are not timed).
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

WARMUP_STEPS = 2
BATCH, CHANNELS, SIZE, WIDTH, CLASSES = 8, 3, 32, 16, 10
LEARNING_RATE = 0.01


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
    return parser.parse_args()


def weight(generator: torch.Generator, *shape: int) -> torch.Tensor:
    fan_in = max(1, int(torch.tensor(shape[1:]).prod())) if len(shape) > 1 else 1
    return (torch.randn(*shape, generator=generator) / fan_in ** 0.5).requires_grad_()


def forward(params: dict[str, torch.Tensor], images: torch.Tensor) -> torch.Tensor:
    x = F.relu(F.conv2d(images, params["conv1"], params["bias1"], padding=1))
    x = F.max_pool2d(x, 2)
    x = F.relu(F.conv2d(x, params["conv2"], params["bias2"], padding=1))
    x = F.max_pool2d(x, 2)
    return F.linear(x.flatten(1), params["fc"], params["fc_bias"])


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(args.seed)
    params = {"conv1": weight(generator, WIDTH, CHANNELS, 3, 3),
              "bias1": torch.zeros(WIDTH).requires_grad_(),
              "conv2": weight(generator, 2 * WIDTH, WIDTH, 3, 3),
              "bias2": torch.zeros(2 * WIDTH).requires_grad_(),
              "fc": weight(generator, CLASSES, 2 * WIDTH * (SIZE // 4) ** 2),
              "fc_bias": torch.zeros(CLASSES).requires_grad_()}
    images = torch.randn(BATCH, CHANNELS, SIZE, SIZE, generator=generator)
    labels = torch.randint(0, CLASSES, (BATCH,), generator=generator)

    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s)")
    losses, step_seconds = [], []
    for step in range(WARMUP_STEPS + args.steps):
        start = time.perf_counter()
        loss = F.cross_entropy(forward(params, images), labels)
        loss.backward()
        with torch.no_grad():
            for p in params.values():
                p -= LEARNING_RATE * p.grad
                p.grad = None
        losses.append(loss.item())
        elapsed = time.perf_counter() - start
        if step >= WARMUP_STEPS:
            step_seconds.append(elapsed)
        warm = " (warm-up)" if step < WARMUP_STEPS else ""
        print(f"step {step + 1} loss {losses[-1]:.6f}{warm}")

    print(f"median step {statistics.median(step_seconds) * 1e3:.3f} ms "
          f"({args.steps} steps after {WARMUP_STEPS} warm-up)")
    print(f"mean step {statistics.fmean(step_seconds) * 1e3:.3f} ms")


if __name__ == "__main__":
    main()

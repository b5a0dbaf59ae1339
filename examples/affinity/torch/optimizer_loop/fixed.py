"""Affinity pair torch/optimizer_loop: naive.py and fixed.py.

An MLP of eight layers trained with SGD, the update a hand-written loop over the weights.

    python naive.py --steps 10
    python fixed.py --steps 10

naive.py writes the update as `for p in params: p -= LR * p.grad; p.grad = None`; fixed.py
is the same script with `optimizer.step(); optimizer.zero_grad()` of
`torch.optim.SGD(params, lr=LR, foreach=True)` on those lines
(examples/affinity/manifest.yaml names them). Seeded numpy weights and inputs, CPU, one
kernel thread. Each prints a checksum of its last output and of the trained weights, so the
two can be compared; tools/affinity_pairs.py imports both and alternates their step() to
measure what the replacement saves.
"""
from __future__ import annotations

import argparse
import math

import numpy as np
import torch
import torch.nn.functional as F

BATCH, HIDDEN, LAYERS = 64, 128, 8
LR = 0.01


def set_up(threads: int = 1) -> None:
    torch.set_num_threads(threads)


def randn(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> torch.Tensor:
    return torch.from_numpy((rng.standard_normal(shape) * scale).astype(np.float32))


def make_state(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    params = []
    for _ in range(LAYERS):
        params += [randn(rng, HIDDEN, HIDDEN, scale=HIDDEN ** -0.5).requires_grad_(),
                   randn(rng, HIDDEN, scale=0.1).requires_grad_()]
    state = {"x": randn(rng, BATCH, HIDDEN), "y": randn(rng, BATCH, HIDDEN), "params": params}
    state["optimizer"] = torch.optim.SGD(params, lr=LR, foreach=True)
    return state


def step(state: dict) -> torch.Tensor:
    h, params = state["x"], state["params"]
    for w, b in zip(params[0::2], params[1::2]):
        h = torch.tanh(F.linear(h, w, b))
    loss = F.mse_loss(h, state["y"])
    loss.backward()
    state["optimizer"].step()
    state["optimizer"].zero_grad()
    return loss


def finish(result: torch.Tensor) -> np.ndarray:
    """The step's result on the host: where a timed step ends."""
    return result.detach().numpy()


def checksum(state: dict, result: torch.Tensor) -> tuple[float, float]:
    """Sum and sum of magnitudes (float64) of the result and of the trained weights."""
    arrays = [finish(result)] + [p.detach().numpy() for p in state.get("params", ())]
    return (float(sum(a.sum(dtype=np.float64) for a in arrays)),
            float(sum(np.abs(a).sum(dtype=np.float64) for a in arrays)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="steps to run (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="seed of weights and inputs")
    parser.add_argument("--threads", type=int, default=1, help="kernel threads (default 1)")
    args = parser.parse_args()
    if args.steps < 1 or args.threads < 1:
        parser.error("--steps and --threads take a whole number >= 1")
    set_up(args.threads)
    state = make_state(args.seed)
    for _ in range(args.steps):
        result = step(state)
    total, magnitude = checksum(state, result)
    print(f"checksum {total:.6f} abs {magnitude:.6f}")


if __name__ == "__main__":
    main()

"""Affinity pair mindspore/optimizer_loop: naive.py and fixed.py.

An MLP of eight layers trained with value_and_grad, the update a hand-written ops.assign
loop.

    GLOG_v=3 python naive.py --steps 10
    GLOG_v=3 python fixed.py --steps 10

naive.py writes the update as `for p, g in zip(params, grads): ops.assign(p, p - LR * g)`;
fixed.py is the same script with `optimizer(grads)` of `nn.SGD(params, learning_rate=LR)` on
those lines (examples/affinity/manifest.yaml names them). Seeded numpy weights and inputs,
CPU, PyNative, queued launches, one kernel thread. Each prints a checksum of its last output
and of the trained weights, so the two can be compared; tools/affinity_pairs.py imports both
and alternates their step() to measure what the replacement saves.
"""
from __future__ import annotations

import argparse
import math

import mindspore as ms
import numpy as np
from mindspore import Tensor, mint, nn, ops

BATCH, HIDDEN, LAYERS = 64, 128, 8
LR = 0.01


def set_up(threads: int = 1) -> None:
    """Before any operator runs: the kernel threads (MindSpore's CPU default is 25) and the
    device are fixed once the runtime starts."""
    ms.device_context.cpu.op_tuning.threads_num(threads)
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_device("CPU")


def randn(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> Tensor:
    return Tensor((rng.standard_normal(shape) * scale).astype(np.float32))


def loss_of(params: list, x: Tensor, y: Tensor) -> Tensor:
    h = x
    for w, b in zip(params[0::2], params[1::2]):
        h = ops.tanh(mint.nn.functional.linear(h, w, b))
    return ((h - y) ** 2).mean()


def make_state(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    params = []
    for i in range(LAYERS):
        params += [ms.Parameter(randn(rng, HIDDEN, HIDDEN, scale=HIDDEN ** -0.5), name=f"w{i}"),
                   ms.Parameter(randn(rng, HIDDEN, scale=0.1), name=f"b{i}")]
    grad_fn = ms.value_and_grad(lambda x, y: loss_of(params, x, y), None, params)
    state = {"x": randn(rng, BATCH, HIDDEN), "y": randn(rng, BATCH, HIDDEN), "params": params,
             "grad_fn": grad_fn}
    return state


def step(state: dict) -> Tensor:
    loss, grads = state["grad_fn"](state["x"], state["y"])
    for p, g in zip(state["params"], grads):
        ops.assign(p, p - LR * g)
    return loss


def finish(result: Tensor) -> np.ndarray:
    """The step's result on the host: where a timed step ends (reading back waits for the
    queued operators)."""
    return result.asnumpy()


def checksum(state: dict, result: Tensor) -> tuple[float, float]:
    """Sum and sum of magnitudes (float64) of the result and of the trained weights."""
    arrays = [finish(result)] + [p.asnumpy() for p in state.get("params", ())]
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

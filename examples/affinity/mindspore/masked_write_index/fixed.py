"""Affinity pair mindspore/masked_write_index: naive.py and fixed.py.

An MLP of eight layers, inference, each layer's small activations (|h| < CUTOFF) zeroed by
a boolean-mask write, `h[mask] = 0.0`.

    GLOG_v=3 python naive.py --steps 10
    GLOG_v=3 python fixed.py --steps 10

naive.py writes the masked write as `h[h.abs() < CUTOFF] = 0.0` (Tensor.__setitem__ with a
boolean mask); fixed.py is the same script with `h = ops.masked_fill(h, h.abs() < CUTOFF, 0.0)`
on that line (examples/affinity/manifest.yaml names it). Seeded numpy weights and inputs,
CPU, PyNative, queued launches, one kernel thread. Each prints a checksum of its last output, so
the two can be compared; tools/affinity_pairs.py imports both and alternates their step() to
measure what the replacement saves.
"""
from __future__ import annotations

import argparse
import math

import mindspore as ms
import numpy as np
from mindspore import Tensor, mint, nn, ops

BATCH, HIDDEN, LAYERS = 256, 256, 8
CUTOFF = 0.1                # activations this small are zeroed


def set_up(threads: int = 1) -> None:
    """Before any operator runs: the kernel threads (MindSpore's CPU default is 25) and the
    device are fixed once the runtime starts."""
    ms.device_context.cpu.op_tuning.threads_num(threads)
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_device("CPU")


def randn(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> Tensor:
    return Tensor((rng.standard_normal(shape) * scale).astype(np.float32))


def make_state(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    layers = [(randn(rng, HIDDEN, HIDDEN, scale=HIDDEN ** -0.5), randn(rng, HIDDEN, scale=0.1))
              for _ in range(LAYERS)]
    return {"x": randn(rng, BATCH, HIDDEN), "layers": layers}


def step(state: dict) -> Tensor:
    h = state["x"]
    for w, b in state["layers"]:
        h = ops.tanh(mint.nn.functional.linear(h, w, b))
        h = ops.masked_fill(h, h.abs() < CUTOFF, 0.0)
    return h


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

"""Affinity pair torch/attention_composed: naive.py and fixed.py.

A causal self-attention block (4 heads of 16 on 64 tokens of 64, batch 4), inference,
attention written as softmax(q @ k^T / sqrt(d), masked) @ v.

    python naive.py --steps 10
    python fixed.py --steps 10

naive.py writes the attention as `(q @ k.transpose(-2, -1)) / math.sqrt(HEAD)`, a
`masked_fill(~causal, -inf)`, `F.softmax(dim=-1)` and `@ v`; fixed.py is the same script
with `F.scaled_dot_product_attention(q, k, v, attn_mask=causal)` on those lines
(examples/affinity/manifest.yaml names them). Seeded numpy weights and inputs, CPU, one
kernel thread. Each prints a checksum of its last output, so the two can be compared;
tools/affinity_pairs.py imports both and alternates their step() to measure what the
replacement saves.
"""
from __future__ import annotations

import argparse
import math

import numpy as np
import torch
import torch.nn.functional as F

BATCH, TOKENS, HIDDEN, HEADS = 4, 64, 64, 4
HEAD = HIDDEN // HEADS


def set_up(threads: int = 1) -> None:
    torch.set_num_threads(threads)


def randn(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> torch.Tensor:
    return torch.from_numpy((rng.standard_normal(shape) * scale).astype(np.float32))


def make_state(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {"x": randn(rng, BATCH, TOKENS, HIDDEN),
            "w_qkv": randn(rng, 3 * HIDDEN, HIDDEN, scale=HIDDEN ** -0.5),
            "causal": torch.tril(torch.ones(TOKENS, TOKENS, dtype=torch.bool))}


def heads(t: torch.Tensor) -> torch.Tensor:
    return t.view(BATCH, TOKENS, HEADS, HEAD).transpose(1, 2)


def step(state: dict) -> torch.Tensor:
    with torch.no_grad():
        q, k, v = (heads(t) for t in F.linear(state["x"], state["w_qkv"]).split(HIDDEN, -1))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(HEAD)
        scores = scores.masked_fill(~state["causal"], float("-inf"))
        y = F.softmax(scores, dim=-1) @ v
        return y.transpose(1, 2).reshape(BATCH, TOKENS, HIDDEN)


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

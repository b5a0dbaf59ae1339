"""The encoder's shape and its seeded weights, in numpy only.

Both ports load the arrays made here, so their outputs can be compared number for number:
the weights never come from either framework's own initialisers. Names follow torch's
state_dict layout (a Linear's weight is (out_features, in_features)); mindspore_model.py
names its parameters the same way.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class EncoderConfig:
    vocab: int = 1000
    hidden: int = 256
    heads: int = 4
    layers: int = 2
    ffn: int = 1024          # the MLP's inner width (4 x hidden)
    seq: int = 64
    batch: int = 2
    eps: float = 1e-5        # LayerNorm epsilon, the same on both sides

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


def _linear(rng: np.random.Generator, out_features: int, in_features: int,
            prefix: str) -> dict[str, np.ndarray]:
    # torch's own Linear init (uniform +-1/sqrt(fan_in)), so activations stay in range.
    bound = 1.0 / np.sqrt(in_features)
    return {
        f"{prefix}.weight": rng.uniform(-bound, bound, (out_features, in_features)),
        f"{prefix}.bias": rng.uniform(-bound, bound, (out_features,)),
    }


def _layer_norm(rng: np.random.Generator, width: int, prefix: str) -> dict[str, np.ndarray]:
    # Near the identity but not exactly: a wrong gamma/beta wiring must change the output.
    return {
        f"{prefix}.weight": 1.0 + 0.1 * rng.standard_normal(width),
        f"{prefix}.bias": 0.1 * rng.standard_normal(width),
    }


def make_weights(config: EncoderConfig, seed: int) -> dict[str, np.ndarray]:
    """Every parameter of the encoder by name, float32, drawn in a fixed order from `seed`."""
    rng = np.random.default_rng(seed)
    weights = {
        "embed.weight": 0.02 * rng.standard_normal((config.vocab, config.hidden)),
        "pos_embed.weight": 0.02 * rng.standard_normal((config.seq, config.hidden)),
    }
    for index in range(config.layers):
        prefix = f"layers.{index}"
        weights.update(_layer_norm(rng, config.hidden, f"{prefix}.ln1"))
        weights.update(_linear(rng, 3 * config.hidden, config.hidden, f"{prefix}.attn.qkv"))
        weights.update(_linear(rng, config.hidden, config.hidden, f"{prefix}.attn.proj"))
        weights.update(_layer_norm(rng, config.hidden, f"{prefix}.ln2"))
        weights.update(_linear(rng, config.ffn, config.hidden, f"{prefix}.mlp.fc1"))
        weights.update(_linear(rng, config.hidden, config.ffn, f"{prefix}.mlp.fc2"))
    weights.update(_layer_norm(rng, config.hidden, "final_norm"))
    return {name: array.astype(np.float32) for name, array in weights.items()}


def make_tokens(config: EncoderConfig, seed: int) -> np.ndarray:
    """The input batch: token ids (batch, seq), int32 (both frameworks index with it)."""
    # A stream of its own, so adding a weight never changes the inputs.
    rng = np.random.default_rng([seed, 1])
    return rng.integers(0, config.vocab, (config.batch, config.seq)).astype(np.int32)


def check_names(expected: dict[str, np.ndarray], found: set[str]) -> None:
    """Fail loudly when a model's parameter names and the weight names differ: a silently
    skipped weight would leave a framework's random init in place and the ports disagree."""
    missing = sorted(set(expected) - found)
    unexpected = sorted(found - set(expected))
    if missing or unexpected:
        raise KeyError(f"weights and model differ: not in the model {missing}, "
                       f"not in the weights {unexpected}")

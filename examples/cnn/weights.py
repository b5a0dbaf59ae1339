"""The CNN's shape, its seeded weights and its training batch, in numpy only.

Both ports load the arrays made here, so their losses can be compared step for step: the
weights never come from either framework's own initialisers. Names follow torch's
state_dict (a BatchNorm's weight/bias/running_mean/running_var); mindspore_model.py maps
them to MindSpore's gamma/beta/moving_mean/moving_variance.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class CNNConfig:
    # Two stages of two conv-bn-relu blocks, each stage ending in a 2x2 max pool.
    stage_channels: tuple[int, ...] = (16, 32)
    blocks_per_stage: int = 2
    in_channels: int = 3
    image_size: int = 32
    classes: int = 10
    batch: int = 8
    learning_rate: float = 0.05
    momentum: float = 0.9
    eps: float = 1e-5          # BatchNorm epsilon, the same on both sides

    def conv_channels(self) -> list[tuple[int, int]]:
        """(in, out) channels of each conv, in order."""
        pairs, channels = [], self.in_channels
        for width in self.stage_channels:
            for _ in range(self.blocks_per_stage):
                pairs.append((channels, width))
                channels = width
        return pairs


def feature_index(config: CNNConfig, conv: int) -> int:
    """Where conv number `conv` sits in the feature stack, which has a pool after each stage
    (both ports build the same stack, so the index names the same layer on both sides)."""
    return conv + conv // config.blocks_per_stage


def make_weights(config: CNNConfig, seed: int) -> dict[str, np.ndarray]:
    """Every parameter and BatchNorm statistic by name, float32, drawn in a fixed order."""
    rng = np.random.default_rng(seed)
    weights: dict[str, np.ndarray] = {}
    for conv, (fan_in_channels, out_channels) in enumerate(config.conv_channels()):
        prefix = f"features.{feature_index(config, conv)}"
        fan_in = fan_in_channels * 3 * 3
        # He-normal for a conv that a ReLU follows.
        weights[f"{prefix}.conv.weight"] = (np.sqrt(2.0 / fan_in) *
                                            rng.standard_normal((out_channels, fan_in_channels,
                                                                 3, 3)))
        weights[f"{prefix}.bn.weight"] = np.ones(out_channels)
        weights[f"{prefix}.bn.bias"] = np.zeros(out_channels)
        weights[f"{prefix}.bn.running_mean"] = np.zeros(out_channels)
        weights[f"{prefix}.bn.running_var"] = np.ones(out_channels)
    width = config.stage_channels[-1]
    bound = 1.0 / np.sqrt(width)
    weights["head.weight"] = rng.uniform(-bound, bound, (config.classes, width))
    weights["head.bias"] = rng.uniform(-bound, bound, (config.classes,))
    return {name: array.astype(np.float32) for name, array in weights.items()}


def make_batch(config: CNNConfig, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """One training batch: images (batch, 3, 32, 32) float32 and class labels (batch,) int64.
    Every step trains on this same batch, so the loss should fall step after step."""
    rng = np.random.default_rng([seed, 1])   # a stream of its own, apart from the weights
    size = config.image_size
    images = rng.standard_normal((config.batch, config.in_channels, size, size))
    labels = rng.integers(0, config.classes, config.batch)
    return images.astype(np.float32), labels.astype(np.int64)


def check_names(expected: set[str], found: set[str]) -> None:
    """Fail loudly when a model's parameter names and the weight names differ: a silently
    skipped weight would leave a framework's random init in place and the ports disagree."""
    missing = sorted(expected - found)
    unexpected = sorted(found - expected)
    if missing or unexpected:
        raise KeyError(f"weights and model differ: not in the model {missing}, "
                       f"not in the weights {unexpected}")

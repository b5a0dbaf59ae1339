"""A small CNN in torch.nn: [conv-bn-relu x2, max pool] x2, global average pool, linear."""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from weights import CNNConfig, check_names

# A torch-only counter in every BatchNorm's state_dict: not a weight, so weights.py has none.
BATCHES_TRACKED = "num_batches_tracked"


class ConvBNReLU(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, eps: float):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(out_channels, eps=eps)
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.bn(self.conv(x)))


class SmallCNN(nn.Module):
    def __init__(self, config: CNNConfig):
        super().__init__()
        layers: list[nn.Module] = []
        for conv, (in_channels, out_channels) in enumerate(config.conv_channels()):
            layers.append(ConvBNReLU(in_channels, out_channels, config.eps))
            if (conv + 1) % config.blocks_per_stage == 0:
                layers.append(nn.MaxPool2d(2, 2))
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(config.stage_channels[-1], config.classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(images).mean(dim=(2, 3)))


def load_weights(model: nn.Module, weights: dict[str, np.ndarray]) -> None:
    state = model.state_dict()
    check_names(set(weights), {name for name in state if not name.endswith(BATCHES_TRACKED)})
    tensors = {name: torch.from_numpy(array) for name, array in weights.items()}
    # strict=False only for the counters left out above; every weight was checked to exist.
    model.load_state_dict(tensors, strict=False)

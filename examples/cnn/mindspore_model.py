"""The CNN of torch_model.py ported to MindSpore (PyNative), same math.

MindSpore 2.10 on CPU has no kernel for mint's conv2d, batch_norm, max_pool2d and
cross_entropy, so the port uses the classic mindspore.nn layers for those (nn.Conv2d,
nn.BatchNorm2d, nn.MaxPool2d; the loss in run_mindspore.py is nn.CrossEntropyLoss) and
mint for the rest. nn.BatchNorm2d's momentum 0.9 (the share of the old running statistic)
is torch's momentum 0.1 (the share of the new one).
"""
from __future__ import annotations

import numpy as np
from mindspore import Tensor, mint, nn

from weights import CNNConfig, check_names

# torch's BatchNorm names (used by weights.py) -> MindSpore's.
BATCHNORM_NAMES = {"bn.weight": "bn.gamma", "bn.bias": "bn.beta",
                   "bn.running_mean": "bn.moving_mean", "bn.running_var": "bn.moving_variance"}


class ConvBNReLU(nn.Cell):
    def __init__(self, in_channels: int, out_channels: int, eps: float):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, pad_mode="pad", padding=1,
                              has_bias=False)
        self.bn = nn.BatchNorm2d(out_channels, eps=eps, momentum=0.9)
        self.relu = mint.nn.ReLU()

    def construct(self, x: Tensor) -> Tensor:
        return self.relu(self.bn(self.conv(x)))


class SmallCNN(nn.Cell):
    def __init__(self, config: CNNConfig):
        super().__init__()
        layers: list[nn.Cell] = []
        for conv, (in_channels, out_channels) in enumerate(config.conv_channels()):
            layers.append(ConvBNReLU(in_channels, out_channels, config.eps))
            if (conv + 1) % config.blocks_per_stage == 0:
                layers.append(nn.MaxPool2d(2, 2))
        self.features = nn.SequentialCell(layers)
        self.head = mint.nn.Linear(config.stage_channels[-1], config.classes)

    def construct(self, images: Tensor) -> Tensor:
        return self.head(mint.mean(self.features(images), dim=(2, 3)))


def mindspore_name(torch_name: str) -> str:
    for torch_suffix, ms_suffix in BATCHNORM_NAMES.items():
        if torch_name.endswith(torch_suffix):
            return torch_name[:-len(torch_suffix)] + ms_suffix
    return torch_name


def load_weights(model: nn.Cell, weights: dict[str, np.ndarray]) -> None:
    by_ms_name = {mindspore_name(name): array for name, array in weights.items()}
    parameters = dict(model.parameters_and_names())
    check_names(set(by_ms_name), set(parameters))
    for name, parameter in parameters.items():
        parameter.set_data(Tensor(by_ms_name[name]))

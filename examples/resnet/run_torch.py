"""A resnet18-style CNN written in torch.nn (BasicBlock x [2, 2, 2, 2], base width 32 where
resnet18 has 64), random weights: inference on one 3x64x64 image, eval mode, no_grad, one
thread.

    python examples/resnet/run_torch.py --steps 10

Prints the logits' checksum and the median and mean step times of the timed steps (2 warm-up steps
come first and are not timed).
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
from torch import nn

WARMUP_STEPS = 2
BLOCKS_PER_STAGE = (2, 2, 2, 2)
BASE_WIDTH = 32
CLASSES = 1000
INPUT_SHAPE = (1, 3, 64, 64)


class BasicBlock(nn.Module):
    """Two 3x3 conv-bn pairs and a shortcut (a strided 1x1 conv-bn where the shape changes)."""

    def __init__(self, in_channels: int, out_channels: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=True)
        self.downsample: nn.Module = nn.Identity()
        if stride != 1 or in_channels != out_channels:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride, bias=False),
                nn.BatchNorm2d(out_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + self.downsample(x))


class ResNet(nn.Module):
    def __init__(self, blocks_per_stage: tuple[int, ...], width: int, classes: int):
        super().__init__()
        # resnet18's stem: a 7x7 stride-2 conv and a 3x3 stride-2 max pool (64x64 -> 16x16).
        self.conv1 = nn.Conv2d(3, width, 7, 2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, padding=1)
        stages, channels = [], width
        for index, blocks in enumerate(blocks_per_stage):
            out_channels = width * 2 ** index
            stride = 1 if index == 0 else 2
            stage = [BasicBlock(channels, out_channels, stride)]
            stage += [BasicBlock(out_channels, out_channels, 1) for _ in range(blocks - 1)]
            stages.append(nn.Sequential(*stage))
            channels = out_channels
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, classes)
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text}")
    return value


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=positive_int, default=10,
                        help="timed steps after the warm-up (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="seed of weights and image")
    parser.add_argument("--threads", type=positive_int, default=1,
                        help="torch.set_num_threads (default 1)")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    model = ResNet(BLOCKS_PER_STAGE, BASE_WIDTH, CLASSES)
    model.eval()
    image = torch.randn(INPUT_SHAPE, generator=torch.Generator().manual_seed(args.seed + 1))

    step_seconds = []
    with torch.no_grad():
        for step in range(WARMUP_STEPS + args.steps):
            start = time.perf_counter()
            logits = model(image).numpy()
            elapsed = time.perf_counter() - start
            if step >= WARMUP_STEPS:
                step_seconds.append(elapsed)

    print(f"torch {torch.__version__}, resnet18-style (blocks {list(BLOCKS_PER_STAGE)}, "
          f"width {BASE_WIDTH}, input {INPUT_SHAPE}), {torch.get_num_threads()} thread(s)")
    print(f"logits {tuple(logits.shape)} checksum {logits.sum(dtype=np.float64):.6f} "
          f"abs {np.abs(logits).sum(dtype=np.float64):.6f}")
    print(f"median step {statistics.median(step_seconds) * 1e3:.3f} ms "
          f"({args.steps} steps after {WARMUP_STEPS} warm-up)")
    print(f"mean step {statistics.fmean(step_seconds) * 1e3:.3f} ms")


if __name__ == "__main__":
    main()

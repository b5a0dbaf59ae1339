"""Residual blocks (nn.Module, Conv2d + BatchNorm2d + skip connections), trained with Adam on
one fixed batch: an image-classification training loop."""
import torch
from torch import nn
import torch.nn.functional as F


class BasicBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        self.blocks = nn.Sequential(BasicBlock(16), BasicBlock(16))
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.bn(self.stem(x)))
        x = self.blocks(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.head(x)


torch.manual_seed(0)
torch.set_num_threads(1)
net = Net()
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
images = torch.randn(4, 3, 16, 16)
labels = torch.randint(0, 10, (4,))

for step in range(6):
    optimizer.zero_grad()
    loss = F.cross_entropy(net(images), labels)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")

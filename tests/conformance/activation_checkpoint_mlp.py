"""Activation checkpointing: a residual MLP stack whose blocks run under
torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False) in training (the forward
recomputed in the backward), Adam, as memory-bound training code writes it."""
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class Block(nn.Module):
    def __init__(self, dim=96):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.fc2 = nn.Linear(2 * dim, dim)

    def forward(self, x):
        return x + self.fc2(torch.nn.functional.silu(self.fc1(self.norm(x))))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(3)])
        self.head = nn.Linear(96, 10)

    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False)
        return self.head(x)


torch.manual_seed(0)
torch.set_num_threads(1)
model = Net()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
x = torch.randn(64, 96)
y = torch.randint(0, 10, (64,))

model.train()
for step in range(6):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")

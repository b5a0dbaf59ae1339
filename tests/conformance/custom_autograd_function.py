"""A custom torch.autograd.Function (a straight-through quantizer: round in forward, identity
gradient in backward, ctx.save_for_backward) inside a small MLP, trained with SGD; as
quantization-aware and research code writes it."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)


class StraightThroughRound(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        return torch.round(x * scale) / scale

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * (x.abs() <= 4.0).to(grad_out.dtype), None


class QuantMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(64, 128), nn.Linear(128, 10)

    def forward(self, x):
        h = StraightThroughRound.apply(F.relu(self.fc1(x)), 16.0)
        return self.fc2(h)


model = QuantMLP()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.randn(128, 64)
y = torch.randint(0, 10, (128,))

for step in range(6):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.5f}")

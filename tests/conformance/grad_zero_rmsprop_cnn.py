"""A small nn.Module CNN (Conv2d, BatchNorm2d, ReLU, AdaptiveAvgPool2d) trained with
RMSprop; gradients cleared with `p.grad.zero_()` by hand, not by the optimizer."""
import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)

model = nn.Sequential(
    nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
    nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
    nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10),
)
optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)
images = torch.randn(8, 1, 16, 16)
labels = torch.randint(0, 10, (8,))
loss_fn = nn.CrossEntropyLoss()

# one step first so every parameter has a .grad to zero in place
loss_fn(model(images), labels).backward()
for step in range(6):
    for p in model.parameters():
        p.grad.zero_()
    loss = loss_fn(model(images), labels)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")

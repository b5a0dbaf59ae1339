"""An MLP (nn.Sequential) regression trained with SGD with momentum, MSE loss and gradient
clipping: the textbook training loop."""
import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)

model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.Tanh(),
                      nn.Linear(64, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
criterion = nn.MSELoss()
x = torch.randn(64, 32)
y = torch.randn(64, 1)

for step in range(8):
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)
    optimizer.step()
    print(f"step {step} loss {loss.item():.5f}")

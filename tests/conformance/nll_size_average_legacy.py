"""Old-style loss calls kept from torch 0.x code: `F.nll_loss(..., size_average=True)` and
`F.mse_loss(..., reduce=True)`, in an MLP trained with SGD."""
import warnings

import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore", category=UserWarning)
torch.manual_seed(0)
torch.set_num_threads(1)

model = torch.nn.Sequential(torch.nn.Linear(20, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.randn(32, 20)
y = torch.randint(0, 4, (32,))
target_mean = torch.zeros(32, 4)

for step in range(6):
    out = model(x)
    loss = F.nll_loss(F.log_softmax(out, dim=1), y, size_average=True)
    loss = loss + 0.01 * F.mse_loss(out, target_mean, reduce=True)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")

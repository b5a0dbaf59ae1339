"""A training loop over torch.utils.data.DataLoader(TensorDataset(...), shuffle=True): the
batches come from the loader (a seeded shuffle), an MLP with nn.Sequential, SGD with weight
decay and nn.CrossEntropyLoss, as a first PyTorch tutorial writes an epoch."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(1)

features = torch.randn(192, 40)
labels = torch.randint(0, 4, (192,))
loader = DataLoader(TensorDataset(features, labels), batch_size=32, shuffle=True)

model = nn.Sequential(nn.Linear(40, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                      nn.Linear(64, 4))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, weight_decay=1e-4)

model.train()
for step, (xb, yb) in enumerate(loader):
    optimizer.zero_grad()
    loss = criterion(model(xb), yb)
    loss.backward()
    optimizer.step()
    accuracy = (model(xb).argmax(dim=1) == yb).float().mean()
    print(f"step {step} loss {loss.item():.4f} accuracy {accuracy.item():.3f}")

"""A classifier MLP with LayerNorm, GELU and dropout, trained with AdamW and
nn.CrossEntropyLoss (label smoothing)."""
import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self, features=48, hidden=96, classes=5):
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.act = nn.GELU()
        self.drop = nn.Dropout(0.1)
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.fc2(self.drop(self.act(self.norm(self.fc1(x)))))


torch.manual_seed(0)
torch.set_num_threads(1)
model = Classifier()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
x = torch.randn(32, 48)
y = torch.randint(0, 5, (32,))

model.train()
for step in range(8):
    logits = model(x)
    loss = criterion(logits, y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")

"""A sequence regressor of Conv1d front end (channels first, then permuted), a 2-layer GRU
(batch_first), a Linear on the last hidden state; SmoothL1 loss, Adam with
clip_grad_value_, as signal / time-series code writes it."""
import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)


class SequenceModel(nn.Module):
    def __init__(self, channels=8, hidden=48):
        super().__init__()
        self.conv = nn.Conv1d(channels, 32, kernel_size=5, padding=2)
        self.act = nn.ReLU()
        self.gru = nn.GRU(32, hidden, num_layers=2, batch_first=True)
        self.out = nn.Linear(hidden, 1)

    def forward(self, signal):
        features = self.act(self.conv(signal)).permute(0, 2, 1)
        _, hidden = self.gru(features)
        return self.out(hidden[-1]).squeeze(-1)


model = SequenceModel()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = nn.SmoothL1Loss()
signal = torch.randn(16, 8, 40)
target = torch.randn(16)

for step in range(6):
    optimizer.zero_grad()
    loss = loss_fn(model(signal), target)
    loss.backward()
    torch.nn.utils.clip_grad_value_(model.parameters(), 0.5)
    optimizer.step()
    print(f"step {step} loss {loss.item():.5f}")

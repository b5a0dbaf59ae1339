"""A seq2seq-style decoder: an nn.LSTMCell (and an nn.GRUCell over its output) stepped in a
Python loop over time with teacher forcing (the ground-truth token embedded at each step), an
output projection, the per-step losses summed, Adam and clip_grad_norm_."""
import torch
import torch.nn.functional as F
from torch import nn


class Decoder(nn.Module):
    def __init__(self, vocab=50, emb=32, hidden=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTMCell(emb, hidden)
        self.gru = nn.GRUCell(hidden, hidden)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, context, targets):
        batch, steps = targets.shape
        h, c = context, torch.zeros_like(context)
        g = torch.zeros_like(context)
        token = torch.zeros(batch, dtype=torch.long)
        losses = []
        for t in range(steps):
            h, c = self.lstm(self.embed(token), (h, c))
            g = self.gru(h, g)
            logits = self.out(g)
            losses.append(F.cross_entropy(logits, targets[:, t]))
            token = targets[:, t]  # teacher forcing
        return torch.stack(losses).mean()


torch.manual_seed(0)
torch.set_num_threads(1)
model = Decoder()
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
context = torch.randn(16, 64)
targets = torch.randint(0, 50, (16, 10))

for step in range(6):
    optimizer.zero_grad()
    loss = model(context, targets)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")

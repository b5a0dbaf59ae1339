"""A causal decoder written by hand, no nn.TransformerDecoder: token ids shifted right with
F.pad, positions from cumsum of a padding mask, a torch.triu mask with masked_fill(-inf),
softmax attention, labels as F.one_hot with label smoothing written via scatter_, a
torch.roll'ed next-token target; SGD training."""
import math

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, DIM, HEADS, SEQ = 64, 48, 4, 16


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.proj = nn.Linear(DIM, DIM)
        self.ln1 = nn.LayerNorm(DIM)
        self.ln2 = nn.LayerNorm(DIM)
        self.ff = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(DIM, dim=-1)
        q, k, v = (z.view(b, t, HEADS, DIM // HEADS).transpose(1, 2) for z in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(DIM // HEADS)
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        scores = scores.masked_fill(causal, float("-inf"))
        y = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, t, DIM)
        x = x + self.proj(y)
        return x + self.ff(self.ln2(x))


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Embedding(SEQ + 1, DIM)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, ids, keep):
        inputs = F.pad(ids, (1, 0), value=0)[:, :-1]          # shift right, BOS = 0
        positions = torch.cumsum(keep.long(), dim=1) * keep.long()
        x = self.tok(inputs) + self.pos(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


torch.manual_seed(0)
torch.set_num_threads(1)
model = Decoder()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
ids = torch.randint(1, VOCAB, (8, SEQ))
keep = torch.ones(8, SEQ, dtype=torch.bool)
keep[:, -3:] = False                                        # right padding

for step in range(6):
    logits = model(ids, keep)
    targets = torch.roll(ids, shifts=-1, dims=1)
    smooth = torch.full((8, SEQ, VOCAB), 0.1 / VOCAB)
    smooth.scatter_(-1, targets.unsqueeze(-1), 0.9 + 0.1 / VOCAB)
    hard = F.one_hot(targets, VOCAB).float()
    per_token = -(smooth * F.log_softmax(logits, dim=-1)).sum(-1)
    loss = (per_token * keep).sum() / keep.sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    hits = (hard.argmax(-1) == logits.argmax(-1)).float().mean()
    print(f"step {step} loss {loss.item():.4f} hits {hits.item():.3f}")

"""Positional encodings built inside the step with device= arguments, as device-agnostic
code writes them (`torch.arange(n, device=x.device)`, `torch.tensor(v, device=...)`):
sinusoidal positions added to embeddings, then a Linear; inference."""
import math

import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)

embed = nn.Embedding(300, 64)
proj = nn.Linear(64, 64)
tokens = torch.randint(0, 300, (4, 20))

with torch.no_grad():
    for step in range(6):
        x = embed(tokens)
        seq = x.shape[1]
        pos = torch.arange(seq, device=x.device, dtype=torch.float32).unsqueeze(1)
        div = torch.exp(torch.arange(0, 64, 2, device=x.device).float() * (-math.log(10000.0) / 64))
        pe = torch.zeros(seq, 64, device=x.device)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        scale = torch.tensor(math.sqrt(64.0), device=x.device)
        out = proj(x * scale + pe)
        print(f"step {step} out {out.mean().item():.6f}")

"""A causal self-attention block written by hand with torch.nn.functional: projections
with F.linear, q @ k^T, a causal mask with masked_fill, F.softmax(x, dim=-1), F.layer_norm,
F.gelu; inference."""
import math

import torch
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)

batch, seq, dim, heads = 2, 16, 64, 4
head_dim = dim // heads
w_qkv = torch.randn(3 * dim, dim) * 0.05
w_out = torch.randn(dim, dim) * 0.05
w_fc = torch.randn(4 * dim, dim) * 0.05
w_proj = torch.randn(dim, 4 * dim) * 0.05
ln_w, ln_b = torch.ones(dim), torch.zeros(dim)
causal = torch.tril(torch.ones(seq, seq, dtype=torch.bool))
x = torch.randn(batch, seq, dim)


def block(x):
    h = F.layer_norm(x, (dim,), ln_w, ln_b)
    q, k, v = F.linear(h, w_qkv).split(dim, dim=-1)
    q = q.view(batch, seq, heads, head_dim).transpose(1, 2)
    k = k.view(batch, seq, heads, head_dim).transpose(1, 2)
    v = v.view(batch, seq, heads, head_dim).transpose(1, 2)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(head_dim)
    scores = scores.masked_fill(~causal, float("-inf"))
    attn = F.softmax(scores, dim=-1)
    y = (attn @ v).transpose(1, 2).contiguous().view(batch, seq, dim)
    x = x + F.linear(y, w_out)
    h = F.layer_norm(x, (dim,), ln_w, ln_b)
    return x + F.linear(F.gelu(F.linear(h, w_fc)), w_proj)


with torch.no_grad():
    for step in range(6):
        out = block(x)
        print(f"step {step} out {out.abs().mean().item():.6f}")

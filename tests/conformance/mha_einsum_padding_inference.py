"""nn.MultiheadAttention (batch_first) with a key_padding_mask, then a bilinear readout
written with torch.einsum ('bld,de,bme->blm', 'bhqk,bhkd->bhqd' shapes), as research code
writes attention scores by hand; inference under torch.no_grad()."""
import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)

batch, length, d_model, heads = 4, 24, 64, 4
attention = nn.MultiheadAttention(d_model, heads, batch_first=True).eval()
bilinear = torch.randn(d_model, d_model) * 0.05
x = torch.randn(batch, length, d_model)
lengths = torch.tensor([24, 20, 12, 7])
padding = torch.arange(length)[None, :] >= lengths[:, None]

with torch.no_grad():
    for step in range(6):
        y, weights = attention(x, x, x, key_padding_mask=padding, need_weights=True)
        scores = torch.einsum("bld,de,bme->blm", y, bilinear, y)
        scores = scores.masked_fill(padding[:, None, :], float("-inf")).softmax(dim=-1)
        q = y.view(batch, length, heads, d_model // heads).transpose(1, 2)
        mixed = torch.einsum("bhqk,bhkd->bhqd", scores[:, None].expand(-1, heads, -1, -1), q)
        pooled = torch.einsum("bhqd->bqd", mixed).sum(dim=1)
        print(f"step {step} pooled {pooled.norm().item():.5f} w {weights.mean().item():.5f}")

"""A key/value cache that starts empty and is concatenated onto every step, as
`transformers` caches do (`torch.cat([torch.empty(b, h, 0, d), k], dim=-2)`), reset each
step so the step repeats; attention with F.scaled_dot_product_attention; inference."""
import torch
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)

batch, heads, seq, head_dim = 2, 4, 8, 16
w_q = torch.randn(64, 64) * 0.05
w_k = torch.randn(64, 64) * 0.05
w_v = torch.randn(64, 64) * 0.05
x = torch.randn(batch, seq, 64)


def heads_of(t):
    return t.view(batch, seq, heads, head_dim).transpose(1, 2)


with torch.no_grad():
    for step in range(6):
        cache_k = torch.empty(batch, heads, 0, head_dim)
        cache_v = torch.empty(batch, heads, 0, head_dim)
        q, k, v = heads_of(x @ w_q), heads_of(x @ w_k), heads_of(x @ w_v)
        cache_k = torch.cat([cache_k, k], dim=-2)
        cache_v = torch.cat([cache_v, v], dim=-2)
        y = F.scaled_dot_product_attention(q, cache_k, cache_v, is_causal=True)
        print(f"step {step} y {y.mean().item():.6f} cache {tuple(cache_k.shape)}")

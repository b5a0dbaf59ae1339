"""A mixture-of-experts layer as MoE code writes it: a router Linear, softmax gates, topk(2)
experts per token, tokens gathered per expert with nonzero/index_select, the expert MLPs, and
the weighted outputs scattered back with index_add_; inference."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)

tokens, d_model, experts, top_k = 64, 32, 4, 2
router = nn.Linear(d_model, experts, bias=False)
expert_mlps = nn.ModuleList(
    nn.Sequential(nn.Linear(d_model, 64), nn.GELU(), nn.Linear(64, d_model)) for _ in range(experts))
x = torch.randn(tokens, d_model)

with torch.no_grad():
    for step in range(6):
        gates = F.softmax(router(x), dim=-1)
        weights, chosen = torch.topk(gates, top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        out = torch.zeros_like(x)
        for e in range(experts):
            token_idx, slot = torch.nonzero(chosen == e, as_tuple=True)
            routed = expert_mlps[e](x.index_select(0, token_idx))
            gate = weights[token_idx, slot].unsqueeze(-1)
            out.index_add_(0, token_idx, routed * gate)
        load = torch.gather(gates, 1, chosen).mean()
        print(f"step {step} out {out.norm().item():.5f} load {load.item():.5f}")

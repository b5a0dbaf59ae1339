"""Shape plumbing: cat, split, chunk, stack, permute, reshape, unsqueeze/expand, flip,
roll, repeat, as feature-mixing code does it; inference."""
import torch

torch.manual_seed(0)
torch.set_num_threads(1)

a = torch.randn(4, 16, 32)
b = torch.randn(4, 16, 32)
w = torch.randn(96, 64) * 0.1

for step in range(6):
    both = torch.cat([a, b], dim=-1)                      # 4x16x64
    left, right = torch.split(both, [24, 40], dim=-1)
    parts = torch.chunk(both, 4, dim=1)
    stacked = torch.stack(parts, dim=0).mean(dim=0)       # 4x4x64
    mixed = torch.cat([left, right.flip(-1)[..., :8], stacked.repeat(1, 4, 1)[..., :64]], -1)
    mixed = mixed.permute(1, 0, 2).reshape(16, -1)        # 16x(4*96)
    proj = mixed.view(16, 4, 96) @ w                      # 16x4x64
    rolled = torch.roll(proj, shifts=1, dims=0)
    gate = torch.sigmoid(rolled.unsqueeze(2).expand(-1, -1, 2, -1).sum(2))
    out = torch.cat(torch.unbind(gate, dim=1), dim=-1)
    print(f"step {step} {out.shape} {out.mean().item():.6f}")

"""Masking, indexing and in-place writes as data-wrangling code writes them: boolean masks,
torch.where, fancy indexing, gather / index_select / scatter_add_, slice assignment,
clamp_, masked_fill_; no gradients."""
import torch

torch.manual_seed(0)
torch.set_num_threads(1)

scores = torch.randn(64, 128)
labels = torch.randint(0, 128, (64,))
rows = torch.arange(64)
pick = torch.tensor([3, 7, 11, 19, 23])
buckets = torch.zeros(8, 128)
bucket_of = torch.randint(0, 8, (64,))

for step in range(6):
    x = scores.clone()
    x[x < -2.0] = -2.0                                  # boolean-mask write
    x[:, :4] = 0.0                                      # slice assignment
    x.clamp_(max=2.5)
    positive = torch.where(x > 0, x, torch.zeros_like(x))
    target = x[rows, labels]                            # advanced indexing
    chosen = x.index_select(0, pick)
    top = torch.gather(x, 1, labels.unsqueeze(1)).squeeze(1)
    x.masked_fill_(x.abs() < 0.1, 0.0)
    sums = buckets.clone().scatter_add_(0, bucket_of.unsqueeze(1).expand(-1, 128), x)
    count = (x != 0).sum(dim=1)
    print(f"step {step} {positive.sum().item():.3f} {target.mean().item():.4f} "
          f"{chosen.sum().item():.3f} {top.sum().item():.3f} {sums.sum().item():.3f} "
          f"{count.float().mean().item():.2f}")

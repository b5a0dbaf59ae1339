"""A CLIP-style contrastive step: two MLP towers, F.normalize, logits = a @ b.T / t with a
learned temperature, torch.arange labels and the symmetric F.cross_entropy, a logsumexp
alignment metric, AdamW, as SimCLR/CLIP training code writes it."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)

image_tower = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 32))
text_tower = nn.Sequential(nn.Linear(48, 128), nn.GELU(), nn.Linear(128, 32))
logit_scale = nn.Parameter(torch.ones([]) * 2.659)
params = list(image_tower.parameters()) + list(text_tower.parameters()) + [logit_scale]
optimizer = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)
images = torch.randn(32, 64)
texts = torch.randn(32, 48)

for step in range(6):
    a = F.normalize(image_tower(images), dim=-1)
    b = F.normalize(text_tower(texts), dim=-1)
    logits = a @ b.T * logit_scale.exp()
    labels = torch.arange(logits.shape[0])
    loss = (F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels)) / 2
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        logit_scale.clamp_(0, 4.6052)
        gap = (torch.logsumexp(logits, dim=1) - logits.diagonal()).mean()
    print(f"step {step} loss {loss.item():.4f} gap {gap.item():.4f}")

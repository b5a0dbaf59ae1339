"""A fastText-style text classifier: nn.EmbeddingBag (mean) over flat token ids with
offsets, a Linear head, trained with Adagrad."""
import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)

bag = nn.EmbeddingBag(500, 32, mode="mean")
head = nn.Linear(32, 4)
params = list(bag.parameters()) + list(head.parameters())
optimizer = torch.optim.Adagrad(params, lr=0.1)
tokens = torch.randint(0, 500, (60,))
offsets = torch.tensor([0, 10, 25, 31, 44])
labels = torch.tensor([0, 3, 1, 2, 1])

for step in range(6):
    logits = head(bag(tokens, offsets))
    loss = nn.functional.cross_entropy(logits, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")

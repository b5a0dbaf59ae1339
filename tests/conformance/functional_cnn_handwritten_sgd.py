"""A CNN written with torch.nn.functional and bare weight tensors, trained with a
hand-written SGD update (`p -= lr * p.grad` under no_grad, then `p.grad = None`), as a
from-scratch tutorial writes it."""
import torch
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)

w1 = (torch.randn(8, 3, 3, 3) * 0.1).requires_grad_()
b1 = torch.zeros(8, requires_grad=True)
w2 = (torch.randn(16, 8, 3, 3) * 0.1).requires_grad_()
b2 = torch.zeros(16, requires_grad=True)
w3 = (torch.randn(10, 16 * 4 * 4) * 0.05).requires_grad_()
b3 = torch.zeros(10, requires_grad=True)
params = [w1, b1, w2, b2, w3, b3]
lr = 0.05

x = torch.randn(8, 3, 16, 16)
y = torch.randint(0, 10, (8,))

for step in range(6):
    h = F.max_pool2d(F.relu(F.conv2d(x, w1, b1, padding=1)), 2)
    h = F.max_pool2d(F.relu(F.conv2d(h, w2, b2, padding=1)), 2)
    logits = F.linear(h.flatten(1), w3, b3)
    loss = F.cross_entropy(logits, y)
    loss.backward()
    with torch.no_grad():
        for p in params:
            p -= lr * p.grad
            p.grad = None
    print(f"step {step} loss {loss.item():.4f}")

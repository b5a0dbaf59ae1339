"""A logistic-regression-style model trained with torch.autograd.grad and hand-written
updates (`w.sub_(lr * g)` under no_grad), with a boolean-mask gradient clip
(`g[g.abs() > 1] = 0`), as research code does it."""
import torch

torch.manual_seed(0)
torch.set_num_threads(1)

x = torch.randn(128, 40)
y = (torch.rand(128) > 0.5).float()
w = torch.zeros(40, requires_grad=True)
b = torch.zeros(1, requires_grad=True)
hidden = (torch.randn(40, 40) * 0.1).requires_grad_()
lr = 0.1

for step in range(8):
    h = torch.tanh(x @ hidden)
    logits = h @ w + b
    loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, y)
    loss = loss + 1e-3 * (hidden ** 2).sum()
    gw, gb, gh = torch.autograd.grad(loss, [w, b, hidden])
    with torch.no_grad():
        gh[gh.abs() > 1.0] = 0.0
        w.sub_(lr * gw)
        b.sub_(lr * gb)
        hidden.sub_(lr * gh)
    print(f"step {step} loss {loss.item():.5f}")

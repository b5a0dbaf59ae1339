"""`opbench model` on training steps as people write them, with real torch and MindSpore: leaf
weights made with `requires_grad_()`, functional calls, a hand-written update under
`torch.no_grad()`; the traced framework replays every call of its own (its backward
included) and the other stands in, keeping the gradient chain, for what it cannot run.
Each script is tiny and replayed in one process per framework (--processes 1 --budget 0)."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("mindspore")

from test_model_real import _projected, _script  # noqa: E402

pytestmark = pytest.mark.integration

# A functional step whose loss goes through a call MindSpore has no mapping for
# (pairwise_distance): before, that call was left out of both frameworks, so torch's own
# loss.backward() had nothing to differentiate ("element 0 of tensors does not require grad")
# and the backward was projected in neither.
FUNCTIONAL = """
import torch
import torch.nn.functional as F
torch.manual_seed(0)
torch.set_num_threads(1)
w1 = (torch.randn(32, 16) / 4).requires_grad_()
b1 = torch.zeros(32).requires_grad_()
w2 = (torch.randn(8, 32) / 6).requires_grad_()
x, target = torch.randn(16, 16), torch.randn(16, 8)
for _ in range(6):
    h = F.relu(F.linear(x, w1, b1))
    y = F.linear(h, w2)
    loss = F.pairwise_distance(y, target).mean()
    loss.backward()
    with torch.no_grad():
        for p in (w1, b1, w2):
            p -= 0.05 * p.grad
            p.grad = None
print(float(loss))
"""


def test_a_hand_written_training_step_replays_whole_in_torch_and_through_stand_ins_in_mindspore(
        tmp_path):
    model, done = _projected(tmp_path, _script(tmp_path, "functional.py", FUNCTIONAL))
    assert model["errors"] == [] and model["mismatches"] == [], model
    # torch's own replay ran every call, its backward included
    assert model["stand_in_share"]["torch"] == 0.0
    assert model["training"]["covered"] is True
    (left_out,) = model["not_covered"]
    assert left_out["api"] == "torch.nn.functional.pairwise_distance"
    # MindSpore stood in for it and still differentiated the forward through the stand-in
    assert 0 < model["stand_in_share"]["mindspore"] < 0.5
    rows = {row["api"]: row for row in model["apis"]}
    backward = rows["torch.Tensor.backward"]
    assert backward["reference_s"] > 0 and backward["target_s"] > 0
    # the update's `p -= ...` is written back in MindSpore (its __isub__ returns a new tensor)
    assert rows["torch.Tensor.__isub__"]["mapped_api"].endswith("+ assign (in place, as torch)")
    assert model["self_check"] is not None


# Leaf weights trained by torch.optim, the loss written out by hand.
OPTIMIZED = """
import torch
import torch.nn.functional as F
torch.manual_seed(0)
torch.set_num_threads(1)
w1 = (torch.randn(32, 16) / 4).requires_grad_()
b1 = torch.zeros(32).requires_grad_()
w2 = (torch.randn(4, 32) / 6).requires_grad_()
x, target = torch.randn(16, 16), torch.randn(16, 4)
params = [w1, b1, w2]
opt = torch.optim.OPTIMIZER
for _ in range(6):
    opt.zero_grad()
    loss = ((F.linear(F.relu(F.linear(x, w1, b1)), w2) - target) ** 2).mean()
    loss.backward()
    opt.step()
print(float(loss))
"""


@pytest.mark.parametrize("optimizer, update, replayed_as", [
    ("AdamW(params, lr=1e-3, weight_decay=0.01)", "torch.Tensor.addcdiv_",
     "mindspore.ops.AdamWeightDecay (as nn.AdamWeightDecay's update)"),
    ("RMSprop(params, lr=1e-3)", "torch.Tensor.addcmul_",
     "mindspore mul, add + assign (as Tensor.addcmul_)"),
    ("Adagrad(params, lr=1e-2)", "torch.Tensor.addcdiv_",
     "mindspore div, add + assign (as Tensor.addcdiv_)")])
def test_torch_optimizers_on_leaf_weights_replay_in_mindspore(tmp_path, optimizer, update,
                                                              replayed_as):
    """AdamW's decay folds into MindSpore's AdamWeightDecay kernel (nn.AdamWeightDecay's);
    RMSprop's and Adagrad's addcmul_ / addcdiv_ (no mapping) are composed and written back;
    the updated weights agree between the frameworks (the probe compares them)."""
    script = _script(tmp_path, "optimized.py", OPTIMIZED.replace("OPTIMIZER", optimizer))
    model, done = _projected(tmp_path, script)
    assert model["errors"] == [] and model["mismatches"] == [], model["mismatches"]
    assert model["training"]["covered"] is True
    assert model["coverage"] > 0.95, model["not_covered"]
    mapped = {(row["api"], row["mapped_api"]) for row in model["signatures"]}
    assert (update, replayed_as) in mapped, mapped
    if optimizer.startswith("AdamW"):
        assert ("torch.Tensor.mul_", "(folded into the optimizer update after it)") in mapped


# clip_grad_norm_ (torch._foreach_norm, _foreach_mul_), gradients zeroed in place, a
# boolean-mask write and an in-place sub_ on leaf weights.
CLIPPED = """
import torch
import torch.nn.functional as F
torch.manual_seed(0)
torch.set_num_threads(1)
w1 = (torch.randn(32, 16) / 4).requires_grad_()
w2 = (torch.randn(4, 32) / 6).requires_grad_()
x, target = torch.randn(16, 16), torch.randn(16, 4)
params = [w1, w2]
for p in params:
    p.grad = torch.zeros_like(p)
for _ in range(6):
    for p in params:
        p.grad.zero_()
    loss = ((F.linear(F.relu(F.linear(x, w1)), w2) - target) ** 2).mean()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    with torch.no_grad():
        for p in params:
            g = p.grad
            g[g.abs() > 0.01] = 0
            p.sub_(0.05 * g)
print(float(loss))
"""


def test_clipping_masked_writes_and_zeroed_gradients_replay_in_both(tmp_path):
    model, done = _projected(tmp_path, _script(tmp_path, "clipped.py", CLIPPED))
    assert model["errors"] == [] and model["mismatches"] == [], model["mismatches"]
    assert model["training"]["covered"] is True
    assert model["not_covered"] == [], model["not_covered"]
    assert model["stand_in_share"] == {"torch": 0.0, "mindspore": 0.0}
    mapped = {row["api"]: row["mapped_api"] for row in model["apis"]}
    assert mapped["torch._foreach_norm"].startswith("mindspore.ops.norm per tensor")
    assert mapped["torch.Tensor.zero_"].startswith("mindspore.ops.zeros_like + assign")


# torch.autograd.grad(loss, [w, b]) and a hand-written update of what it returns: before,
# MindSpore refused it ("mindspore.grad takes its arguments differently"), 40% of the traced
# time of tests/conformance/autograd_grad_manual_update.py not covered.
AUTOGRAD = """
import torch
torch.manual_seed(0)
torch.set_num_threads(1)
x, y = torch.randn(32, 16), (torch.rand(32) > 0.5).float()
w = torch.zeros(16, requires_grad=True)
b = torch.zeros(1, requires_grad=True)
hidden = (torch.randn(16, 16) * 0.1).requires_grad_()
for _ in range(6):
    logits = torch.tanh(x @ hidden) @ w + b
    loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, y)
    gw, gb, gh = torch.autograd.grad(loss, [w, b, hidden])
    with torch.no_grad():
        w.sub_(0.1 * gw)
        b.sub_(0.1 * gb)
        hidden.sub_(0.1 * gh)
print(float(loss))
"""


def test_autograd_grad_replays_in_mindspore_as_value_and_grad_over_the_forward(tmp_path):
    model, done = _projected(tmp_path, _script(tmp_path, "autograd.py", AUTOGRAD))
    assert model["errors"] == [] and model["mismatches"] == [], model["mismatches"]
    assert model["not_covered"] == [], model["not_covered"]
    assert model["stand_in_share"] == {"torch": 0.0, "mindspore": 0.0}
    rows = {row["api"]: row for row in model["apis"]}
    grad = rows["torch.autograd.grad"]
    assert grad["mapped_api"].startswith("value_and_grad over the replayed forward")
    assert grad["reference_s"] > 0 and grad["target_s"] > 0


# value_and_grad with has_aux and a grad_position: the grad function returns ((loss, logits),
# (the input's gradient, (the weights' gradients))). Before, the script's reads of the logits
# (at (0, 1) of the call's output) indexed the loss in both replays and stood in, and the
# weights' gradients sat deeper than a captured path reached: the update read unseen tensors.
HAS_AUX = """
import mindspore as ms
import numpy as np
from mindspore import mint, nn, ops
ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")
ms.set_seed(0)
net = nn.SequentialCell(mint.nn.Linear(16, 32), nn.ReLU(), mint.nn.Linear(32, 4))
params = net.trainable_params()
x = ms.Tensor(np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32))
y = ms.Tensor(np.array([0, 1, 2, 3] * 2, np.int32))
optimizer = nn.SGD(params, learning_rate=0.05)

def forward(data, label):
    logits = net(data)
    return ops.cross_entropy(logits, label), logits

grad_fn = ms.value_and_grad(forward, 0, params, has_aux=True)
for _ in range(6):
    (loss, logits), (x_grad, grads) = grad_fn(x, y)
    optimizer(grads)
    hits = (logits.argmax(-1) == y).sum()
    print(float(loss.asnumpy()), int(hits.asnumpy()))
"""


def test_has_aux_and_grad_position_replay_the_aux_reads_and_the_update(tmp_path):
    model, done = _projected(tmp_path, _script(tmp_path, "aux.py", HAS_AUX))
    assert model["traced_framework"] == "mindspore"
    assert model["errors"] == [] and model["mismatches"] == [], model["mismatches"]
    assert model["stand_in_share"]["mindspore"] == 0.0
    rows = {row["api"]: row for row in model["apis"]}
    assert rows["mindspore.value_and_grad"]["mapped_api"] == "torch.Tensor.backward"
    assert rows["mindspore.nn.SGD"]["mapped_api"] == "torch.optim.SGD.step"
    assert "mindspore.Tensor.argmax" in rows            # read through the aux logits
    not_covered = {row["api"] for row in model["not_covered"]}
    assert "mindspore.Tensor.argmax" not in not_covered, model["not_covered"]


# Gradient accumulation: two micro-batches a step, each `(loss / 2).backward()`, then SGD.
# MindSpore has no backward call: each backward is its own value_and_grad block over the
# forward calls since the previous one, the second's gradients summed onto the first's as
# torch's `.grad` holds them (before, the second backward was a stand-in: 29% of this step).
ACCUMULATED = """
import torch
from torch import nn
torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss_fn = nn.MSELoss()
x, target = torch.randn(2, 8, 16), torch.randn(2, 8, 4)
for _ in range(6):
    opt.zero_grad()
    for micro in range(2):
        loss = loss_fn(model(x[micro]), target[micro]) / 2
        loss.backward()
    opt.step()
print(float(loss))
"""


def test_every_backward_of_an_accumulating_step_is_differentiated_in_mindspore(tmp_path):
    model, done = _projected(tmp_path, _script(tmp_path, "accumulated.py", ACCUMULATED))
    assert model["errors"] == [] and model["mismatches"] == [], model["mismatches"]
    assert model["coverage"] == pytest.approx(1.0), model["not_covered"]
    assert model["not_covered"] == []
    assert model["stand_in_share"] == {"torch": 0.0, "mindspore": 0.0}
    assert model["training"]["covered"] is True
    steps = model["region"]["steps"]
    rows = {row["api"]: row for row in model["apis"]}
    backward = rows["torch.Tensor.backward"]
    assert backward["calls"] == 2 * steps
    assert backward["mapped_api"].startswith("value_and_grad over the replayed forward")
    assert backward["reference_s"] > 0 and backward["target_s"] > 0


# The same accumulation written in MindSpore: two value_and_grad calls a step, their
# gradients summed by the script, then nn.SGD. The sum and the update read both blocks'
# gradients, so the output check compares them against torch's replay of both backwards;
# before, the second block was a stand-in (15% of the region not covered) and the calls
# after it, downstream of a stand-in, went unchecked.
MS_ACCUMULATED = """
import mindspore as ms
import numpy as np
from mindspore import mint, nn, ops
ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")
ms.set_seed(0)
net = nn.SequentialCell(mint.nn.Linear(16, 32), nn.ReLU(), mint.nn.Linear(32, 4))
params = net.trainable_params()
rng = np.random.default_rng(0)
x = ms.Tensor(rng.standard_normal((2, 8, 16)).astype(np.float32))
y = ms.Tensor(rng.standard_normal((2, 8, 4)).astype(np.float32))
optimizer = nn.SGD(params, learning_rate=0.05)

def forward(data, target):
    return ops.mse_loss(net(data), target) / 2

grad_fn = ms.value_and_grad(forward, None, params)
for _ in range(6):
    loss0, grads = grad_fn(x[0], y[0])
    loss1, more = grad_fn(x[1], y[1])
    optimizer(tuple(a + b for a, b in zip(grads, more)))
    print(float(loss1.asnumpy()))
"""


def test_two_value_and_grad_blocks_a_step_replay_and_their_summed_update_agrees(tmp_path):
    model, done = _projected(tmp_path, _script(tmp_path, "ms_accumulated.py", MS_ACCUMULATED))
    assert model["traced_framework"] == "mindspore"
    assert model["errors"] == [] and model["mismatches"] == [], model["mismatches"]
    assert model["coverage"] == pytest.approx(1.0), model["not_covered"]
    assert model["not_covered"] == []          # nothing stood in: the update is compared
    assert model["stand_in_share"] == {"mindspore": 0.0, "torch": 0.0}
    rows = {row["api"]: row for row in model["apis"]}
    assert rows["mindspore.value_and_grad"]["calls"] == 2 * model["region"]["steps"]
    assert rows["mindspore.nn.SGD"]["mapped_api"] == "torch.optim.SGD.step"

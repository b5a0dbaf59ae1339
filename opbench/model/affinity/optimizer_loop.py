"""A hand-written SGD loop over a step's weights, found by its data flow (the
`optimizer_loop` family: MindSpore's `for p, g in zip(params, grads): ops.assign(p, p - lr *
g)`, torch's `with torch.no_grad(): for p in params: p -= lr * p.grad`).

One weight's update is a write-back into the weight fed by that weight and its gradient:

- MindSpore: `ops.assign(p, p - lr * g)` (an assign of p whose value is a sub of (p, a mul
  of g by one number)), or `ops.assign_sub(p, lr * g)` / the `ops.AssignSub` primitive (an
  assign_sub of p whose value is that mul);
- torch, with grad mode off: `p -= lr * g` / `p.sub_(lr * g)` (an in-place sub of p whose
  value is that mul), or `p.add_(g, alpha=-lr)`,

where g is p's own gradient and each intermediate (the mul, the sub) is read by the next
call of the update alone. Nothing here looks at the script's text or at how many weights
there are: a loop over 16 weights is 16 such updates.

Which gradient is p's own, by framework:

- MindSpore: the step's backward call (value_and_grad's grad function, recorded with the
  weights it differentiates as its second argument and `(loss, grads)` as its output, the
  grads in the weights' order) made it: g is the element (1, i) of its output where p is
  the i-th weight;
- torch: `loss.backward()` returns nothing; it leaves the gradient in `p.grad`, an
  attribute read the capture does not record, so g reaches the update as an external
  tensor (measured on examples/affinity/torch/optimizer_loop/naive.py: each step's 16
  `p.grad` are 16 fresh externals). g is taken as p's gradient when it is an external of
  p's shape and dtype that the update alone reads, not a weight and not read by any loss,
  after a `loss.backward()` whose loss depends on p (the latest such call is the
  update's; `torch.autograd.grad` returns its gradients and leaves `.grad` alone).

The updates of one backward call with one learning rate are one loop: the fused optimizer
(MindSpore: `nn.SGD(weights, learning_rate=lr)` called with their gradients; torch:
`torch.optim.SGD(weights, lr=lr, foreach=True)`, `.step()`, `.zero_grad()`) replaces them
all, where the last write-back was. A weight read by another call between its own
write-back and that point would read it unchanged after the swap, and a write-back whose
result a later call reads (torch's `p -= ...` returns p) would have no call left to stand
for it: such an update is left out of the loop.
"""
from __future__ import annotations

import linecache
import re
from dataclasses import dataclass

from opbench.model.affinity.graph import StepGraph, Value
from opbench.model.program import Ext, Lit, Ref, Seq, Site

__all__ = ["WeightUpdate", "UpdateLoop", "weight_update", "update_loop", "WRITE_BACKS",
           "steps_an_optimizer"]

# The operations (graph.op_of) that write a value back into a weight, per framework:
# MindSpore's by whether the value is the new weight ("assign") or what is taken off it
# ("assign_sub"); torch's in-place methods ("sub_": `-=` and sub_ of what is taken off,
# "add_": add_ of the gradient with alpha=-lr).
WRITE_BACKS = {"mindspore": frozenset({"assign", "assign_sub"}),
               "torch": frozenset({"sub_", "add_"})}


# An optimizer's step call in the script's source: `optimizer.step()`, `opt.step()`.
_STEP_CALL = re.compile(r"\.step\(\s*\)")


@dataclass(frozen=True)
class WeightUpdate:
    weight: Ext
    # the weight's gradient: an element of the backward's output (MindSpore) or the
    # external its `p.grad` read is (torch)
    grad: Value
    lr: float
    backward: int                  # the backward call that made the gradient
    calls: tuple[int, ...]         # the update's calls in program order, the write-back last


@dataclass(frozen=True)
class UpdateLoop:
    backward: int
    lr: float
    updates: tuple[WeightUpdate, ...]      # in program order

    @property
    def root(self) -> int:
        """The last write-back: where the fused optimizer's call goes."""
        return self.updates[-1].calls[-1]

    @property
    def calls(self) -> tuple[int, ...]:
        return tuple(sorted(i for u in self.updates for i in u.calls))


def _number(g: StepGraph, index: int) -> float | None:
    """The one numeric constant of a call (a bool is not a learning rate)."""
    numbers = [v for v in g.literals(index) if isinstance(v, (int, float))
               and not isinstance(v, bool)]
    return float(numbers[0]) if len(numbers) == 1 and not g.call(index).kwargs else None


def _scaled_gradient(g: StepGraph, value: Value, user: int
                     ) -> tuple[int, Value, float] | None:
    """`lr * grad` read by `user` alone: the mul, the gradient and lr."""
    mul = g.producer(value)
    if mul is None or g.ops[mul] != "mul" or not g.only_used_by(mul, {user}):
        return None
    operands = g.tensors(mul)
    lr = _number(g, mul)
    if len(operands) != 1 or lr is None:
        return None
    return mul, operands[0], lr


def _ms_gradient_of(g: StepGraph, grad: Value, weight: Ext) -> int | None:
    """The backward call whose output holds `weight`'s gradient at `grad` (None: grad is
    not one, or another weight's)."""
    if not isinstance(grad, Ref):
        return None
    backward = g.call(grad.call)
    if not backward.backward or len(grad.path) != 2 or grad.path[0] != 1 \
            or len(backward.args) < 2 or not isinstance(backward.args[1], Seq):
        return None
    weights = backward.args[1].items
    i = grad.path[1]
    return grad.call if 0 <= i < len(weights) and weights[i] == weight else None


def _torch_gradient_of(g: StepGraph, grad: Value, weight: Ext, user: int) -> int | None:
    """The backward call that left `weight`'s gradient in `p.grad`, read by `user` as the
    external `grad` (module doc); None: grad is not one."""
    if not isinstance(grad, Ext) or grad == weight or g.readers(grad) != (user,) \
            or g.shape(grad) != g.shape(weight) or g.dtype(grad) != g.dtype(weight):
        return None
    for index in range(user - 1, -1, -1):
        # `loss.backward()` alone fills .grad (torch.autograd.grad returns its gradients)
        if g.call(index).backward and weight.id in g.loss_externals(index):
            return index
    return None


def _negated_alpha(g: StepGraph, index: int) -> float | None:
    """lr of `p.add_(g, alpha=-lr)`: alpha given by keyword, a number, nothing else."""
    call = g.call(index)
    if g.literals(index) or [k for k, _ in call.kwargs] != ["alpha"]:
        return None
    alpha = call.kwargs[0][1]
    if not isinstance(alpha, Lit) or isinstance(alpha.value, bool) \
            or not isinstance(alpha.value, (int, float)):
        return None
    return -float(alpha.value)


def weight_update(g: StepGraph, index: int) -> WeightUpdate | None:
    """The update written back by call `index`, if it is one (module doc)."""
    op = g.ops[index]
    framework = g.step.framework
    operands = g.tensors(index)
    if op not in WRITE_BACKS.get(framework, ()) or len(operands) != 2 \
            or not isinstance(operands[0], Ext):
        return None
    if framework == "torch" and g.call(index).grad_enabled:
        return None                 # torch refuses `p -= ...` on a weight with grad mode on
    weight, value = operands
    calls: list[int] = [index]
    if op == "add_":
        lr = _negated_alpha(g, index)
        if lr is None:
            return None
        grad, mul = value, None
    else:
        if g.literals(index) or g.call(index).kwargs:
            return None
        user = index
        if op == "assign":
            sub = g.producer(value)
            if sub is None or g.ops[sub] != "sub" or not g.only_used_by(sub, {index}) \
                    or g.literals(sub):
                return None
            read = g.tensors(sub)
            if len(read) != 2 or read[0] != weight:
                return None
            value, user = read[1], sub
            calls.insert(0, sub)
        scaled = _scaled_gradient(g, value, user)
        if scaled is None:
            return None
        mul, grad, lr = scaled
    reader = index if mul is None else mul
    backward = (_torch_gradient_of(g, grad, weight, reader) if framework == "torch"
                else _ms_gradient_of(g, grad, weight))
    if backward is None:
        return None
    return WeightUpdate(weight, grad, lr, backward, tuple(
        [mul, *calls] if mul is not None else calls))


def update_loop(g: StepGraph, root: int) -> UpdateLoop | None:
    """The loop whose last write-back is `root`: every weight update of root's backward
    call with root's learning rate, each weight once, those whose weight another call reads
    between its write-back and root, or whose write-back's result a call reads, left out
    (module doc). None: root ends no loop."""
    last = weight_update(g, root)
    if last is None:
        return None
    updates = [u for u in (weight_update(g, i) for i in range(root))
               if u is not None and u.backward == last.backward and u.lr == last.lr]
    updates.append(last)
    weights = [u.weight for u in updates]
    if len(set(weights)) != len(weights):
        return None                 # a weight updated twice: not one optimizer step
    inside = {i for u in updates for i in u.calls}
    kept = [u for u in updates
            if (u is last or not g.consumers[u.calls[-1]])
            and not any(u.weight in g.tensors(i)
                        for i in range(u.calls[-1] + 1, root) if i not in inside)]
    return UpdateLoop(last.backward, last.lr, tuple(kept))


def steps_an_optimizer(site: Site | None) -> bool:
    """The loop's write-backs are the script's `optimizer.step()`: their site (the first
    frame outside torch) is a line calling `.step()`, not a loop the script wrote. torch's
    SGD without foreach on CPU steps weight by weight (`param.add_(grad, alpha=-lr)` each,
    recorded as the updates a hand-written loop makes: nothing in the calls tells the two
    apart), so the script's own line says which it is. Read through linecache: the file
    the capture named, as it is now."""
    if site is None:
        return False
    lines = (linecache.getline(site.file, n) for n in range(site.first_line, site.last_line + 1))
    return any(_STEP_CALL.search(line) for line in lines)

"""Which external tensors of a step the replay trains (tracks gradients for).

A weight held by a framework layer is a Parameter (role "parameter"): trained. A script
written without layers holds its weights as plain leaf tensors made with `requires_grad_()`
and updates them by hand (`p -= lr * p.grad` under `torch.no_grad()`); seen from the step,
such a weight is an external tensor like the script's data, so the replay would not track
it, and torch's replay of `loss.backward()` failed ("element 0 of tensors does not require
grad and does not have a grad_fn") on a functional CNN: the backward, 44% of its step, was
projected in neither framework. A training step shows its weights by what it does to them:

- a float external tensor the loss depends on that the step writes in place with grad mode
  off (the update of a hand-written or a torch.optim optimizer: `p -= ...`, `p.add_(...)`,
  `p.addcdiv_(...)`); the optimizer's own buffers are written so too, but no loss reads them;
- the tensors `torch.autograd.grad(loss, inputs)` differentiates with respect to;
- the weights a `torch.optim.SGD` call steps that the loss reads (`opbench suggest`'s swap
  for a hand-written loop: the in-place updates that showed them are gone).

The script's data is read by the loss but never written: it stays untracked, as it was (its
gradient would add work to the backward the script did not do).
"""
from __future__ import annotations

from typing import Sequence

from opbench.config.vocabulary import FLOAT_DTYPES
from opbench.model.program import Call, Ext, Ref, Seq, exts_in, refs_in
from opbench.model.replay.training_routes import TORCH_SGD

__all__ = ["IN_PLACE_OPERATORS", "AUTOGRAD_GRAD", "is_in_place", "loss_calls", "loss_of",
           "loss_dependencies", "trainable_externals", "is_differentiation", "block_calls",
           "accumulated_onto"]

# Python's augmented assignments on a tensor: torch writes the receiver (MindSpore 2.10
# returns a new tensor and leaves the receiver as it was; routes.py writes it back).
IN_PLACE_OPERATORS = frozenset({"__iadd__", "__isub__", "__imul__", "__itruediv__"})
AUTOGRAD_GRAD = "torch.autograd.grad"
_FLOATS = FLOAT_DTYPES


def is_in_place(api: str) -> bool:
    """A tensor method that writes its receiver: `add_`, `mul_`, ... or `-=`, `+=`, ..."""
    if ".Tensor." not in api:
        return False
    name = api.rsplit(".", 1)[-1]
    return name in IN_PLACE_OPERATORS or (name.endswith("_") and not name.startswith("__"))


def loss_calls(calls: Sequence[Call], loss: Ref) -> list[int]:
    """The calls the loss depends on (itself included), in program order."""
    inside: set[int] = set()
    stack = [loss.call]
    while stack:
        i = stack.pop()
        if i in inside:
            continue
        inside.add(i)
        stack.extend(r.call for r in refs_in(calls[i]))
    return sorted(inside)


def loss_of(call: Call) -> Ref | None:
    """The loss a backward or torch.autograd.grad call differentiates, as the call that made
    it (None: not made inside the step, or several). torch.autograd.grad is captured with
    its outputs as torch passes them on, a tuple: `grad(loss, ...)` reads `(loss,)`."""
    if not (call.backward or call.api == AUTOGRAD_GRAD) or not call.args:
        return None
    loss = call.args[0]
    if isinstance(loss, Seq) and len(loss.items) == 1:
        loss = loss.items[0]
    return loss if isinstance(loss, Ref) else None


def loss_dependencies(calls: Sequence[Call]) -> set[int]:
    """The calls any loss of the step (a backward's, torch.autograd.grad's) depends on."""
    found: set[int] = set()
    for call in calls:
        loss = loss_of(call)
        if loss is not None:
            found.update(loss_calls(calls, loss))
    return found


def trainable_externals(calls: Sequence[Call], float_ids: set[int]) -> frozenset[int]:
    """The ids of the external tensors (of those in `float_ids`: the floating ones) the
    step trains besides its Parameters (module doc)."""
    read_by_loss = {e.id for i in loss_dependencies(calls) for e in exts_in(calls[i])}
    found: set[int] = set()
    for call in calls:
        if call.api == AUTOGRAD_GRAD and len(call.args) > 1:
            found.update(_exts_of(call.args[1]))
        if call.replay_api == TORCH_SGD and call.args:
            found.update(i for i in _exts_of(call.args[0]) if i in read_by_loss)
        if not call.grad_enabled and is_in_place(call.api) and call.args \
                and isinstance(call.args[0], Ext) and call.args[0].id in read_by_loss:
            found.add(call.args[0].id)
    return frozenset(found & float_ids)


def _exts_of(value: object) -> list[int]:
    if isinstance(value, Ext):
        return [value.id]
    if isinstance(value, Seq):
        return [i for item in value.items for i in _exts_of(item)]
    if isinstance(value, tuple):
        return [i for item in value for i in _exts_of(item)]
    return []


def is_differentiation(call: Call) -> bool:
    """A call that differentiates a loss: `loss.backward()`, MindSpore's value_and_grad
    grad function (both captured with `backward`), `torch.autograd.grad`."""
    return call.backward or call.api == AUTOGRAD_GRAD


def block_calls(calls: Sequence[Call], backward: Call) -> list[int]:
    """The calls one differentiated block runs: those its loss depends on (itself included)
    made after the step's previous differentiation, in program order. A call made before it
    ran there already (in the earlier block, or alone): the block reads its result as a
    value, as torch's second backward cannot run through a graph the first one freed."""
    loss = loss_of(backward)
    if loss is None:
        return []
    since = max((c.index for c in calls[:backward.index] if is_differentiation(c)),
                default=-1)
    return [i for i in loss_calls(calls, loss) if i > since]


# torch's gradient resets between two backwards of a step that the capture sees: zero_grad
# with set_to_none=False and `p.grad.zero_()` (the foreach form over the gradients)
_GRAD_RESETS = frozenset({"torch.Tensor.zero_", "torch._foreach_zero_"})


def accumulated_onto(calls: Sequence[Call], weights: frozenset[int]) -> dict[int, int]:
    """Per torch `loss.backward()` that adds its gradients to an earlier one's (gradient
    accumulation: torch sums `.grad` across backwards until it is reset), that earlier
    backward's index. A backward starts afresh after a weight update or a gradient reset
    between them: an in-place write with grad mode off on one of the `weights` (external
    ids: Parameters and trainable externals; every torch optimizer's update, a hand-written
    `p -= lr * p.grad`), a torch.optim.SGD step, a `zero_()`. `p.grad = None` and zero_grad()'s default
    (set_to_none) leave no call: a step that drops its gradients between two backwards
    without updating is read as accumulating. torch.autograd.grad returns its gradients
    and MindSpore's value_and_grad makes them anew: neither accumulates."""
    onto: dict[int, int] = {}
    last: int | None = None
    for call in calls:
        if call.backward and call.framework == "torch":
            if last is not None:
                onto[call.index] = last
            last = call.index
        elif last is not None and _resets_gradients(call, weights):
            last = None
    return onto


def _resets_gradients(call: Call, weights: frozenset[int]) -> bool:
    if call.api in _GRAD_RESETS or call.replay_api == TORCH_SGD:
        return True
    if call.grad_enabled or not is_in_place(call.api) or not call.args:
        return False
    receiver = call.args[0]
    return isinstance(receiver, Ext) and receiver.id in weights

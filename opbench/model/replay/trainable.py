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
           "loss_dependencies", "trainable_externals"]

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

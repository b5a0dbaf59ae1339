"""MindSpore's nn.AdamWeightDecay call (capture/lowering.py: the weights, the gradients, the
learning rate, betas, eps and each weight's decay) replayed in each framework: in MindSpore the
same Cell over the replay's weights, its decays as parameter groups; in torch
`torch.optim.AdamW` with the same groups, stepped with those gradients: what a torch port of
the training step runs.

The two updates differ in one thing: MindSpore's AdamWeightDecay kernel has no bias
correction (var -= lr * (m / (sqrt(v) + eps) + decay * var), after m and v are updated as
Adam's), torch's AdamW has (var *= 1 - lr * wd, then var -= lr / bc1 * m / (sqrt(v) / sqrt(bc2)
+ eps), bc = 1 - beta ** t). torch's step t computes MindSpore's exactly with lr_t = lr * bc1
/ sqrt(bc2), eps_t = eps / sqrt(bc2) and wd_t = lr * wd / lr_t: the inverse of the fold that
replays torch's AdamW as MindSpore's kernel (optimizer_fold.py). The replay sets them on the
groups before each step (a few float writes: the same kernels run), so the two updates agree
and the output check compares them; a port's plain AdamW runs the same kernels with other
numbers in them.
"""
from __future__ import annotations

import math
from typing import Any, Callable

from opbench.model.program import Call
from opbench.model.replay.momentum_route import decay_groups
from opbench.model.replay.route import Route, Unmapped
from opbench.model.replay.training_routes import kept_optimizer

__all__ = ["ADAM_WEIGHT_DECAY", "adam_weight_decay_route", "torch_settings_at"]

ADAM_WEIGHT_DECAY = "mindspore.nn.AdamWeightDecay"
_SETTINGS = ("learning_rate", "beta1", "beta2", "eps", "weight_decays")


def adam_weight_decay_route(call: Call, target: str) -> Route | Unmapped:
    settings = dict(call.init)
    missing = set(_SETTINGS) - set(settings)
    if missing:
        return Unmapped(f"nn.AdamWeightDecay captured without {', '.join(sorted(missing))}")
    if target == "mindspore":
        return Route(ADAM_WEIGHT_DECAY, _mindspore_adam_weight_decay(settings), call.args)
    if target == "torch":
        return Route("torch.optim.AdamW.step (as nn.AdamWeightDecay, no bias correction)",
                     _torch_adamw(settings), call.args)
    return Unmapped(f"no optimizer route in {target}")


def torch_settings_at(step: int, learning_rate: float, beta1: float, beta2: float,
                      eps: float, decay: float) -> tuple[float, float, float]:
    """(lr, eps, weight_decay) that make torch's AdamW step `step` (1-based) compute MindSpore's
    AdamWeightDecay update with these settings (module doc)."""
    bc1, bc2_root = 1.0 - beta1 ** step, math.sqrt(1.0 - beta2 ** step)
    lr = learning_rate * bc1 / bc2_root
    return lr, eps / bc2_root, (learning_rate * decay / lr if lr else 0.0)


def _mindspore_adam_weight_decay(settings: dict[str, Any]) -> Callable[..., Any]:
    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        cell = resolve(ADAM_WEIGHT_DECAY)

        def build(weights: list) -> Any:
            # groups keep each weight's decay whatever the replay's Parameters are named
            # (without groups MindSpore decides by the names); order_params keeps the order
            # of the gradients
            groups = [{"params": group, "weight_decay": decay}
                      for decay, group in decay_groups(weights, settings["weight_decays"])]
            return cell(groups + [{"order_params": weights}],
                        learning_rate=settings["learning_rate"], beta1=settings["beta1"],
                        beta2=settings["beta2"], eps=settings["eps"])

        def step(optimizer: Any, weights: list, grads: Any) -> Any:
            optimizer(tuple(grads))
            return tuple(weights)
        return kept_optimizer(build, step)
    return make


class _StepCounted:
    """torch's AdamW and the number of steps it took (its state's own counter is a tensor per
    weight: reading it would cost a call per step)."""

    def __init__(self, optimizer: Any, decays: list[float]):
        self.optimizer = optimizer
        self.decays = decays
        self.steps = 0


def _torch_adamw(settings: dict[str, Any]) -> Callable[..., Any]:
    learning_rate, beta1, beta2, eps = (settings[k] for k in _SETTINGS[:4])

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        adamw = resolve("torch.optim.AdamW")

        def build(weights: list) -> _StepCounted:
            grouped = decay_groups(weights, settings["weight_decays"])
            optimizer = adamw([{"params": group, "weight_decay": decay}
                               for decay, group in grouped],
                              lr=learning_rate, betas=(beta1, beta2), eps=eps)
            return _StepCounted(optimizer, [decay for decay, _ in grouped])

        def step(held: _StepCounted, weights: list, grads: Any) -> Any:
            held.steps += 1
            for group, decay in zip(held.optimizer.param_groups, held.decays):
                group["lr"], group["eps"], group["weight_decay"] = torch_settings_at(
                    held.steps, learning_rate, beta1, beta2, eps, decay)
            for weight, grad in zip(weights, grads):
                weight.grad = grad
            held.optimizer.step()
            return tuple(weights)
        return kept_optimizer(build, step)
    return make

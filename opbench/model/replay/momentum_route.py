"""MindSpore's nn.Momentum call (capture/lowering.py: the weights, the gradients, learning
rate, momentum, Nesterov and each weight's decay) replayed in each framework: in MindSpore the
same Cell over the replay's weights, its weight decays as parameter groups (as mindcv's
create_optimizer builds it); in torch `torch.optim.SGD(momentum=, nesterov=)` with the same
groups, stepped with those gradients: what a torch port of the training loop runs.

The two updates are the same arithmetic: MindSpore adds decay * weight to the gradient
(Optimizer.decay_weight), then ApplyMomentum: accum = momentum * accum + grad (accum starts
at zero, so the first step's is the gradient, as torch's buffer starts as the gradient's
copy) and weight -= lr * accum (Nesterov: lr * (grad + momentum * accum)); torch's SGD with
dampening 0 computes the same. Each optimizer is built on the first call and kept, with its
momentum buffers, as the script's was; both return the updated weights, so the replay's output
check compares the two updates.
"""
from __future__ import annotations

from typing import Any, Callable

from opbench.model.program import Call
from opbench.model.replay.route import Route, Unmapped
from opbench.model.replay.training_routes import kept_optimizer, torch_optimizer_step

__all__ = ["MOMENTUM", "momentum_route", "decay_groups"]

MOMENTUM = "mindspore.nn.Momentum"


def decay_groups(weights: list, decays: tuple[float, ...]) -> list[tuple[float, list]]:
    """The weights grouped by their decay, in order of first appearance."""
    groups: dict[float, list] = {}
    for weight, decay in zip(weights, decays):
        groups.setdefault(float(decay), []).append(weight)
    return list(groups.items())


def momentum_route(call: Call, target: str) -> Route | Unmapped:
    settings = dict(call.init)
    missing = {"learning_rate", "momentum", "nesterov", "weight_decays"} - set(settings)
    if missing:
        return Unmapped(f"nn.Momentum captured without {', '.join(sorted(missing))}")
    if target == "mindspore":
        return Route(MOMENTUM, _mindspore_momentum(settings), call.args)
    if target == "torch":
        return Route("torch.optim.SGD.step (momentum, as nn.Momentum)", _torch_sgd(settings),
                     call.args)
    return Unmapped(f"no optimizer route in {target}")


def _groups(weights: list, settings: dict[str, Any]) -> list[dict[str, Any]]:
    """The weights as parameter groups by their weight decay: how both optimizers take them."""
    return [{"params": group, "weight_decay": decay}
            for decay, group in decay_groups(weights, settings["weight_decays"])]


def _mindspore_momentum(settings: dict[str, Any]) -> Callable[..., Any]:
    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        momentum_cell = resolve("mindspore.nn.Momentum")

        def build(weights: list) -> Any:
            return momentum_cell(_groups(weights, settings) + [{"order_params": weights}],
                                 learning_rate=settings["learning_rate"],
                                 momentum=settings["momentum"],
                                 use_nesterov=settings["nesterov"])

        def step(optimizer: Any, weights: list, grads: Any) -> Any:
            optimizer(tuple(grads))
            return tuple(weights)
        return kept_optimizer(build, step)
    return make


def _torch_sgd(settings: dict[str, Any]) -> Callable[..., Any]:
    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        sgd = resolve("torch.optim.SGD")

        def build(weights: list) -> Any:
            return sgd(_groups(weights, settings), lr=settings["learning_rate"], momentum=settings["momentum"],
                       nesterov=settings["nesterov"])

        return kept_optimizer(build, torch_optimizer_step)
    return make

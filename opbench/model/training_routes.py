"""How a MindSpore training step's own parts replay (the forward's calls route as any call):

- its backward (ms_backward.py's `mindspore.value_and_grad` call, arguments: the loss and
  the weights) in torch: `loss.backward()` after clearing the weights' gradients (a port's
  `zero_grad()`), returning `(loss, grads)` as value_and_grad does, so the optimizer call
  reads the gradients it made. In MindSpore the replay differentiates its forward instead
  (replay.py);
- its optimizer Cell's call (lowering.py: `mindspore.nn.SGD` / `mindspore.nn.Adam` with the
  weights, the gradients and the hyperparameters): in MindSpore the same Cell built over the
  replay's weights (the jit-compiled update the script ran), in torch `torch.optim.SGD` /
  `torch.optim.Adam` stepped with those gradients (what a torch port runs). Each is built on
  the first call and kept: it holds the momentum or moment buffers, as the script's did.
  Both return the updated weights, so the replay's output check compares the two updates.
"""
from __future__ import annotations

from typing import Any, Callable

from opbench.model.program import Call
from opbench.model.route import Route, Unmapped

__all__ = ["OPTIMIZER_APIS", "optimizer_route", "torch_backward"]

SGD, ADAM = "mindspore.nn.SGD", "mindspore.nn.Adam"
OPTIMIZER_APIS = frozenset({SGD, ADAM})


def torch_backward(call: Call) -> Route | Unmapped:
    if len(call.args) < 2:
        return Unmapped("a backward without the weights it differentiates")

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        def backward(loss: Any, weights: Any) -> Any:
            for weight in weights:
                weight.grad = None
            loss.backward()
            return loss, tuple(weight.grad for weight in weights)
        return backward
    return Route("torch.Tensor.backward", make, call.args[:2])


def optimizer_route(call: Call, target: str) -> Route | Unmapped:
    settings = dict(call.init)
    if target == "mindspore":
        return Route(call.replay_api or call.api, _mindspore_optimizer(call.api, settings),
                     call.args)
    if target == "torch":
        name = "torch.optim.SGD" if call.api == SGD else "torch.optim.Adam"
        return Route(f"{name}.step", _torch_optimizer(call.api, settings), call.args)
    return Unmapped(f"no optimizer route in {target}")


def _kept(build: Callable[[list], Any], step: Callable[[Any, list, Any], Any]
          ) -> Callable[[list, Any], Any]:
    """An optimizer built over the first call's weights and kept for the later ones (a new
    one for other weights: a probe and a timing pass share the replay's weights)."""
    held: dict[tuple[int, ...], Any] = {}

    def update(weights: list, grads: Any) -> Any:
        key = tuple(id(w) for w in weights)
        optimizer = held.get(key)
        if optimizer is None:
            optimizer = held[key] = build(list(weights))
        return step(optimizer, list(weights), grads)
    return update


def _mindspore_optimizer(api: str, settings: dict[str, Any]) -> Callable[..., Any]:
    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        from mindspore import nn

        def build(weights: list) -> Any:
            if api == SGD:
                return nn.SGD(weights, learning_rate=settings["learning_rate"],
                              momentum=settings["momentum"], dampening=settings["dampening"],
                              nesterov=settings["nesterov"])
            return nn.Adam(weights, learning_rate=settings["learning_rate"],
                           beta1=settings["beta1"], beta2=settings["beta2"], eps=settings["eps"])
        def step(optimizer: Any, weights: list, grads: Any) -> Any:
            optimizer(tuple(grads))
            return tuple(weights)
        return _kept(build, step)
    return make


def _torch_optimizer(api: str, settings: dict[str, Any]) -> Callable[..., Any]:
    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        import torch

        def build(weights: list) -> Any:
            if api == SGD:
                return torch.optim.SGD(weights, lr=settings["learning_rate"],
                                       momentum=settings["momentum"],
                                       dampening=settings["dampening"],
                                       nesterov=settings["nesterov"])
            return torch.optim.Adam(weights, lr=settings["learning_rate"],
                                    betas=(settings["beta1"], settings["beta2"]),
                                    eps=settings["eps"])

        def step(optimizer: Any, weights: list, grads: Any) -> Any:
            for weight, grad in zip(weights, grads):
                weight.grad = grad
            optimizer.step()
            return tuple(weights)
        return _kept(build, step)
    return make

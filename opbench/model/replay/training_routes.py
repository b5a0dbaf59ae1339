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
  Both return the updated weights, so the replay's output check compares the two updates;
- torch's own `torch.optim.SGD` call (`opbench suggest`'s swap for a hand-written torch SGD
  loop, affinity/optimizer_loop.py): built over the weights with its `init` (lr, foreach),
  `.step()` then `.zero_grad()`, as a fixed script runs it (torch_sgd_route).

And what torch's training utilities call that MindSpore's CPU build has no kernel or no
counterpart for (TRAINING_TORCH_TO_MINDSPORE): `clip_grad_norm_`'s `torch._foreach_norm`
(each tensor's norm; `ops.norm` over the flattened tensor: MindSpore 2.10 on CPU has no
LinalgVectorNorm kernel, and `ops.norm` of a matrix with ord 2 is its spectral norm) and
`torch._foreach_mul_` (and add, sub, div, clamp_min, clamp_max; in place or not),
`Tensor.zero_` (no InplaceZero kernel on CPU: `ops.zeros_like`, written back), and the `addcmul_` / `addcdiv_`
of RMSprop's and Adagrad's updates (no mapping: composed, written back). An in-place write is written
back to the receiver (`write_back`): MindSpore 2.10's in-place methods return a new tensor.
"""
from __future__ import annotations

from typing import Any, Callable

from opbench.model.bound_args import bind
from opbench.model.program import Call, Lit
from opbench.model.replay.route import Route, Unmapped

__all__ = ["OPTIMIZER_APIS", "TRAINING_TORCH_TO_MINDSPORE", "optimizer_route",
           "torch_backward", "write_back", "TORCH_SGD", "torch_sgd_route"]

SGD, ADAM = "mindspore.nn.SGD", "mindspore.nn.Adam"
OPTIMIZER_APIS = frozenset({SGD, ADAM})
TORCH_SGD = "torch.optim.SGD"


def torch_backward(call: Call) -> Route | Unmapped:
    """value_and_grad's grad function in torch, returning what the captured call returned
    (capture/observer.py backward_result): the forward's output (with has_aux the loss and
    its aux values: `forward_out`), the weights' gradients, and under a grad_position the
    inputs' gradients, zeros (the replay differentiates the weights only)."""
    if len(call.args) < 2:
        return Unmapped("a backward without the weights it differentiates")
    # keyword only: the forward's whole output where it is more than the loss
    forward_out = bind(("forward_out",), (), call.kwargs, forward_out=call.args[0]).forward_out
    inputs_grads = (call.outputs[1][2],) if call.outputs and call.outputs[0] == "seq" \
        and len(call.outputs[1]) == 3 else ()

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        def zeros(node: Any) -> Any:
            import torch
            if node and node[0] == "tensor":
                return torch.zeros(tuple(node[1]), dtype=getattr(torch, node[2]))
            if node and node[0] == "seq":
                return tuple(zeros(n) for n in node[1])
            return None

        def backward(loss: Any, weights: Any, out: Any) -> Any:
            for weight in weights:
                weight.grad = None
            loss.backward()
            return (out, tuple(weight.grad for weight in weights),
                    *(zeros(node) for node in inputs_grads))
        return backward
    return Route("torch.Tensor.backward", make, (*call.args[:2], forward_out))


# The hyperparameters lowering.py records for each optimizer Cell (its `init` pairs).
_SGD_SETTINGS = ("learning_rate", "momentum", "dampening", "nesterov")
_ADAM_SETTINGS = ("learning_rate", "beta1", "beta2", "eps")


def optimizer_route(call: Call, target: str) -> Route | Unmapped:
    settings = bind(_SGD_SETTINGS if call.api == SGD else _ADAM_SETTINGS, (), call.init)
    if target == "mindspore":
        return Route(call.replay_api or call.api, _mindspore_optimizer(call.api, settings),
                     call.args)
    if target == "torch":
        name = "torch.optim.SGD" if call.api == SGD else "torch.optim.Adam"
        return Route(f"{name}.step", _torch_optimizer(call.api, settings), call.args)
    return Unmapped(f"no optimizer route in {target}")


def torch_optimizer_step(optimizer: Any, weights: list, grads: Any) -> Any:
    """A torch optimizer's step over gradients the replay computed: each weight's .grad set,
    then step(); the updated weights."""
    for weight, grad in zip(weights, grads):
        weight.grad = grad
    optimizer.step()
    return tuple(weights)


def kept_optimizer(build: Callable[[list], Any], step: Callable[[Any, list, Any], Any]
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


def _mindspore_optimizer(api: str, settings: Any) -> Callable[..., Any]:
    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        from mindspore import nn

        def build(weights: list) -> Any:
            # the Cell takes the settings by their own names (_SGD_SETTINGS, _ADAM_SETTINGS)
            cell = nn.SGD if api == SGD else nn.Adam
            return cell(weights, **settings._asdict())
        def step(optimizer: Any, weights: list, grads: Any) -> Any:
            optimizer(tuple(grads))
            return tuple(weights)
        return kept_optimizer(build, step)
    return make


def _torch_optimizer(api: str, settings: Any) -> Callable[..., Any]:
    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        import torch

        def build(weights: list) -> Any:
            if api == SGD:
                return torch.optim.SGD(weights, lr=settings.learning_rate,
                                       momentum=settings.momentum,
                                       dampening=settings.dampening,
                                       nesterov=settings.nesterov)
            return torch.optim.Adam(weights, lr=settings.learning_rate,
                                    betas=(settings.beta1, settings.beta2),
                                    eps=settings.eps)

        return kept_optimizer(build, torch_optimizer_step)
    return make


def torch_sgd_route(call: Call, target: str) -> Route | Unmapped:
    """torch's `torch.optim.SGD(weights, **init)` (built on the first call, kept), then
    `.step()` and `.zero_grad()`, returning the weights. Called with the weights alone it
    steps on what the replayed backward left in their `.grad`, as a script's optimizer
    does; a weight without one is an error, not a weight left out (SGD's step skips it
    silently: a swap would look faster for updating less). Called with gradients too, each
    weight's `.grad` is set to its gradient first (the output check's program: the
    gradients the hand-written loop read)."""
    if target != "torch":
        return Unmapped(f"{TORCH_SGD} is replayed in torch only")
    settings = dict(call.init)
    if "lr" not in settings:
        return Unmapped(f"{TORCH_SGD} without its learning rate")

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        sgd = resolve(TORCH_SGD)
        checked: set[int] = set()

        def step(optimizer: Any, weights: list, grads: Any) -> Any:
            if grads is not None:
                for weight, grad in zip(weights, grads):
                    weight.grad = grad
            elif id(optimizer) not in checked:      # once: a per-step check costs time
                if any(w.grad is None for w in weights):
                    raise ValueError(f"{TORCH_SGD}: a weight has no gradient (.grad) "
                                     f"after the backward")
                checked.add(id(optimizer))
            optimizer.step()
            optimizer.zero_grad()
            return tuple(weights)
        update = kept_optimizer(lambda weights: sgd(weights, **settings), step)
        return lambda weights, grads=None: update(weights, grads)
    return Route(f"{TORCH_SGD}.step + zero_grad", make, call.args)


# -- torch's training utilities in MindSpore --------------------------------------------------

def write_back(receiver: Any, result: Any) -> Any:
    """torch's in-place call in MindSpore: the result written into the receiver (a Parameter
    with ops.assign, as a port's update does; a plain tensor with assign_value)."""
    if result is not receiver:
        import mindspore
        if isinstance(receiver, mindspore.Parameter):
            mindspore.ops.assign(receiver, result)
        else:
            receiver.assign_value(result)
    return receiver


def _ms_zero(call: Call) -> Route | Unmapped:
    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        zeros_like = resolve("mindspore.ops.zeros_like")
        return lambda x: write_back(x, zeros_like(x))
    return Route("mindspore.ops.zeros_like + assign (as Tensor.zero_)", make, call.args[:1])


def _ms_foreach_norm(call: Call) -> Route | Unmapped:
    order = bind(("tensors", "ord"), call.args, call.kwargs, ord=Lit(2.0)).ord
    if not isinstance(order, Lit) or not isinstance(order.value, (int, float)):
        return Unmapped("torch._foreach_norm with an ord that is not a number")
    ord_value = float(order.value)

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        norm = resolve("mindspore.ops.norm")
        return lambda tensors: tuple(norm(t.reshape(-1), ord_value) for t in tensors)
    return Route("mindspore.ops.norm per tensor (as torch._foreach_norm)", make,
                 call.args[:1])


_FOREACH_OPS = {"add": "mindspore.ops.add", "sub": "mindspore.ops.sub",
                "mul": "mindspore.ops.mul", "div": "mindspore.ops.div",
                # clip_grad_value_'s two calls (torch 2.13: _foreach_clamp_min_ then
                # _foreach_clamp_max_ over the gradients, 0.3% of
                # gru_conv1d_sequence_training.py's traced time): a bound per tensor, as
                # ops.maximum / ops.minimum against the number
                "clamp_min": "mindspore.ops.maximum", "clamp_max": "mindspore.ops.minimum"}


def _ms_foreach(op: str, in_place: bool) -> Callable[[Call], Route | Unmapped]:
    """torch._foreach_<op>[_](tensors, other): other a number, a tensor, or a list of
    either (one per tensor); `alpha=` is not replayed."""
    def rule(call: Call) -> Route | Unmapped:
        if call.kwargs or len(call.args) != 2:
            return Unmapped(f"torch._foreach_{op} with keywords or without one other operand")

        def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
            fn = resolve(_FOREACH_OPS[op])

            def foreach(tensors: Any, other: Any) -> Any:
                others = other if isinstance(other, (list, tuple)) else [other] * len(tensors)
                results = [fn(t, o) for t, o in zip(tensors, others)]
                if in_place:
                    return tuple(write_back(t, r) for t, r in zip(tensors, results))
                return tuple(results)
            return foreach
        suffix = "_" if in_place else ""
        return Route(f"{_FOREACH_OPS[op]} per tensor{' + assign' if in_place else ''} "
                     f"(as torch._foreach_{op}{suffix})", make, call.args)
    return rule


def _ms_addc(kind: str) -> Callable[[Call], Route | Unmapped]:
    """x.addcmul_(t1, t2, value=v) / x.addcdiv_(t1, t2, value=v): x + v * t1 * t2 (or / t2),
    written back (RMSprop's and Adagrad's per-weight updates, call by call: no fused
    MindSpore kernel stands for them here)."""
    def rule(call: Call) -> Route | Unmapped:
        value = bind(("value",), (), call.kwargs, value=Lit(1)).value
        if len(call.args) != 3 or {k for k, _ in call.kwargs} - {"value"} \
                or not isinstance(value, Lit) or not isinstance(value.value, (int, float)):
            return Unmapped(f"Tensor.{kind}_ without two tensors and a number value")
        scale = float(value.value)

        def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
            combine = resolve("mindspore.ops.mul" if kind == "addcmul" else "mindspore.ops.div")

            def update(x: Any, t1: Any, t2: Any) -> Any:
                term = combine(t1, t2)
                return write_back(x, x + (term * scale if scale != 1.0 else term))
            return update
        return Route(f"mindspore {'mul' if kind == 'addcmul' else 'div'}, add + assign "
                     f"(as Tensor.{kind}_)", make, call.args)
    return rule


TRAINING_TORCH_TO_MINDSPORE: dict[str, Callable[[Call], Route | Unmapped]] = {
    "torch.Tensor.zero_": _ms_zero,
    "torch.Tensor.addcmul_": _ms_addc("addcmul"),
    "torch.Tensor.addcdiv_": _ms_addc("addcdiv"),
    "torch._foreach_norm": _ms_foreach_norm,
    **{f"torch._foreach_{op}{suffix}": _ms_foreach(op, bool(suffix))
       for op in _FOREACH_OPS for suffix in ("", "_")},
}

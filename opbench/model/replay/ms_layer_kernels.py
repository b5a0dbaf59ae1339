"""A MindSpore layer replayed in MindSpore with the kernels the layer itself runs.

The capture lowers a layer to a function form (capture/lowering.py: `nn.Dense(x)` is
`ops.dense(x, weight, bias)`), which the other framework maps from. The traced framework's
replay is held to what the script ran (its self-check compares the two call by call), and a
function form can run another kernel than the layer's:

- `nn.Dense` runs `ops.MatMul(transpose_b=True)` then `ops.BiasAdd()` (mindspore/nn/layer/
  basic.py, Dense.construct, flattening an input of rank other than 2 first); `ops.dense` is
  the Dense primitive, whose CPU kernel is several times slower: a 64x32 input to 64 outputs,
  synced, in one process, interleaved (2026-11-27, MindSpore 2.10 CPU, 20 calls each, three
  times, /tmp/selfms_exp/dense2.py): nn.Dense 0.51-0.54 ms, ops.dense 2.3-4.0 ms, ops.tanh
  0.37 ms beside them. Replayed as ops.dense, ms_cell_mlp_sgd's three Dense calls read ~5 ms
  each against 1.3-2.2 ms traced.
- `nn.MSELoss` runs `square(logits - labels)` then LossBase.get_loss (two casts, a multiply
  by its weight 1.0, a mean): 2.1-4.0 ms a call, synced, on 64x1 against ops.mse_loss's
  1.1-1.3 ms (the same series, /tmp/selfms_exp/cells.py); the loss Cell holds no weights, so
  the replay calls the Cell itself. (nn.Conv2d against ops.conv2d: 3.2 against 3.0 ms;
  nn.BatchNorm2d against ops.batch_norm 0.40 against 0.27 ms; nn.CrossEntropyLoss against
  ops.cross_entropy 13-15 against 12-16 ms: left as lowered.)
"""
from __future__ import annotations

from typing import Any, Callable

from opbench.model.program import Call, Lit
from opbench.model.replay.route import Route, Unmapped

__all__ = ["MINDSPORE_LAYER_KERNELS", "DENSE_AS_LAYER", "MSE_LAYER"]

DENSE_LAYER = "mindspore.nn.Dense"
DENSE_AS_LAYER = "mindspore.ops.MatMul(transpose_b=True) + BiasAdd (as nn.Dense runs)"


def _dense(call: Call) -> Route | Unmapped:
    named = Route("mindspore.ops.dense", lambda resolve: resolve("mindspore.ops.dense"),
                  call.args, call.kwargs)
    if call.api != DENSE_LAYER or len(call.args) != 3 or call.kwargs:
        return named              # the script called ops.dense itself: what it ran

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        import mindspore
        matmul = mindspore.ops.MatMul(transpose_b=True)
        bias_add = mindspore.ops.BiasAdd()

        def dense(x: Any, weight: Any, bias: Any) -> Any:
            shape = x.shape
            if len(shape) != 2:
                x = x.reshape(-1, shape[-1])
            out = matmul(x, weight)
            if bias is not None:
                out = bias_add(out, bias)
            if len(shape) != 2:
                out = out.reshape(*shape[:-1], out.shape[-1])
            return out
        return dense
    return Route(DENSE_AS_LAYER, make, call.args, (), fallbacks=(named,))


MSE_LAYER = "mindspore.nn.MSELoss"


def _mse_loss(call: Call) -> Route | Unmapped:
    named = Route("mindspore.ops.mse_loss", lambda resolve: resolve("mindspore.ops.mse_loss"),
                  call.args, call.kwargs)
    given = dict(call.kwargs)
    if call.api != MSE_LAYER or len(call.args) != 2 or set(given) - {"reduction"}:
        return named
    reduction = given.get("reduction")
    reduction = reduction.value if isinstance(reduction, Lit) else "mean"

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        import mindspore
        return mindspore.nn.MSELoss(reduction=reduction)
    return Route(f"{MSE_LAYER}(reduction={reduction!r}) (the layer itself)", make,
                 call.args, (), fallbacks=(named,))


# replay api (as lowered) -> the traced framework's route
MINDSPORE_LAYER_KERNELS: dict[str, Callable[[Call], Route | Unmapped]] = {
    "mindspore.ops.dense": _dense,
    "mindspore.ops.mse_loss": _mse_loss,
}

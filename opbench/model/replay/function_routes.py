"""A custom torch.autograd.Function's output in both frameworks: the straight-through
stand-in (model/autograd_function.py says why the script's backward cannot run here).

The call's arguments are the forward's result and a tuple of the inputs that required grad
(of the result's shape and dtype, chosen by the capture). The route returns
`stop_gradient(result) + sum(x - stop_gradient(x))`: the forward's value exactly (x - x is 0
in floating point), and a gradient chain that gives each input the output's gradient as is.
torch's stop_gradient is `detach()`, MindSpore's `ops.stop_gradient` (it holds inside the
value_and_grad the MindSpore replay differentiates the forward with).
"""
from __future__ import annotations

from typing import Any, Callable

from opbench.model.autograd_function import STRAIGHT_THROUGH_RULE
from opbench.model.program import Call
from opbench.model.replay.route import Route, Unmapped

__all__ = ["straight_through_route", "straight_through"]


def straight_through(stop_gradient: Callable[[Any], Any]) -> Callable[[Any, Any], Any]:
    """The stand-in's function, given the framework's stop_gradient."""
    def function_output(result: Any, inputs: Any) -> Any:
        out = stop_gradient(result)
        for x in inputs:
            out = out + (x - stop_gradient(x))
        return out
    return function_output


def _stop_gradient(target: str) -> Callable[[Any], Any]:
    if target == "mindspore":
        import mindspore
        return mindspore.ops.stop_gradient
    return lambda value: value.detach()


def straight_through_route(call: Call, target: str) -> Route | Unmapped:
    """The route of a call standing for a Function's output (Call.function set), in
    `target`; Unmapped for a call of that api without its two arguments."""
    if len(call.args) != 2:
        return Unmapped("a custom autograd.Function's output without its forward's result "
                        "and inputs")
    name = call.function.name if call.function is not None else "?"
    return Route(f"{STRAIGHT_THROUGH_RULE} for {name}",
                 lambda resolve: straight_through(_stop_gradient(target)), call.args)

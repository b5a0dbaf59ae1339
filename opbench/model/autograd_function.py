"""A custom torch.autograd.Function in a captured program, and the rule its replay follows.

A script's `MyFunction.apply(x, ...)` runs the class's `forward` under no_grad (torch records
no graph inside it) and links its output to its inputs through one node that calls the
class's `backward`, Python the script wrote. The tracer sees only the framework calls inside
the forward (the Function is not a framework API), so before this rule the program held them
as plain calls made under no_grad and nothing else: in both replays the Function's output
had no gradient chain, the weights before it got no gradient (the corpus script
custom_autograd_function.py: fc1 untrained, the replayed backward 88 us against 227 us
traced, self-check -44% to -50%).

The capture (capture/torch_function.py) wraps `Function.apply` and, after each call of it at
the script's level with grad on, adds one call of api FUNCTION_APPLY: its arguments the
forward's result (a Ref to the call inside that made it) and the inputs that required grad
of the result's shape, its `function` field (program.FunctionForward) the class's name and
how many captured calls its forward made. Later calls read the Function's output from it.

The replay process holds the program, not the script's class, so it cannot run the
script's backward. Both frameworks replay the call as a stated STAND-IN: straight-through,
`out = stop_gradient(forward's result) + sum(x - stop_gradient(x))` over those inputs: the
forward's value, and an identity gradient to each input (what a straight-through estimator's
backward is; a backward that masks or scales its gradient does a little more work than this,
in the traced backward only). The report's region note names each such Function
(`straight_through_note`).
"""
from __future__ import annotations

from typing import Iterable

__all__ = ["FUNCTION_APPLY", "STRAIGHT_THROUGH_RULE", "straight_through_note"]

# The api (and replay api) of the call standing for a Function's output.
FUNCTION_APPLY = "torch.autograd.Function.apply"
# What the replay does in its place (the route's name in the report).
STRAIGHT_THROUGH_RULE = "straight-through stand-in (stop_gradient(forward) + x - stop_gradient(x))"


def straight_through_note(names: Iterable[str]) -> str | None:
    """The region note for the Functions a step's calls stand for, or None."""
    unique = sorted(set(names))
    if not unique:
        return None
    return (f"custom autograd.Function {', '.join(unique)}: its backward is the script's "
            f"Python; replayed as straight-through (an identity gradient to its inputs)")

"""A captured call's arguments by parameter name, for every rule module (routes.py,
mindspore_to_torch.py, attention_dropout.py, inplace_routes.py, layer_routes.py,
randomness.py): one helper, so a change in how a Call holds its bound arguments is a change
here only."""
from __future__ import annotations

from typing import Any

from opbench.model.bound_args import bind
from opbench.model.program import Call, Lit

__all__ = ["bound", "init_arguments", "literal"]


def bound(call: Call, names: list[str]) -> Any:
    """Each named parameter's argument, positional or by keyword (None when not given), as a
    frozen record read by attribute (`v.input`, model/bound_args.py): a misspelt name is an
    AttributeError, not a silent None."""
    return bind(names, call.args, call.kwargs)


def init_arguments(call: Call, **defaults: Any) -> Any:
    """The constructor arguments the capture recorded for a primitive or layer (ops.LayerNorm's
    begin_norm_axis, ...), each named one as given or its default, as a frozen record."""
    return bind(tuple(defaults), (), call.init, **defaults)


def literal(value: Any, default: Any = None) -> Any:
    """A literal argument's value (the default for a tensor argument or one not given)."""
    return value.value if isinstance(value, Lit) else default

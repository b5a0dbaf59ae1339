"""A captured call's arguments by parameter name, for the rule modules beside routes.py
(attention_dropout.py, inplace_routes.py, layer_routes.py): one helper, so a change in how a
Call holds its bound arguments is a change here only."""
from __future__ import annotations

from typing import Any

from opbench.model.program import Call, Lit

__all__ = ["bound", "literal"]


def bound(call: Call, names: list[str]) -> dict[str, Any]:
    """Each named parameter's argument, positional or by keyword (None when not given)."""
    kw = dict(call.kwargs)
    return {n: (call.args[i] if i < len(call.args) else kw.get(n)) for i, n in enumerate(names)}


def literal(value: Any, default: Any = None) -> Any:
    """A literal argument's value (the default for a tensor argument or one not given)."""
    return value.value if isinstance(value, Lit) else default

"""A call's arguments bound to its parameters' names, once, as a frozen record read by
attribute (`bind(("input", "target"), args, kwargs).target`) instead of a dict read by key
in every rule.

Used where a rule reads a call by its parameters: the replay's routes (replay/, on a
captured Call's `args` and `kwargs` or a primitive's `init` pairs) and the capture's
lowerings (capture/lowering.py, on a live module call's `args` and `kwargs`). Standard
library only: the capture imports it into the user's interpreter.
"""
from __future__ import annotations

from collections import namedtuple
from functools import lru_cache
from typing import Any, Iterable, Mapping, Sequence

__all__ = ["bind"]


@lru_cache(maxsize=None)
def _record_type(names: tuple[str, ...]) -> type:
    """One namedtuple class per parameter list (rules bind the same few lists per call)."""
    return namedtuple("BoundArgs", names)


def bind(names: Sequence[str], args: Sequence[Any] = (),
         kwargs: Mapping[str, Any] | Iterable[tuple[str, Any]] = (),
         **defaults: Any) -> Any:
    """Each named parameter's argument: positional (in `names`' order) or by keyword, else
    its entry in `defaults`, else None. Keywords not named are not bound (a rule that must
    refuse them checks the call's keywords itself)."""
    given = dict(kwargs)
    values = []
    for i, name in enumerate(names):
        if i < len(args):
            values.append(args[i])
        elif name in given:
            values.append(given[name])
        else:
            values.append(defaults.get(name))
    return _record_type(tuple(names))(*values)

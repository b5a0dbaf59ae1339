"""What a route is (routes.py makes them, training_routes.py makes the training step's):
the callable a replay makes inside its framework's process, the program arguments it takes,
and fallbacks to try in order."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Maker", "Route", "Unmapped"]

# make(resolve) -> the callable; `resolve` is the replay framework's adapter.resolve, which
# takes case-file spelling ("mindspore.mint.matmul", "Tensor.__add__").
Maker = Callable[[Callable[[str], Callable[..., Any]]], Callable[..., Any]]


@dataclass(frozen=True)
class Route:
    api: str                          # what the report names
    make: Maker
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...] = ()
    fallbacks: tuple["Route", ...] = field(default=())


@dataclass(frozen=True)
class Unmapped:
    reason: str

"""What a framework layer's call lowers to (lowering.py and sequence_lowering.py make them):
its own module, so the rule modules and the table that gathers them import it alike."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Lowered"]


@dataclass(frozen=True)
class Lowered:
    api: str | None                 # None: an alias (the layer returns its input)
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...] = ()
    # a MindSpore primitive: its constructor's arguments (the replay builds it once)
    init: tuple[tuple[str, Any], ...] = ()
    # the layer returns this element of what the call returns (nn.LayerNorm: the primitive's
    # output, not its mean and variance)
    pick: int | None = None

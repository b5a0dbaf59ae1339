"""Step markers a script may set: `opbench.model.step()` before each training or inference
step, so `opbench model` takes exactly the steps as the steady state (without markers it
finds the repeating step itself, see steady.py). Outside `opbench model` a marker does
nothing, so a marked script runs as before."""
from __future__ import annotations

from typing import Any

__all__ = ["step", "activate", "deactivate"]

_active: Any = None


def step(label: str = "") -> None:
    """Mark the start of a step (the calls before the first mark are set-up)."""
    if _active is not None:
        _active.mark(label)


def activate(capture: Any) -> None:
    global _active
    _active = capture


def deactivate() -> None:
    global _active
    _active = None

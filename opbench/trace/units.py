"""Durations for people: pick the unit that keeps 3-4 significant digits."""
from __future__ import annotations

_UNITS = ((1e9, "s"), (1e6, "ms"), (1e3, "us"))


def format_ns(value_ns: float) -> str:
    for scale, unit in _UNITS:
        if abs(value_ns) >= scale:
            return f"{value_ns / scale:.3g} {unit}" if value_ns / scale < 100 else \
                f"{value_ns / scale:.0f} {unit}"
    return f"{value_ns:.0f} ns"

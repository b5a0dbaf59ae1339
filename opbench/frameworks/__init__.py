"""Framework adapters, created on demand.

Importing opbench (or this package) never imports torch or mindspore: each adapter module
imports its framework when the adapter is created by get_adapter().
"""
from __future__ import annotations

import difflib
import importlib
import importlib.util

from opbench.frameworks.base import (
    Adapter,
    DeviceUnavailable,
    FrameworkUnavailable,
    UnknownAPI,
    Unsupported,
    check_thread_count,
)

__all__ = [
    "Adapter", "DeviceUnavailable", "FrameworkUnavailable", "UnknownAPI", "Unsupported",
    "FRAMEWORKS", "get_adapter", "available_frameworks", "check_thread_count",
]

# framework name -> (adapter module, adapter class, the framework's top-level module)
_REGISTRY = {
    "torch": ("opbench.frameworks.torch_adapter", "TorchAdapter", "torch"),
    "mindspore": ("opbench.frameworks.mindspore_adapter", "MindSporeAdapter", "mindspore"),
    "numpy": ("opbench.frameworks.numpy_adapter", "NumpyAdapter", "numpy"),
}
FRAMEWORKS = tuple(_REGISTRY)


def get_adapter(name: str) -> Adapter:
    """A new adapter for `name`. Raises FrameworkUnavailable (user-facing message) when the
    name is unknown or the framework is not installed."""
    if name not in _REGISTRY:
        close = difflib.get_close_matches(name, FRAMEWORKS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise FrameworkUnavailable(f"unknown framework {name!r}{hint}; known: "
                                   f"{', '.join(FRAMEWORKS)}")
    module_name, class_name, _ = _REGISTRY[name]
    adapter_class = getattr(importlib.import_module(module_name), class_name)
    return adapter_class()


def available_frameworks() -> tuple[str, ...]:
    """The registered frameworks that are installed (found without importing them)."""
    return tuple(name for name, (_, _, top_module) in _REGISTRY.items()
                 if _installed(top_module))


def _installed(module_name: str) -> bool:
    try:
        return importlib.util.find_spec(module_name) is not None
    except (ImportError, ValueError):  # ValueError: a module in sys.modules without a spec
        return False

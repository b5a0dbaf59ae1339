"""A custom torch.autograd.Function's `apply`, noted by the capture (model/autograd_function.py
says why and what the replay does with it).

From the moment torch is imported, `torch.autograd.function.Function.apply` (a classmethod
every custom Function inherits) is wrapped: the capture's position is read before the call
and, after it returns, `capture.function_applied` decides whether the calls captured inside
form a Function's forward and records the call that stands for its output. A subclass that
defines its own `apply` is not seen (the calls of its forward stay plain calls, as before).
A Function applied inside a traced framework call (torch's own uses of Function) has no
captured calls inside: nothing is added. Nor is anything added for torch's own Functions
(a module under torch: the reentrant checkpoint's CheckpointFunction, whose backward
recomputes the real gradient, is no straight-through estimator): their calls stay as before.
"""
from __future__ import annotations

import functools
import sys
from typing import Any

from opbench.model.capture.import_patch import ImportPatch

__all__ = ["TorchFunctionApply"]


class TorchFunctionApply(ImportPatch):
    """Installs the wrapper when torch is imported; `capture` receives each apply."""

    module = "torch"

    def _on_import(self, name: str) -> None:
        torch = sys.modules.get("torch")
        function = getattr(getattr(getattr(torch, "autograd", None), "function", None),
                           "Function", None)
        original = vars(function).get("apply") if function is not None else None
        if not isinstance(original, classmethod) or self.patched:
            return
        # restored as the class's own classmethod (getattr would read it bound)
        self._patch(function, "apply", classmethod(self._wrap(original.__func__)), original)

    def _wrap(self, apply: Any) -> Any:
        capture = self._capture

        @functools.wraps(apply)
        def wrapped(cls: type, *args: Any, **kwargs: Any) -> Any:
            if _torch_own(cls):
                return apply(cls, *args, **kwargs)
            first = capture.next_position()
            result = apply(cls, *args, **kwargs)
            capture.function_applied(getattr(cls, "__qualname__", cls.__name__), args, kwargs,
                                     result, first)
            return result
        return wrapped


def _torch_own(cls: type) -> bool:
    module = getattr(cls, "__module__", "") or ""
    return module == "torch" or module.startswith("torch.")

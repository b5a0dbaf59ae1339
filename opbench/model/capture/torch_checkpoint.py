"""torch.utils.checkpoint.checkpoint, noted by the capture (model/recompute.py says why and
what the replays do with it).

From the moment torch is imported, the module's `checkpoint` function is wrapped: the
capture's position and torch's grad mode are read before the call and, after it returns,
`capture.checkpointed` marks the calls captured inside it. `checkpoint_sequential` calls
the module's `checkpoint` and is seen through it; `transformers`' gradient checkpointing
binds `checkpoint` when the model enables it, after torch's import, and gets the wrapper.
A checkpoint entered with grad off (evaluation) has no recompute: nothing is marked.
"""
from __future__ import annotations

import functools
import sys
from typing import Any

from opbench.trace.import_hook import PostImportHook

__all__ = ["TorchCheckpoint"]


class TorchCheckpoint:
    """Installs the wrapper when torch is imported; `capture` receives each checkpoint."""

    def __init__(self, capture: Any):
        self._capture = capture
        self._hook = PostImportHook(("torch",), self._on_import)
        self._patched: list[tuple[Any, Any]] = []       # (module, its own checkpoint)

    def install(self) -> None:
        self._hook.install()
        if "torch" in sys.modules:          # imported before the capture started
            self._on_import("torch")

    def uninstall(self) -> None:
        self._hook.uninstall()
        for module, original in reversed(self._patched):
            module.checkpoint = original
        self._patched.clear()

    def _on_import(self, name: str) -> None:
        torch = sys.modules.get("torch")
        if torch is None or self._patched:
            return
        try:
            import torch.utils.checkpoint as module
        except Exception:            # a torch without it: nothing to note
            return
        original = getattr(module, "checkpoint", None)
        if not callable(original):
            return
        self._patched.append((module, original))
        module.checkpoint = self._wrap(original, torch)

    def _wrap(self, checkpoint: Any, torch: Any) -> Any:
        capture = self._capture

        @functools.wraps(checkpoint)
        def wrapped(function: Any, *args: Any, **kwargs: Any) -> Any:
            first = capture.next_position()
            grad_on = torch.is_grad_enabled()
            result = checkpoint(function, *args, **kwargs)
            if grad_on:
                capture.checkpointed(first)
            return result
        return wrapped

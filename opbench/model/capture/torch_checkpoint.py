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

from opbench.model.capture.import_patch import ImportPatch

__all__ = ["TorchCheckpoint"]


class TorchCheckpoint(ImportPatch):
    """Installs the wrapper when torch is imported; `capture` receives each checkpoint."""

    module = "torch"

    def _on_import(self, name: str) -> None:
        torch = sys.modules.get("torch")
        if torch is None or self.patched:
            return
        try:
            import torch.utils.checkpoint as module
        except Exception:            # a torch without it: nothing to note
            return
        original = getattr(module, "checkpoint", None)
        if not callable(original):
            return
        self._patch(module, "checkpoint", self._wrap(original, torch))

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

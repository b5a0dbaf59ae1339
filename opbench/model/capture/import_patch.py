"""The capture's wrappers around framework functions, installed once the framework is
imported and taken off again when the capture ends: value_and_grad (ms_backward.py),
GradOperation (ms_grad_operation.py), mindspore.jit (ms_jit.py), Function.apply
(torch_function.py) and torch.utils.checkpoint (torch_checkpoint.py) are each an
ImportPatch; each says what it wraps in `_on_import` and patches it with `_patch`."""
from __future__ import annotations

import sys
from typing import Any, Callable

from opbench.trace.import_hook import PostImportHook

__all__ = ["ImportPatch", "MindSporeSync"]


class ImportPatch:
    """Installs the wrappers when `module` is imported (at once if it already is);
    `capture` receives what they see; uninstall restores every attribute patched."""

    module = ""                          # the top-level module whose import installs it

    def __init__(self, capture: Any):
        self._capture = capture
        self._hook = PostImportHook((self.module,), self._on_import)
        self._patched: list[tuple[Any, str, Any]] = []     # (owner, name, its own value)

    def install(self) -> None:
        self._hook.install()
        if self.module in sys.modules:          # imported before the capture started
            self._on_import(self.module)

    def uninstall(self) -> None:
        self._hook.uninstall()
        for owner, name, original in reversed(self._patched):
            setattr(owner, name, original)
        self._patched.clear()

    @property
    def patched(self) -> bool:
        return bool(self._patched)

    def _patch(self, owner: Any, name: str, value: Any, original: Any = None) -> None:
        """owner.name = value, restored on uninstall to `original` (default: what owner.name
        reads now; a class's own classmethod is passed as its `vars()` entry)."""
        self._patched.append((owner, name, getattr(owner, name) if original is None
                              else original))
        setattr(owner, name, value)

    def _on_import(self, name: str) -> None:
        raise NotImplementedError


class MindSporeSync:
    """A MindSpore wrapper's sync: the one given (a test's), else PyNative's executor's,
    looked up at first use (the capture imports nothing of MindSpore's before the script
    does)."""

    def __init__(self, sync: Callable[[], None] | None = None):
        self._sync = sync

    def __call__(self) -> None:
        if self._sync is None:
            from opbench.frameworks.mindspore_adapter import find_pynative_executor
            executor, _ = find_pynative_executor()
            self._sync = executor.sync
        self._sync()

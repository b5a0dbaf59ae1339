"""Run a callback right after a top-level package is imported.

Used so a traced script that imports torch or MindSpore *after* tracing started gets traced
from its first call, without the tracer importing frameworks the script never uses.
"""
from __future__ import annotations

import importlib.abc
import sys
from typing import Callable


class _NotifyingLoader(importlib.abc.Loader):
    def __init__(self, loader: importlib.abc.Loader, on_loaded: Callable[[str], None]):
        self._loader = loader
        self._on_loaded = on_loaded

    def create_module(self, spec):  # type: ignore[no-untyped-def]
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:  # type: ignore[no-untyped-def]
        self._loader.exec_module(module)
        self._on_loaded(module.__name__)

    def __getattr__(self, name: str):  # resource readers, get_source, is_package, ...
        return getattr(self._loader, name)


class PostImportHook(importlib.abc.MetaPathFinder):
    """While installed, calls on_loaded(name) once each watched top-level package finishes
    executing its __init__ (the package and its eager submodules are then usable)."""

    def __init__(self, names: tuple[str, ...], on_loaded: Callable[[str], None]):
        self._names = frozenset(names)
        self._on_loaded = on_loaded
        self._busy: set[str] = set()

    def find_spec(self, fullname, path=None, target=None):  # type: ignore[no-untyped-def]
        if fullname not in self._names or fullname in self._busy:
            return None
        self._busy.add(fullname)     # the lookup below consults sys.meta_path, including us
        try:
            spec = None
            for finder in list(sys.meta_path):
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
        finally:
            self._busy.discard(fullname)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _NotifyingLoader(spec.loader, self._on_loaded)
        return spec

    def install(self) -> None:
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)

    def uninstall(self) -> None:
        while self in sys.meta_path:
            sys.meta_path.remove(self)

"""Where the user's code made a call: the first frame outside torch, MindSpore and opbench,
with the lines its call expression spans (Python 3.11's instruction positions: a call
written over three lines is lines 10-12, not only the line the interpreter reports).

Found in the observer, after the tracer took the call's time: the traced duration does not
include it. Each code object's verdict (framework or user) and its positions are kept, so a
call costs a walk over a few frames and two dictionary look-ups (docs/model.md has the
measured figure).
"""
from __future__ import annotations

import os
import sys
from types import CodeType, FrameType
from typing import Any

from opbench.config.vocabulary import FRAMEWORKS
from opbench.model.program import Site

__all__ = ["SiteFinder"]

def _package_dir(module: Any) -> str | None:
    path = getattr(module, "__file__", None)
    return os.path.dirname(os.path.abspath(path)) + os.sep if path else None


class SiteFinder:
    """Finds the user's frame of the call being observed."""

    def __init__(self) -> None:
        self._roots: tuple[str, ...] = ()
        self._loaded: tuple[str, ...] = ()
        self._framework_code: dict[CodeType, bool] = {}
        self._sites: dict[tuple[CodeType, int], Site] = {}

    def _refresh_roots(self) -> None:
        """The directories whose frames are not the user's: the frameworks' (their Python
        layers call each other; read again when one was imported since: a look at
        sys.modules until all are) and opbench's own (the tracer's wrappers, the capture)."""
        if len(self._loaded) == len(FRAMEWORKS) and self._roots:
            return
        loaded = tuple(name for name in FRAMEWORKS if name in sys.modules)
        if loaded == self._loaded and self._roots:
            return
        roots = [_package_dir(sys.modules[name]) for name in loaded]
        roots.append(_package_dir(sys.modules["opbench"]))
        self._roots = tuple(r for r in roots if r)
        self._loaded = loaded
        self._framework_code.clear()
        self._sites.clear()

    def _is_framework(self, code: CodeType) -> bool:
        found = self._framework_code.get(code)
        if found is None:
            found = self._framework_code[code] = code.co_filename.startswith(self._roots)
        return found

    def find(self, frame: FrameType | None = None) -> Site | None:
        """The site of the innermost user frame from `frame` (default: the caller's) out."""
        self._refresh_roots()
        frame = frame if frame is not None else sys._getframe(1)
        framework_code = self._framework_code
        while frame is not None:
            inside = framework_code.get(frame.f_code)
            if inside is None:
                inside = self._is_framework(frame.f_code)
            if not inside:
                break
            frame = frame.f_back
        if frame is None:
            return None
        # one Site per instruction: a loop's calls share it (no record built per call)
        key = (frame.f_code, frame.f_lasti)
        site = self._sites.get(key)
        if site is None:
            site = self._sites[key] = Site(frame.f_code.co_filename, *self._lines(frame))
        return site

    def _lines(self, frame: FrameType) -> tuple[int, int]:
        line = frame.f_lineno or 0
        code = frame.f_code
        positions = list(code.co_positions()) if hasattr(code, "co_positions") else []
        index = frame.f_lasti // 2
        if positions and 0 <= index < len(positions):
            first, last = positions[index][0], positions[index][1]
            if first and last and first <= last:
                return first, last
        return line, line

"""A `mindspore.jit`-compiled function as one call of the captured program.

A function compiled with `@mindspore.jit` runs as one graph in MindSpore's C++: none of the
calls written in it runs in Python, so the tracer sees none of them. A training step
compiled so was captured as what the script did with its result alone (`loss.asnumpy()`,
whose sync waited for the whole step): one call a step, "coverage 100%", and a replay that
measured a 2 us readback against the step's 20 ms (ms_jit_train_step.py in the conformance
corpus, self-check -100%).

From the moment mindspore is imported, `mindspore.jit` is wrapped so that each call of a
function it compiles is followed by one captured call (the outermost, where one compiled
function calls another):

- api `mindspore.jit`, with the call's arguments and its result, so what the script does
  with the result reads that call's outputs (the data flow of the step);
- its time: the compiled function's call, synced at the end (the work it queued included);
- not replayable, with the reason and what to do: neither framework can rebuild the graph
  from calls it never saw, so the call is "not covered" with its share of the traced time;
  with `MS_JIT=0` in its environment MindSpore runs the function call by call
  (mindspore/graph/api.py), and `opbench model` then captures and replays those calls: the
  projection is then of the step as PyNative runs it, not of the compiled graph.
"""
from __future__ import annotations

import functools
import os
import sys
import time
from typing import Any, Callable

from opbench.model.capture.import_patch import ImportPatch, MindSporeSync

__all__ = ["JIT_API", "jit_problem", "MindSporeJit"]

JIT_API = "mindspore.jit"


def jit_problem(name: str) -> str:
    """Why a compiled function is not replayed, and what the user can do."""
    return (f"a @mindspore.jit-compiled function ({name}): it runs as one graph, none of "
            f"its calls in Python, so no replay can rebuild it; run the script with MS_JIT=0 "
            f"in its environment (MindSpore then runs the function call by call) to project "
            f"its calls as PyNative runs them")


class MindSporeJit(ImportPatch):
    """Installs the wrapper when mindspore is imported; `capture` receives each call."""

    module = "mindspore"

    def __init__(self, capture: Any, sync: Callable[[], None] | None = None):
        super().__init__(capture)
        self._synced = MindSporeSync(sync)
        self._depth = 0

    def _on_import(self, name: str) -> None:
        ms = sys.modules.get("mindspore")
        original = getattr(ms, "jit", None)
        if original is None or self.patched or os.environ.get("MS_JIT") == "0":
            # MS_JIT=0: MindSpore runs a compiled function call by call, each captured
            return
        wrapped = self._wrap(original)
        # mindspore.jit is mindspore.graph.api.jit (and mindspore.common.api.jit): a script
        # reaches it as ms.jit or `from mindspore import jit`
        for owner in (ms, *(sys.modules.get(m) for m in ("mindspore.graph.api",
                                                          "mindspore.common.api"))):
            if owner is not None and getattr(owner, "jit", None) is original:
                self._patch(owner, "jit", wrapped)

    def _wrap(self, original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def jit(function: Any = None, *args: Any, **kwargs: Any) -> Any:
            if function is None:                # @jit(jit_level=...): a decorator
                decorate = original(None, *args, **kwargs)
                return lambda fn: self._timed(fn, decorate(fn))
            return self._timed(function, original(function, *args, **kwargs))
        return jit

    def _timed(self, function: Any, compiled: Any) -> Any:
        if not callable(compiled) or isinstance(compiled, type):
            return compiled                     # a Cell class: its calls are traced as such
        name = getattr(function, "__qualname__", None) or type(function).__name__
        capture = self._capture

        @functools.wraps(compiled)
        def run(*c_args: Any, **c_kwargs: Any) -> Any:
            if self._depth:
                return compiled(*c_args, **c_kwargs)
            self._depth += 1
            try:
                first = capture.next_position()
                start = time.perf_counter_ns()
                result = compiled(*c_args, **c_kwargs)
                self._synced()
                elapsed = time.perf_counter_ns() - start
            finally:
                self._depth -= 1
            capture.compiled(JIT_API, c_args, c_kwargs, result, jit_problem(name), first,
                             elapsed)
            return result
        return run

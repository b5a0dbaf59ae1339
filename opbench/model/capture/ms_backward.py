"""A MindSpore training step's backward as a call of the captured program.

MindSpore has no `loss.backward()`: a script takes `grad_fn = mindspore.value_and_grad(
forward, None, weights)` and calls `loss, grads = grad_fn(...)`. The forward's calls run in
Python and are captured as usual; the backward runs inside the same call in C++ and no
traced call covers it (on the example CNN its kernels surfaced in the next traced call, the
optimizer's, as 160-200 ms of a 520 ms step). From the moment mindspore is imported,
`mindspore.value_and_grad` (and `mindspore.ops.value_and_grad`, the same function) is
wrapped so that each call of the function it returns is followed by one captured call:

- api `mindspore.value_and_grad`, marked backward, whose arguments are the loss (a Ref to the
  forward call that made it) and the weights differentiated (the script's Parameters, as
  external tensors), and whose outputs are `(loss, grads)`, so the optimizer's gradients are
  Refs to it (the data flow of the step);
- its time: the grad function's call, synced at the end, less the forward calls captured
  inside it (Capture.calls subtracts them once their traced durations are known).

A grad function over inputs (no weights) or one whose loss no captured call made is still
recorded, with the reason it cannot be replayed.
"""
from __future__ import annotations

import functools
import sys
import time
from typing import Any, Callable

from opbench.model.capture.import_patch import ImportPatch, MindSporeSync

__all__ = ["BACKWARD_API", "MindSporeBackward"]

BACKWARD_API = "mindspore.value_and_grad"


class MindSporeBackward(ImportPatch):
    """Installs the wrapper when mindspore is imported; `capture` receives each backward."""

    module = "mindspore"

    def __init__(self, capture: Any, sync: Callable[[], None] | None = None):
        super().__init__(capture)
        self._synced = MindSporeSync(sync)

    def _on_import(self, name: str) -> None:
        ms = sys.modules.get("mindspore")
        original = getattr(ms, "value_and_grad", None)
        if original is None or self.patched:
            return
        wrapped = self._wrap(original)
        for owner in (ms, getattr(ms, "ops", None)):
            if owner is not None and getattr(owner, "value_and_grad", None) is original:
                self._patch(owner, "value_and_grad", wrapped)

    def _wrap(self, original: Callable[..., Any]) -> Callable[..., Any]:
        capture = self._capture

        @functools.wraps(original)
        def value_and_grad(fn: Callable[..., Any], grad_position: Any = 0, weights: Any = None,
                           has_aux: bool = False, *args: Any, **kwargs: Any) -> Any:
            made: dict[str, Any] = {}

            @functools.wraps(fn)
            def forward(*f_args: Any, **f_kwargs: Any) -> Any:
                out = fn(*f_args, **f_kwargs)
                # with has_aux (or several outputs) the first is the loss differentiated
                made["loss"] = out[0] if isinstance(out, tuple) else out
                return out

            grad_fn = original(forward, grad_position, weights, has_aux, *args, **kwargs)

            @functools.wraps(grad_fn)
            def run(*g_args: Any, **g_kwargs: Any) -> Any:
                first = capture.next_position()
                start = time.perf_counter_ns()
                result = grad_fn(*g_args, **g_kwargs)
                self._synced()
                elapsed = time.perf_counter_ns() - start
                capture.backward(made.pop("loss", None), weights, grad_position, result,
                                 first, elapsed)
                return result
            return run
        return value_and_grad

"""MindSpore's `ops.GradOperation` as a backward call of the captured program.

`nn.TrainOneStepCell` (and a script written in its style) takes its gradients with
`ops.GradOperation(get_by_list=True)(network, weights)(*inputs)`: the backward runs in C++ and
no traced call covers it. In ms_train_one_step_cell.py its kernels ran queued and surfaced in
the window of the next traced call, the grad reducer's Identity (1.4-4.6 ms of a 13-16 ms
step, against 0.021-0.025 ms for the Identity synced alone: tools/train_one_step_windows.py),
which both replays ran as nothing. From the moment mindspore is imported,
`GradOperation.__call__` is wrapped (in PyNative mode; a graph compiles the grad itself) so
that each call of the grad function it returns is followed by one captured call, as
`value_and_grad`'s is (ms_backward.py):

- api `mindspore.ops.GradOperation`, replayed as `mindspore.value_and_grad` (torch:
  `loss.backward()`; MindSpore: value_and_grad over the replayed forward), marked backward;
  arguments: the loss (the call that made the forward's output) and the weights;
- its outputs `(loss, weights' gradients[, inputs' gradients])`, the form value_and_grad's
  call is kept in (observer.py backward_result), so the script's reads of the gradients
  GradOperation returned are Refs to it;
- its time: the grad function's call, synced, less the forward calls captured inside it.

Where the forward ran: GradOperation's grad function calls `_pynative_func_grad_forward`
(mindspore/ops/composite/base.py), which reruns the network, or, when the same Cell already
ran on the same inputs with grad on (TrainOneStepCell's `loss = self.network(*inputs)` just
before), returns that output as a NEW tensor object over the same memory (MindSpore 2.10,
checked here: not `is` the loss, equal `_data_ptr()`). That function is wrapped too, to hand
over the output; the capture finds the call that made it by identity, else by memory
(Capture.backward). `sens_param=True` (a backward seeded with the script's sens tensor) and a
gradient of the inputs only are recorded with their reason, not replayed.
"""
from __future__ import annotations

import functools
import sys
import time
from typing import Any, Callable

from opbench.model.capture.import_patch import ImportPatch, MindSporeSync

__all__ = ["GRAD_OPERATION_API", "MindSporeGradOperation", "grad_operation_problem",
           "as_value_and_grad"]

GRAD_OPERATION_API = "mindspore.ops.GradOperation"
_BASE = "mindspore.ops.composite.base"
_FORWARD = "_pynative_func_grad_forward"


def grad_operation_problem(get_by_list: bool, sens_param: bool) -> str | None:
    """Why a GradOperation's call is not replayed (None: it is)."""
    if sens_param:
        return ("ops.GradOperation(sens_param=True): the backward is seeded with the script's "
                "sens tensor; the replay seeds it with ones")
    if not get_by_list:
        return ("ops.GradOperation without get_by_list (gradients of the inputs only): only "
                "gradients of Parameters are replayed")
    return None


def as_value_and_grad(out: Any, grads: Any, get_all: bool) -> tuple[tuple[Any, Any], Any]:
    """What GradOperation's grad function returned, as value_and_grad's `(out, grads)` and
    the grad_position it stands for: with get_all, `grads` is `(inputs' gradients, weights'
    gradients)`, value_and_grad's form under a grad_position (0: all inputs)."""
    return (out, grads), (0 if get_all else None)


class MindSporeGradOperation(ImportPatch):
    """Installs the wrappers when mindspore is imported; `capture` receives each backward."""

    module = "mindspore"

    def __init__(self, capture: Any, sync: Callable[[], None] | None = None):
        super().__init__(capture)
        self._synced = MindSporeSync(sync)
        self._depth = 0                 # > 0 inside a wrapped grad function
        self._forward_out: list[Any] = []

    def _on_import(self, name: str) -> None:
        ms = sys.modules.get("mindspore")
        grad_operation = getattr(getattr(ms, "ops", None), "GradOperation", None)
        if grad_operation is None or self.patched:
            return
        # the class's own attribute (GradOperation defines __call__), restored on uninstall
        self._patch(grad_operation, "__call__", self._wrap_call(grad_operation.__call__))
        base = sys.modules.get(_BASE)
        forward = getattr(base, _FORWARD, None)
        if forward is not None:
            self._patch(base, _FORWARD, self._wrap_forward(forward))

    def _wrap_forward(self, original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def forward(fn: Any, *args: Any, **kwargs: Any) -> Any:
            out = original(fn, *args, **kwargs)
            if self._depth:
                self._forward_out.append(out)
            return out
        return forward

    def _wrap_call(self, original: Callable[..., Any]) -> Callable[..., Any]:
        owner = self

        @functools.wraps(original)
        def __call__(grad_op: Any, fn: Any, weights: Any = None) -> Any:
            grad_fn = original(grad_op, fn, weights)
            if owner._depth or not _pynative():
                # GradOperation's own inner GradOperation, or a graph: not a script's call
                return grad_fn
            get_by_list = bool(getattr(grad_op, "get_by_list", False))
            get_all = bool(getattr(grad_op, "get_all", False))
            problem = grad_operation_problem(get_by_list,
                                             bool(getattr(grad_op, "sens_param", False)))

            @functools.wraps(grad_fn)
            def run(*g_args: Any, **g_kwargs: Any) -> Any:
                capture = owner._capture
                first = capture.next_position()
                owner._depth += 1
                try:
                    start = time.perf_counter_ns()
                    grads = grad_fn(*g_args, **g_kwargs)
                    owner._synced()
                    elapsed = time.perf_counter_ns() - start
                    out = owner._forward_out[-1] if owner._forward_out else None
                finally:
                    owner._depth -= 1
                    owner._forward_out.clear()
                result, grad_position = as_value_and_grad(out, grads, get_all)
                capture.backward(out, weights if get_by_list else None, grad_position,
                                 result, first, elapsed, api=GRAD_OPERATION_API,
                                 problem=problem)
                return grads
            return run
        return __call__


def _pynative() -> bool:
    ms = sys.modules.get("mindspore")
    try:
        return ms.get_context("mode") == ms.PYNATIVE_MODE
    except Exception:                   # an unknown context API: PyNative is the default
        return True

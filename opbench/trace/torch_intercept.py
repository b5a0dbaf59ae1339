"""torch interception.

- torch functions (torch.*, torch.nn.functional.*, linalg, fft, special) and Tensor methods go
  through torch's own mechanism: a TorchFunctionMode sees every __torch_function__-overridable
  call made on the thread that entered it. With nested=True the mode re-enters itself around
  each call (torch.overrides.redispatch_function) so calls made inside are seen too.
- Python operators (x + y, x @ w, x[i]) are wrapped on torch.Tensor, because the mode sees
  `x + y` only as Tensor.add: the wrapper records Tensor.__add__, and the add it performs
  underneath is an internal call (recorded as its child only with nested=True).
- nn.Module calls: nn.Module.__call__ is wrapped; framework layers (torch.nn.Linear) are APIs,
  a user's own Module subclasses and containers (Sequential, ModuleList) are scopes. A layer
  the recorder's rule traces through (the model's capture: one with no function form) is not
  recorded; the calls its forward makes are, as top-level calls.

Importing this module imports torch; the tracer imports it only when torch is traced.
"""
from __future__ import annotations

import importlib
import inspect
import threading
import time
import types
from typing import Any, Callable

import torch
from torch.overrides import TorchFunctionMode

from opbench.trace.apis import OPERATOR_DUNDERS, PROTOCOL_HOOKS
from opbench.trace.events import (
    FUNCTION,
    MODULE,
    SCOPE,
    SERIAL,
    TENSOR_METHOD,
    CallSite,
    TensorSpec,
)
from opbench.trace.patching import ORIGINAL_ATTR, PatchSet, lookup_static, make_wrapper
from opbench.trace.recorder import Recorder

FRAMEWORK = "torch"
# Searched in this order to name a function object: an object exposed in several namespaces
# gets the first name (F.conv2d is torch.conv2d: models call it as F.conv2d).
FUNCTION_NAMESPACES = ("torch.nn.functional", "torch.linalg", "torch.fft", "torch.special",
                       "torch")
# Module classes that only hold and sequence other modules: structure, not an API (a model
# built as nn.Sequential would otherwise be one opaque call).
CONTAINER_MODULES = frozenset({"Sequential", "ModuleList", "ModuleDict"})
# Descriptor plumbing the mode sees for attribute access (x.shape, x.grad): not calls.
_ATTRIBUTE_ACCESS = frozenset({"__get__", "__set__", "__delete__"})
# Tensor properties that compute a tensor from a tensor (a transposed view), read through the
# mode as their descriptor's __get__: recorded as torch.Tensor.T and so on. Unseen, `x @ w.T`
# reached a model's program as a fresh input each step instead of a view of the weight w, and
# its affinity swap replayed F.linear(x, w.T.t(), b) where the fix is F.linear(x, w, b).
TENSOR_PROPERTIES = frozenset({"T", "mT", "H", "mH"})
# Private torch helpers (torch._C._set_grad_enabled from `with torch.no_grad()`, profiler
# record_function ops in optimizer.step) are plumbing, not APIs a model computes with, and are
# not recorded (calls they make still are). Exception: the multi-tensor kernels optimizers
# run through, which is where a training step's parameter-update time goes.
PRIVATE_BUT_TRACED_PREFIXES = ("torch._foreach_", "torch._fused_")
_NOT_AN_API = object()
# torch's switch for all torch function handling (modes and subclasses), and the depth of the
# function mode stack (None where this torch has neither).
_DISABLE_TORCH_FUNCTION = getattr(torch._C, "DisableTorchFunction", None)
_MODE_DEPTH = getattr(torch._C, "_len_torch_function_stack", None)
_LITERAL_DEFAULT_TYPES = (type(None), bool, int, float, str)
PROBE = "torch.add on 1-element CPU tensors"


_dtype_names: dict[Any, str] = {}
_new_spec = tuple.__new__      # builds the NamedTuple without its Python-level __new__ (hot path)


def tensor_spec(value: Any) -> TensorSpec | None:
    if isinstance(value, torch.Tensor):
        dtype = value.dtype
        name = _dtype_names.get(dtype)
        if name is None:
            name = _dtype_names[dtype] = str(dtype).removeprefix("torch.")
        return _new_spec(TensorSpec, (tuple(value.shape), name))
    return None


class TorchNames:
    """Public names for the function objects a torch function mode receives."""

    def __init__(self) -> None:
        self._index: dict[Any, str] = {}
        for prefix in reversed(FUNCTION_NAMESPACES):   # earlier namespaces overwrite later
            namespace = importlib.import_module(prefix)
            for name, value in vars(namespace).items():
                if (name.startswith("_") and not f"{prefix}.{name}".startswith(
                        PRIVATE_BUT_TRACED_PREFIXES)) \
                        or isinstance(value, (type, types.ModuleType)) or not callable(value):
                    continue
                try:
                    self._index[value] = f"{prefix}.{name}"
                except TypeError:       # unhashable callable object
                    continue

    def name_of(self, func: Any) -> str | None:
        """Dotted public name, or None for calls that are not APIs (attribute access,
        protocol hooks such as repr or len)."""
        short = getattr(func, "__name__", None)
        if short == "__get__":
            return tensor_property_name(getattr(func, "__self__", None))
        if short in _ATTRIBUTE_ACCESS or short in PROTOCOL_HOOKS:
            return None
        try:
            known = self._index.get(func)
        except TypeError:
            known = None
        if known is not None:
            return known
        owner = getattr(func, "__objclass__", None)
        if isinstance(owner, type) and issubclass(owner, torch._C.TensorBase):
            return _public_or_none(f"torch.Tensor.{short}")
        operator_name = getattr(func, "_qualified_op_name", None)    # torch.ops.ns.op
        if isinstance(operator_name, str):
            namespace, _, op = operator_name.partition("::")
            return _public_or_none(f"torch.ops.{namespace}.{op}")
        qualname = getattr(func, "__qualname__", short) or repr(func)
        module = getattr(func, "__module__", None) or "torch"
        if module == "torch._tensor" and qualname.startswith("Tensor."):
            return _public_or_none(f"torch.{qualname}")
        return _public_or_none(f"{module}.{qualname}")


def tensor_property_name(descriptor: Any) -> str | None:
    """torch.Tensor.T for the descriptor of Tensor.T (one of TENSOR_PROPERTIES); None for
    any other attribute read (x.shape, x.grad)."""
    name = getattr(descriptor, "__name__", None)
    owner = getattr(descriptor, "__objclass__", None)
    if name in TENSOR_PROPERTIES and isinstance(owner, type) \
            and issubclass(owner, torch._C.TensorBase):
        return f"torch.Tensor.{name}"
    return None


def literal_defaults(func: Any) -> frozenset:
    """(name, type, value) of a Python function's literal keyword defaults."""
    if not isinstance(func, types.FunctionType):
        return frozenset()
    try:
        parameters = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return frozenset()
    return frozenset((p.name, type(p.default), p.default) for p in parameters
                     if isinstance(p.default, _LITERAL_DEFAULT_TYPES))


def _public_or_none(name: str) -> str | None:
    if name.startswith(PRIVATE_BUT_TRACED_PREFIXES):
        return name
    if any(part.startswith("_") and not (part.endswith("__") and part.startswith("__"))
           for part in name.split(".")[1:]):
        return None
    return name


class _TracingMode(TorchFunctionMode):
    def __init__(self, interceptor: TorchInterceptor):
        super().__init__()
        self._interceptor = interceptor

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        if kwargs is None:
            kwargs = {}
        # torch looks some operators up on the class (Tensor.__getitem__), so the mode can be
        # handed our own operator wrapper: run what it wraps, or the two would recurse.
        func = getattr(func, ORIGINAL_ATTR, func)
        interceptor = self._interceptor
        recorder = interceptor.recorder
        if not recorder.active or recorder.in_internal():
            return func(*args, **kwargs)
        site = interceptor.site_for(func)
        if site is None:
            return func(*args, **kwargs)
        if interceptor.redispatch_nested:
            return recorder.call(site, self._call_seen_inside, (func, types, *args), kwargs)
        return recorder.call(site, func, args, kwargs)

    def _call_seen_inside(self, func, types, /, *args, **kwargs):  # noqa: ANN001
        # torch removed this mode for the duration of __torch_function__; put it back for the
        # calls `func` makes, and skip it for the one dispatch of `func` itself.
        with self:
            return torch.overrides.redispatch_function(func, types, args, kwargs)


class TorchInterceptor:
    framework = FRAMEWORK

    def __init__(self, recorder: Recorder, sync: Callable[[], None]):
        self.recorder = recorder
        self._sync = sync
        self.redispatch_nested = recorder.nested and hasattr(torch.overrides,
                                                               "redispatch_function")
        self._names = TorchNames()
        self._sites: dict[Any, CallSite | None] = {}
        self._module_sites: dict[type, CallSite] = {}
        self._patches = PatchSet()
        self._mode: _TracingMode | None = None
        self._mode_thread: int | None = None
        self.notes: list[str] = []

    # -- naming -------------------------------------------------------------------------
    def site_for(self, func: Any) -> CallSite | None:
        try:
            site = self._sites.get(func, _NOT_AN_API)
        except TypeError:
            site = _NOT_AN_API
        if site is not _NOT_AN_API:
            return site  # type: ignore[return-value]
        name = self._names.name_of(func)
        skip = 2 if self.redispatch_nested else 0     # (func, types) lead the arguments
        site = None if name is None else CallSite(
            FRAMEWORK, name, TENSOR_METHOD if name.startswith("torch.Tensor.") else FUNCTION,
            skip, literal_defaults(func))
        try:
            self._sites[func] = site
        except TypeError:
            pass
        return site

    def module_site(self, cls: type) -> CallSite:
        site = self._module_sites.get(cls)
        if site is None:
            module = cls.__module__ or ""
            if module == "torch" or module.startswith("torch."):
                public = (f"torch.nn.{cls.__name__}"
                          if getattr(torch.nn, cls.__name__, None) is cls
                          else f"{module}.{cls.__qualname__}")
                kind = SCOPE if cls.__name__ in CONTAINER_MODULES else MODULE
            else:
                public, kind = cls.__qualname__, SCOPE
            site = self._module_sites[cls] = CallSite(FRAMEWORK, public, kind, skip=1)
        return site

    # -- install / uninstall ------------------------------------------------------------
    def install(self) -> None:
        recorder = self.recorder
        recorder.add_framework(FRAMEWORK, sync=self._sync, tensor_spec=tensor_spec)
        self._wrap_operators()
        self._wrap_module_call()
        self._mode = _TracingMode(self)
        self._mode.__enter__()
        self._mode_thread = threading.get_ident()
        if recorder.nested and not self.redispatch_nested:
            self.notes.append("this torch has no torch.overrides.redispatch_function: calls "
                              "made inside Python-implemented torch functions are not nested")

    def _wrap_operators(self) -> None:
        recorder = self.recorder
        skips_mode = self._mode_skipper()
        for name in sorted(OPERATOR_DUNDERS):
            original = lookup_static(torch.Tensor, name)
            if original is None or not callable(original):
                continue
            site = CallSite(FRAMEWORK, f"torch.Tensor.{name}", TENSOR_METHOD)

            def operator(*args: Any, _site: CallSite = site, _original: Any = original,
                         **kwargs: Any) -> Any:
                # `x + y` runs Tensor.__add__, which hands the call to the function mode: a
                # second trip through the tracer's Python handler INSIDE this call's window
                # (measured: +1.7 us on a 2.0 us add, tools/tracer_in_window.py). Where
                # nothing but this tracer would see it, the handler is switched off before the
                # window opens.
                if skips_mode is not None and skips_mode(args):
                    with _DISABLE_TORCH_FUNCTION():
                        return recorder.call(_site, _original, args, kwargs)
                return recorder.call(_site, _original, args, kwargs)

            self._patches.replace(torch.Tensor, name, make_wrapper(original, operator))

    def _mode_skipper(self) -> Callable[[tuple], bool] | None:
        """For calls the tracer records without their insides (not nested): a test of whether
        switching torch function handling off around the call changes nothing but skipping
        this tracer's mode: the only mode on the stack is ours (a script's own mode, such as
        `with torch.device(...)`, must still see the call), and no argument is a tensor
        subclass with a __torch_function__ of its own (Parameter's only disables itself).
        None: never switch it off (nested tracing records what the mode sees inside)."""
        if self.recorder.nested or _DISABLE_TORCH_FUNCTION is None or _MODE_DEPTH is None:
            return None
        plain = (torch.Tensor, torch.nn.Parameter)
        tensor = torch.Tensor

        def skips_mode(args: tuple) -> bool:
            if _MODE_DEPTH() != 1:
                return False
            for value in args:
                if type(value) in plain:
                    continue
                if isinstance(value, tensor):
                    return False
                if type(value) in (tuple, list) and any(
                        isinstance(item, tensor) and type(item) not in plain
                        for item in value):
                    return False
            return True

        return skips_mode

    def _wrap_module_call(self) -> None:
        recorder, module_site = self.recorder, self.module_site
        original = lookup_static(torch.nn.Module, "__call__")
        # Without nesting nothing a framework layer calls inside is recorded, but each of its
        # torch calls would still pass through the function mode's Python handler: measured
        # here, a BatchNorm2d call took ~5x as long with the mode on as off. The layer's time
        # would then be mostly the tracer's. The handling is switched off before the call's
        # window opens (inside it, the switch and its frame cost the call ~0.3 us).
        disable = _DISABLE_TORCH_FUNCTION if not recorder.nested else None

        def module_call(module: Any, *args: Any, **kwargs: Any) -> Any:
            site = module_site(type(module))
            if site.kind == MODULE and recorder.traces_through(site, module, args, kwargs):
                # its forward's own calls are recorded in its place (the function mode stays on)
                return original(module, *args, **kwargs)
            if disable is not None and site.kind == MODULE:
                with disable():
                    return recorder.call(site, original, (module, *args), kwargs)
            return recorder.call(site, original, (module, *args), kwargs)

        self._patches.replace(torch.nn.Module, "__call__", make_wrapper(original, module_call))

    def uninstall(self) -> list[str]:
        problems = self._exit_mode()
        problems += self._patches.restore()
        return problems

    def _exit_mode(self) -> list[str]:
        mode, self._mode = self._mode, None
        if mode is None:
            return []
        if threading.get_ident() != self._mode_thread:
            return ["the torch function mode was entered on another thread and stays on its "
                    "stack there (inactive): stop the tracer on the thread that started it"]
        stack_of = getattr(torch.overrides, "_get_current_function_mode_stack", None)
        if stack_of is None:
            mode.__exit__(None, None, None)
            return []
        stack = stack_of()
        if mode not in stack:
            return ["the torch function mode was already removed by someone else"]
        # Modes pushed after ours (and never popped) go back on top, in order.
        above: list[Any] = []
        while torch.overrides._get_current_function_mode() is not mode:
            above.append(torch.overrides._pop_mode())
        torch.overrides._pop_mode()
        for other in reversed(above):
            torch.overrides._push_mode(other)
        return []

    # -- facts and calibration ----------------------------------------------------------
    def facts(self) -> dict[str, Any]:
        return {"version": str(torch.__version__),
                "intercepted": {
                    "functions_and_tensor_methods": "torch.overrides.TorchFunctionMode "
                                                    "(thread that started the trace)",
                    "operators_wrapped": len(self._patches) - 1,
                    "module_calls": "torch.nn.Module.__call__"},
                "notes": list(self.notes)}

    def calibration_loops(self) -> tuple[str, Callable[[int], None], Callable[[int], None]]:
        a, b = torch.ones(1), torch.ones(1)
        sync = self._sync if self.recorder.timing == SERIAL else None

        def traced(n: int) -> None:
            for _ in range(n):
                torch.add(a, b)

        def untraced(n: int) -> None:
            with torch._C.DisableTorchFunction():
                for _ in range(n):
                    torch.add(a, b)
                    if sync is not None:
                        sync()

        return PROBE, traced, untraced

    def in_window_sequence(self) -> tuple[int, Callable[[int], None],
                                          Callable[[int], list[int]]]:
        """Eight different small calls as a script makes them (a function, an operator, a
        method, functional layers, a module), for overhead.calibrate_in_window: how many,
        run them traced n times, run them untraced n times timing each."""
        x, w, b = torch.ones(8, 16), torch.ones(16, 16), torch.ones(16)
        layer = torch.nn.Linear(16, 16)
        functional = torch.nn.functional
        calls: list[Callable[[], Any]] = [
            lambda: torch.add(x, x), lambda: x + x, lambda: x.relu(),
            lambda: functional.linear(x, w, b), lambda: functional.softmax(x, dim=-1),
            lambda: layer(x), lambda: torch.matmul(x, w), lambda: x.sum()]
        sync, recorder = self._sync, self.recorder
        clock = time.perf_counter_ns

        def traced(n: int) -> None:
            with torch.no_grad():
                for _ in range(n):
                    for call in calls:
                        call()

        def untraced(n: int) -> list[int]:
            out = []
            # the wrapped operators and Module.__call__ pass straight through while internal
            with torch.no_grad(), recorder.internal(), torch._C.DisableTorchFunction():
                for _ in range(n):
                    for call in calls:
                        start = clock()
                        call()
                        sync()
                        out.append(clock() - start)
            return out

        return len(calls), traced, untraced

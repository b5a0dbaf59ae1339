"""MindSpore interception (MindSpore has no __torch_function__-like hook, so: careful wrapping).

- functions in mindspore.ops, mindspore.mint, mint.nn.functional, mint.linalg, mint.special:
  each public function attribute is replaced by a wrapper named after where it was found.
  Calls through those names are traced (`mint.add(x, y)`, `ops.softmax(x)`); a function bound
  to a local name before tracing started (`from mindspore.mint import add`) is not.
- Tensor methods and operators: wrapped on mindspore.Tensor (x + y is Tensor.__add__).
- primitive calls (`ops.Add()(x, y)`, the style of older MindSpore models): __call__ of every
  public primitive class in mindspore.ops.
- nn.Cell calls: nn.Cell.__call__; framework layers (nn.Dense, mint.nn.Linear) are APIs, a
  user's own Cells and containers (SequentialCell, CellList) are scopes; a layer the
  recorder's rule traces through is not recorded, the calls its construct makes are.

Traced code must run in PyNative mode (MindSpore's default). In graph mode and inside @jit the
compiler parses Python source, and wrappers would be compiled instead of the APIs: when graph
mode is on at install time only Cell calls are wrapped (a compiled Cell is timed as a whole).

Importing this module imports mindspore; the tracer imports it only when MindSpore is traced.
"""
from __future__ import annotations

import importlib
import types
from typing import Any, Callable

import mindspore
from mindspore import nn, ops

from opbench.trace.apis import is_traced_tensor_attribute
from opbench.trace.events import (
    FUNCTION,
    MODULE,
    PRIMITIVE,
    SCOPE,
    SERIAL,
    TENSOR_METHOD,
    CallSite,
    TensorSpec,
)
from opbench.trace.patching import PatchSet, is_wrapper, lookup_static, make_wrapper
from opbench.trace.recorder import Recorder

FRAMEWORK = "mindspore"
FUNCTION_NAMESPACES = ("mindspore.ops", "mindspore.mint", "mindspore.mint.nn.functional",
                       "mindspore.mint.linalg", "mindspore.mint.special")
# Where public Cell classes live, to name a framework layer by its public path.
CELL_NAMESPACES = ("mindspore.mint.nn", "mindspore.nn")
CONTAINER_CELLS = frozenset({"SequentialCell", "CellList", "CellDict"})
# Abstract bases of the primitive hierarchy: never called as operators themselves.
PRIMITIVE_BASES = frozenset({"Primitive", "PrimitiveWithInfer", "PrimitiveWithCheck"})
_FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType)
# Raw class attributes that are plain methods (Python functions, C and pybind11 methods).
_METHOD_TYPES = (types.FunctionType, types.MethodDescriptorType, types.WrapperDescriptorType,
                 types.BuiltinFunctionType)
_DTYPE_NAMES = {"BFloat16": "bfloat16", "Bool": "bool"}
PROBE = "a no-op behind the same wrapper as every MindSpore API, on two 1-element tensors"
PROBE_API = "opbench.calibration_probe"
_TensorBase = mindspore.Tensor.__mro__[1] if len(mindspore.Tensor.__mro__) > 2 \
    else mindspore.Tensor


_dtype_names: dict[Any, str] = {}
_new_spec = tuple.__new__      # builds the NamedTuple without its Python-level __new__ (hot path)


def tensor_spec(value: Any) -> TensorSpec | None:
    if isinstance(value, _TensorBase):
        dtype = value.dtype
        name = _dtype_names.get(dtype)
        if name is None:
            text = str(dtype)
            name = _dtype_names[dtype] = _DTYPE_NAMES.get(text, text.lower())
        return _new_spec(TensorSpec, (tuple(value.shape), name))
    return None


def graph_mode() -> bool:
    return mindspore.get_context("mode") == mindspore.GRAPH_MODE


class MindSporeInterceptor:
    framework = FRAMEWORK

    def __init__(self, recorder: Recorder, sync: Callable[[], None]):
        self.recorder = recorder
        self._sync = sync
        self._patches = PatchSet()
        self._cell_sites: dict[type, CallSite] = {}
        self._counts: dict[str, int] = {}
        self.notes: list[str] = []
        self._cell_names = self._public_cells()

    # -- install / uninstall ------------------------------------------------------------
    def install(self) -> None:
        self.recorder.add_framework(FRAMEWORK, sync=self._sync, tensor_spec=tensor_spec)
        self._wrap_cell_call()
        if graph_mode():
            self.notes.append("MindSpore was in graph mode when tracing started: only Cell "
                              "calls are traced (compiled graphs are timed as a whole)")
            return
        self._counts["functions"] = self._wrap_functions()
        self._counts["tensor_methods"] = self._wrap_tensor_methods()
        self._counts["primitives"] = self._wrap_primitives()

    def uninstall(self) -> list[str]:
        return self._patches.restore()

    def _call_wrapper(self, site: CallSite, original: Any) -> Callable[..., Any]:
        recorder = self.recorder

        def traced(*args: Any, **kwargs: Any) -> Any:
            return recorder.call(site, original, args, kwargs)

        return make_wrapper(original, traced)

    def _wrap_functions(self) -> int:
        count = 0
        for prefix in FUNCTION_NAMESPACES:
            try:
                namespace = importlib.import_module(prefix)
            except ImportError:
                continue
            for name, value in list(vars(namespace).items()):
                if name.startswith("_") or not isinstance(value, _FUNCTION_TYPES) \
                        or is_wrapper(value):
                    continue
                site = CallSite(FRAMEWORK, f"{prefix}.{name}", FUNCTION)
                self._patches.replace(namespace, name, self._call_wrapper(site, value))
                count += 1
        return count

    def _wrap_tensor_methods(self) -> int:
        tensor = mindspore.Tensor
        # Resolve every original first, so no wrapper ever wraps another wrapper.
        originals = {}
        for name in dir(tensor):
            if not is_traced_tensor_attribute(name):
                continue
            raw = lookup_static(tensor, name)
            if isinstance(raw, _METHOD_TYPES) and not is_wrapper(raw):
                originals[name] = raw
        for name, raw in originals.items():
            site = CallSite(FRAMEWORK, f"mindspore.Tensor.{name}", TENSOR_METHOD)
            self._patches.replace(tensor, name, self._call_wrapper(site, raw))
        return len(originals)

    def _wrap_primitives(self) -> int:
        classes: dict[type, str] = {}
        for name, value in vars(ops).items():
            if (isinstance(value, type) and issubclass(value, ops.Primitive)
                    and name not in PRIMITIVE_BASES and value not in classes):
                classes[value] = name
        originals = {cls: lookup_static(cls, "__call__") for cls in classes}
        recorder = self.recorder
        for cls, name in classes.items():
            original = originals[cls]
            if original is None or is_wrapper(original):
                continue
            site = CallSite(FRAMEWORK, f"mindspore.ops.{name}", PRIMITIVE, skip=1)

            def primitive_call(primitive: Any, *args: Any, _site: CallSite = site,
                               _original: Any = original, **kwargs: Any) -> Any:
                return recorder.call(_site, _original, (primitive, *args), kwargs)

            self._patches.replace(cls, "__call__", make_wrapper(original, primitive_call))
        return len(classes)

    def _wrap_cell_call(self) -> None:
        recorder, cell_site = self.recorder, self.cell_site
        original = lookup_static(nn.Cell, "__call__")
        compiled = graph_mode()

        def cell_call(cell: Any, *args: Any, **kwargs: Any) -> Any:
            site = cell_site(type(cell))
            # in graph mode only Cell calls are wrapped: a Cell traced through would be lost
            if site.kind == MODULE and not compiled \
                    and recorder.traces_through(site, cell, args, kwargs):
                return original(cell, *args, **kwargs)    # its construct's calls are recorded
            return recorder.call(site, original, (cell, *args), kwargs)

        self._patches.replace(nn.Cell, "__call__", make_wrapper(original, cell_call))

    # -- naming -------------------------------------------------------------------------
    @staticmethod
    def _public_cells() -> dict[type, str]:
        names: dict[type, str] = {}
        for prefix in reversed(CELL_NAMESPACES):      # earlier namespaces win
            try:
                namespace = importlib.import_module(prefix)
            except ImportError:
                continue
            for name, value in vars(namespace).items():
                if isinstance(value, type) and issubclass(value, nn.Cell):
                    names[value] = f"{prefix}.{name}"
        return names

    def cell_site(self, cls: type) -> CallSite:
        site = self._cell_sites.get(cls)
        if site is None:
            module = cls.__module__ or ""
            if module == "mindspore" or module.startswith("mindspore."):
                public = self._cell_names.get(cls, f"{module}.{cls.__qualname__}")
                kind = SCOPE if cls.__name__ in CONTAINER_CELLS else MODULE
            else:
                public, kind = cls.__qualname__, SCOPE
            site = self._cell_sites[cls] = CallSite(FRAMEWORK, public, kind, skip=1)
        return site

    # -- facts and calibration ----------------------------------------------------------
    def facts(self) -> dict[str, Any]:
        return {"version": str(mindspore.__version__),
                "intercepted": {**{f"{k}_wrapped": v for k, v in self._counts.items()},
                                "cell_calls": "mindspore.nn.Cell.__call__"},
                "notes": list(self.notes)}

    def calibration_loops(self) -> tuple[str, Callable[[int], None], Callable[[int], None]]:
        # Every wrapped MindSpore API pays the same cost: the wrapper's frame plus the
        # recorder. A no-op behind an identical wrapper measures exactly that; a real operator
        # would bury a few microseconds under its own run-to-run noise.
        a = mindspore.Tensor([1.0], mindspore.float32)
        b = mindspore.Tensor([1.0], mindspore.float32)
        sync = self._sync if self.recorder.timing == SERIAL else None

        def noop(x: Any, y: Any) -> Any:
            return x

        wrapped = self._call_wrapper(CallSite(FRAMEWORK, PROBE_API, FUNCTION), noop)

        def traced(n: int) -> None:
            for _ in range(n):
                wrapped(a, b)

        def untraced(n: int) -> None:
            for _ in range(n):
                noop(a, b)
                if sync is not None:
                    sync()

        return PROBE, traced, untraced

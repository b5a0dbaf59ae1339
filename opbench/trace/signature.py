"""Describe a call's arguments as a hashable Signature, and format signatures for people.

Tensors become TensorSpec (shape, dtype) through a framework-supplied function; plain values
stay literal when a YAML case can hold them; anything else becomes Opaque.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Optional

from opbench.trace.events import Literal, Opaque, Sequence, Signature, TensorSpec

TensorDescriber = Callable[[Any], Optional[TensorSpec]]

# A longer list is data, not configuration (a shape or dims list is short): keep signatures
# small and groups readable by describing it by its length only.
MAX_SEQUENCE_ITEMS = 32
# Nesting deeper than this is data too (lists of lists of lists...).
MAX_NESTING = 3
# Strings longer than this (a docstring passed along, a path) are not case configuration.
MAX_STRING_CHARS = 64
# Types whose repr is short, cheap and says what the value was; other opaque values are only
# named by type (a repr can be huge or slow: a module, a tensor of another framework).
_CHEAP_REPR_TYPES = ("slice", "ellipsis", "range", "dtype", "device", "Type", "layout",
                     "memory_format", "Float", "Int", "Bool", "TensorType")

_LITERAL_TYPES = (bool, int, float, type(None))

SHORT_DTYPES = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
                "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
                "bool": "b"}


_new = tuple.__new__     # NamedTuples without their Python-level __new__: this is the hot path


def describe_value(value: Any, tensor_spec: TensorDescriber, depth: int = 0) -> Any:
    if isinstance(value, _LITERAL_TYPES):
        return _new(Literal, (value,))
    spec = tensor_spec(value)
    if spec is not None:
        return spec
    if isinstance(value, str):
        return Literal(value) if len(value) <= MAX_STRING_CHARS else Opaque("str", "")
    if isinstance(value, (list, tuple)):
        kind = "list" if isinstance(value, list) else "tuple"
        if len(value) > MAX_SEQUENCE_ITEMS or depth >= MAX_NESTING:
            return Opaque(kind, f"len={len(value)}")
        return Sequence(kind, tuple(describe_value(item, tensor_spec, depth + 1)
                                    for item in value))
    type_name = type(value).__name__
    text = ""
    if type_name in _CHEAP_REPR_TYPES:
        try:
            text = repr(value)
        except Exception:  # a broken repr must not break the traced program
            text = ""
    return Opaque(type_name, text)


def describe_call(args: tuple, kwargs: dict, tensor_spec: TensorDescriber) -> Signature:
    return _new(Signature, (tuple([describe_value(a, tensor_spec) for a in args]),
                            tuple([(k, describe_value(v, tensor_spec))
                                   for k, v in kwargs.items()]) if kwargs else ()))


def tensors_in(value: Any) -> Iterator[TensorSpec]:
    """Every TensorSpec inside a described value or Signature, in argument order."""
    if isinstance(value, TensorSpec):
        yield value
    elif isinstance(value, Signature):
        for item in value.args:
            yield from tensors_in(item)
        for _, item in value.kwargs:
            yield from tensors_in(item)
    elif isinstance(value, Sequence):
        for item in value.items:
            yield from tensors_in(item)


def opaque_in(value: Any) -> Iterator[Opaque]:
    if isinstance(value, Opaque):
        yield value
    elif isinstance(value, Signature):
        for item in value.args:
            yield from opaque_in(item)
        for _, item in value.kwargs:
            yield from opaque_in(item)
    elif isinstance(value, Sequence):
        for item in value.items:
            yield from opaque_in(item)


def format_tensor(spec: TensorSpec) -> str:
    dims = ",".join(str(d) for d in spec.shape)
    return f"{SHORT_DTYPES.get(spec.dtype, spec.dtype)}[{dims}]"


def format_inputs(signature: Signature) -> str:
    """The tensor inputs only: 'f32[8,16], f32[16]' (what "group by shape" groups on)."""
    specs = [format_tensor(s) for s in tensors_in(signature)]
    return ", ".join(specs) if specs else "-"


def format_value(value: Any) -> str:
    if isinstance(value, TensorSpec):
        return format_tensor(value)
    if isinstance(value, Literal):
        return repr(value.value)
    if isinstance(value, Sequence):
        inner = ", ".join(format_value(v) for v in value.items)
        if value.kind == "list":
            return f"[{inner}]"
        return f"({inner},)" if len(value.items) == 1 else f"({inner})"
    return value.text or f"<{value.type_name}>"


def format_signature(signature: Signature) -> str:
    """Every argument: 'f32[8,16], dim=-1'."""
    parts: Iterable[str] = [format_value(a) for a in signature.args]
    parts = [*parts, *(f"{k}={format_value(v)}" for k, v in signature.kwargs)]
    return ", ".join(parts)

"""The trace record's format: its name and version, and how call arguments are written in it
and read back (record.py writes records, record_read.py reads them).

Record format history (bump RECORD_VERSION on any incompatible change):
  1 - first version: settings, frameworks, overhead, summary rows, signatures, events.
      Later, without a version bump (an added key; readers take a missing one as empty):
      markers, the step marks [{"at": event index, "label": ...}] of opbench.model.step().
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from opbench.config.record_codec import record_from
from opbench.trace.events import Literal, Opaque, Sequence, Signature, TensorSpec
from opbench.trace.signature import format_signature

RECORD_FORMAT = "opbench-trace"
RECORD_VERSION = 1
# The record's name in `opbench trace -o DIR` (what `opbench trace compare` reads from a DIR).
RECORD_FILE = "trace_record.json"


def value_json(value: Any) -> Any:
    if isinstance(value, TensorSpec):
        return {"tensor": {"shape": list(value.shape), "dtype": value.dtype}}
    if isinstance(value, Literal):
        return {"literal": value.value}
    if isinstance(value, Sequence):
        return {value.kind: [value_json(v) for v in value.items]}
    return {"opaque": value.type_name, "text": value.text}


@dataclass(frozen=True)
class _TensorJson:
    """A tensor argument's body: {"tensor": {"shape": [...], "dtype": "..."}}."""

    shape: Any
    dtype: Any


@dataclass(frozen=True)
class _OpaqueJson:
    """An opaque argument: {"opaque": type name, "text": its repr}."""

    opaque: Any
    text: Any = ""


@dataclass(frozen=True)
class _SignatureJson:
    """A signature: {"args": [...], "kwargs": {...}, "text": ...} (the text is derived)."""

    args: Any
    kwargs: Mapping[str, Any]


def value_from_json(item: Any) -> Any:
    """The inverse of value_json (raises KeyError, TypeError or ValueError on what it never
    writes)."""
    kind = next(iter(item))
    body = item[kind]
    if kind == "tensor":
        tensor = record_from(_TensorJson, body)
        return TensorSpec(tuple(int(d) for d in tensor.shape), str(tensor.dtype))
    if kind == "literal":
        return Literal(body)
    if kind in ("list", "tuple"):
        return Sequence(kind, tuple(value_from_json(v) for v in body))
    if kind == "opaque":
        opaque = record_from(_OpaqueJson, item)
        return Opaque(str(opaque.opaque), str(opaque.text))
    raise ValueError(f"unknown argument kind {kind!r}")


def signature_from_json(item: Mapping[str, Any]) -> Signature:
    signature = record_from(_SignatureJson, item)
    return Signature(tuple(value_from_json(v) for v in signature.args),
                     tuple((str(k), value_from_json(v)) for k, v in signature.kwargs.items()))


def signature_json(signature: Signature) -> dict[str, Any]:
    return {"args": [value_json(v) for v in signature.args],
            "kwargs": {k: value_json(v) for k, v in signature.kwargs},
            "text": format_signature(signature)}

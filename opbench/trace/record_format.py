"""The trace record's format: its name and version, and how call arguments are written in it
and read back (record.py writes records, record_read.py reads them).

Record format history (bump RECORD_VERSION on any incompatible change):
  1 - first version: settings, frameworks, overhead, summary rows, signatures, events.
      Later, without a version bump (an added key; readers take a missing one as empty):
      markers, the step marks [{"at": event index, "label": ...}] of opbench.model.step().
"""
from __future__ import annotations

from typing import Any

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


def value_from_json(item: Any) -> Any:
    """The inverse of value_json (raises KeyError, TypeError or ValueError on what it never
    writes)."""
    kind = next(iter(item))
    body = item[kind]
    if kind == "tensor":
        return TensorSpec(tuple(int(d) for d in body["shape"]), str(body["dtype"]))
    if kind == "literal":
        return Literal(body)
    if kind in ("list", "tuple"):
        return Sequence(kind, tuple(value_from_json(v) for v in body))
    if kind == "opaque":
        return Opaque(str(body), str(item.get("text", "")))
    raise ValueError(f"unknown argument kind {kind!r}")


def signature_from_json(item: dict[str, Any]) -> Signature:
    return Signature(tuple(value_from_json(v) for v in item["args"]),
                     tuple((str(k), value_from_json(v)) for k, v in item["kwargs"].items()))


def signature_json(signature: Signature) -> dict[str, Any]:
    return {"args": [value_json(v) for v in signature.args],
            "kwargs": {k: value_json(v) for k, v in signature.kwargs},
            "text": format_signature(signature)}

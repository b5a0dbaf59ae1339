"""Mappings read as typed records, once, at the boundary: a frozen dataclass built from a
JSON or YAML mapping by its own fields (`dataclasses.fields`), so the code after it reads
attributes, not string keys (issue 33: a key misspelt in a read is a silent None; a field
misspelt is an AttributeError, and a type checker sees it).

    @dataclass(frozen=True)
    class Probe:
        python: str
        frameworks: tuple[str, ...] = field(default=(), metadata=decoded(tuple))

    probe = record_from(Probe, json.loads(text))

A key the mapping lacks takes the field's default; a field without a default whose key is
missing is a KeyError naming it (what `data["key"]` raised before); keys the record does
not declare are ignored (a newer writer's). A field's `decoded(fn)` metadata turns the
JSON value into the field's type (a list into a tuple, a nested mapping into a record),
and `null_is_default` makes a JSON null read as the default, as `data.get(k) or default`
did. results/records.py keeps its own richer codec (key order, unknown keys written back,
schema errors by path) for the results file; this one is for the layers below it.

Imports nothing of opbench: config/ is the leaf every layer may import.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, TypeVar

__all__ = ["decoded", "record_from"]

T = TypeVar("T")
_DECODE = "opbench_decode"
_NULL_IS_DEFAULT = "opbench_null_is_default"


def decoded(decode: Callable[[Any], Any] | None = None,
            null_is_default: bool = False) -> dict[str, Any]:
    """Field metadata: how the mapping's value becomes the field's (None: as it is), and
    whether a null value reads as the field's default."""
    return {_DECODE: decode, _NULL_IS_DEFAULT: null_is_default}


def record_from(cls: type[T], data: Mapping[str, Any]) -> T:
    """`cls` from the keys of `data` named like its fields (see the module's docstring)."""
    values: dict[str, Any] = {}
    missing: list[str] = []
    for f in dataclasses.fields(cls):        # type: ignore[arg-type]
        if not f.init:
            continue
        value = data[f.name] if f.name in data else dataclasses.MISSING
        if value is None and f.metadata.get(_NULL_IS_DEFAULT):
            value = dataclasses.MISSING
        if value is dataclasses.MISSING:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                missing.append(f.name)
            continue
        decode = f.metadata.get(_DECODE)
        values[f.name] = decode(value) if decode is not None else value
    if missing:
        raise KeyError(f"{cls.__name__}: missing {', '.join(repr(m) for m in missing)}")
    return cls(**values)

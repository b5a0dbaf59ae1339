"""Frozen dataclasses to and from JSON, driven by their fields (`dataclasses.fields`): the one
place the model's JSON (the capture file, program.py; the saved model record,
impact/record.py) is read by key. Everything after reads attributes.

A field is read from the key of its name, or the one `json_field(key=...)` gives it (the
capture file's short keys), through the field's Codec (nested records, arrays of them, a
record written as an array); an absent key takes the field's default, and a key the class
does not know is left alone (a newer writer's addition). `omit_default=True` leaves a field
at its default out of what `to_object` writes (a call's optional parts).

Why not results/records.py's codec: the capture imports program.py, so this module, into
the user's interpreter, where opbench keeps to the standard library; and a model record
keeps no key order or unknown keys (nothing rewrites one). This module imports the standard
library only (tests/unit/test_model_json_records.py holds it to that).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Mapping, TypeVar

__all__ = ["Codec", "JsonRecordError", "PLAIN", "by_name", "each", "from_object",
           "from_row", "json_field", "object_of", "optional", "row_of", "to_object",
           "to_row", "tuple_of"]

T = TypeVar("T")


class JsonRecordError(ValueError):
    """JSON that does not hold the record: the message says where (a path of keys)."""


@dataclass(frozen=True)
class Codec:
    """How one field's JSON value becomes the field's value (`decode(value, where)`) and
    back (`encode`)."""
    decode: Callable[[Any, str], Any]
    encode: Callable[[Any], Any]


PLAIN = Codec(lambda value, where: value, lambda value: value)


@dataclass(frozen=True)
class _Spec:
    key: str | None
    codec: Codec
    omit_default: bool


# The metadata key a field's _Spec sits under (a name of our own, so no one else's
# metadata collides with it).
_SPEC = "opbench.model.json"


def json_field(key: str | None = None, codec: Codec = PLAIN, omit_default: bool = False,
               **field_args: Any) -> Any:
    """A dataclass field read from `key` (default: the field's name) through `codec`;
    `field_args` as dataclasses.field takes them (default, default_factory)."""
    return dataclasses.field(metadata={_SPEC: _Spec(key, codec, omit_default)}, **field_args)


@dataclass(frozen=True)
class _Slot:
    name: str
    key: str
    codec: Codec
    omit_default: bool
    field: dataclasses.Field

    @property
    def required(self) -> bool:
        return (self.field.default is dataclasses.MISSING
                and self.field.default_factory is dataclasses.MISSING)

    def default(self) -> Any:
        if self.field.default is not dataclasses.MISSING:
            return self.field.default
        return self.field.default_factory()


_SLOTS: dict[type, tuple[_Slot, ...]] = {}
_NO_SPEC = _Spec(None, PLAIN, False)


def _slots(cls: type) -> tuple[_Slot, ...]:
    """The class's fields with their keys and codecs, worked out once per class."""
    slots = _SLOTS.get(cls)
    if slots is None:
        slots = []
        for f in dataclasses.fields(cls):
            spec = f.metadata.get(_SPEC, _NO_SPEC)
            slots.append(_Slot(f.name, spec.key or f.name, spec.codec, spec.omit_default, f))
        slots = _SLOTS[cls] = tuple(slots)
    return slots


def _at(where: str, key: Any) -> str:
    return f"{where}/{key}" if where else str(key)


def from_object(cls: type[T], data: Any, where: str = "") -> T:
    """The record of a JSON object: each field from its key; JsonRecordError names a
    required key that is missing or a value that is not an object."""
    if not isinstance(data, Mapping):
        raise JsonRecordError(f"{where or '(top level)'}: expected an object, got "
                              f"{type(data).__name__}")
    values = {}
    for slot in _slots(cls):
        if slot.key in data:
            values[slot.name] = slot.codec.decode(data[slot.key], _at(where, slot.key))
        elif slot.required:
            raise JsonRecordError(f"{where or '(top level)'}: the required key {slot.key!r} "
                                  f"is missing")
    return cls(**values)


def to_object(record: Any) -> dict[str, Any]:
    """The record as a JSON object, in field order (a field marked omit_default left out
    at its default)."""
    out = {}
    for slot in _slots(type(record)):
        value = getattr(record, slot.name)
        if slot.omit_default and not slot.required and value == slot.default():
            continue
        out[slot.key] = slot.codec.encode(value)
    return out


def from_row(cls: type[T], row: Any, where: str = "") -> T:
    """The record of a JSON array holding its fields in order (a compact form for the
    many small records of a capture file)."""
    slots = _slots(cls)
    needed = sum(slot.required for slot in slots)
    if not isinstance(row, (list, tuple)) or not needed <= len(row) <= len(slots):
        raise JsonRecordError(f"{where or '(top level)'}: expected an array of "
                              f"{needed}-{len(slots)} values, got {str(row)[:80]}")
    return cls(*(slot.codec.decode(value, _at(where, i))
                 for i, (slot, value) in enumerate(zip(slots, row))))


def to_row(record: Any) -> list[Any]:
    return [slot.codec.encode(getattr(record, slot.name)) for slot in _slots(type(record))]


# -- codecs for fields ------------------------------------------------------------------

def object_of(cls: type) -> Codec:
    """A nested record written as an object."""
    return Codec(lambda value, where: from_object(cls, value, where), to_object)


def row_of(cls: type) -> Codec:
    """A nested record written as an array of its fields."""
    return Codec(lambda value, where: from_row(cls, value, where), to_row)


def _array(value: Any, where: str) -> list[Any]:
    if not isinstance(value, (list, tuple)):
        raise JsonRecordError(f"{where}: expected an array, got {type(value).__name__}")
    return list(value)


def tuple_of(item: Codec = PLAIN) -> Codec:
    """An array as a tuple, each item through `item`."""
    return Codec(lambda value, where: tuple(item.decode(v, _at(where, i))
                                            for i, v in enumerate(_array(value, where))),
                 lambda value: [item.encode(v) for v in value])


def each(cls: type) -> Codec:
    """An array of records written as objects."""
    return tuple_of(object_of(cls))


def by_name(item: Codec = PLAIN) -> Codec:
    """An object of values by name (a dict); JSON null reads as an empty one."""
    def decode(value: Any, where: str) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise JsonRecordError(f"{where}: expected an object, got {type(value).__name__}")
        return {k: item.decode(v, _at(where, k)) for k, v in value.items()}
    return Codec(decode, lambda value: {k: item.encode(v) for k, v in value.items()})


def optional(inner: Codec) -> Codec:
    """`inner`, with JSON null read and written as None."""
    return Codec(lambda value, where: None if value is None else inner.decode(value, where),
                 lambda value: None if value is None else inner.encode(value))

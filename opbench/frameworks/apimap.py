"""torch <-> MindSpore API mapping, loaded from opbench/data/api_mapping.yaml. CONTRACT.

Data file: a YAML list of entries
    - torch: torch.nn.functional.softmax      # full dotted name; Tensor methods as torch.Tensor.sum
      mindspore: mindspore.mint.nn.functional.softmax   # or null where there is no equivalent
      kind: function | functional | tensor_method | module | class
      status: same | differs | none
      note: "dim vs axis"                     # required when status is differs or none
      alternatives: [mindspore.ops.gelu]      # optional: other MindSpore APIs with the same
                                              # meaning (e.g. the CPU route where mint has no
                                              # CPU kernel); from_mindspore finds them too
"""
from __future__ import annotations

import dataclasses
import functools
import importlib.resources
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from opbench.config.record_codec import decoded, record_from

STATUSES = ("same", "differs", "none")
KINDS = ("function", "functional", "tensor_method", "module", "class")


@dataclass(frozen=True)
class MappingEntry:
    """One entry of the file; its fields are the entry's keys (the parser reads it by them)."""

    torch: str
    mindspore: str | None
    kind: str
    status: str
    note: str = field(default="", metadata=decoded(null_is_default=True))
    # other MindSpore names for the same operation (a list in the file)
    alternatives: tuple[str, ...] = field(default=(), metadata=decoded(null_is_default=True))


@dataclass(frozen=True)
class _EntryName:
    """What an entry's errors call it by, read before the entry is known to be whole."""

    torch: Any = None


class ApiMapping:
    """Lookup in both directions. Names are full dotted names."""

    def __init__(self, entries: list[MappingEntry]):
        self.entries = tuple(entries)
        self._by_torch = {e.torch: e for e in entries}
        self._by_ms: dict[str, MappingEntry] = {}
        for e in entries:
            if e.mindspore:
                self._by_ms.setdefault(e.mindspore, e)
        # Alternatives second, so a name that is some entry's primary counterpart keeps it.
        for e in entries:
            for name in e.alternatives:
                self._by_ms.setdefault(name, e)

    def from_torch(self, name: str) -> MappingEntry | None:
        return self._by_torch.get(name)

    def from_mindspore(self, name: str) -> MappingEntry | None:
        return self._by_ms.get(name)

    def lookup(self, framework: str, name: str) -> MappingEntry | None:
        return self.from_torch(name) if framework == "torch" else self.from_mindspore(name)

    def __len__(self) -> int:
        return len(self.entries)


class MappingError(ValueError):
    """The mapping file is malformed. str(err) names the file, the entry and the problem."""


SHIPPED_RESOURCE = "data/api_mapping.yaml"
_REQUIRED_KEYS = tuple(f.name for f in dataclasses.fields(MappingEntry)
                       if f.default is dataclasses.MISSING)
_ALLOWED_KEYS = frozenset(f.name for f in dataclasses.fields(MappingEntry))
_TOP_MODULE = {"torch": "torch", "mindspore": "mindspore"}


def load_mapping(path: str | os.PathLike[str] | None = None) -> ApiMapping:
    """Load the shipped mapping (cached: it is read once per process), or the file at `path`.

    Raises MappingError naming the entry for a malformed file."""
    if path is None:
        return _shipped_mapping()
    source = Path(path)
    return parse_mapping(source.read_text(encoding="utf-8"), str(source))


@functools.lru_cache(maxsize=1)
def _shipped_mapping() -> ApiMapping:
    resource = importlib.resources.files("opbench").joinpath(SHIPPED_RESOURCE)
    return parse_mapping(resource.read_text(encoding="utf-8"), f"opbench/{SHIPPED_RESOURCE}")


def parse_mapping(text: str, source: str = "<mapping>") -> ApiMapping:
    """Validate and build the mapping from YAML text; `source` names the file in errors."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise MappingError(f"{source}: not valid YAML: {err}") from err
    if not isinstance(data, list):
        raise MappingError(f"{source}: expected a list of entries, got {type(data).__name__}")
    entries: list[MappingEntry] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(data):
        entry = _parse_entry(raw, f"{source}: entry {index + 1}")
        if entry.torch in seen:
            raise MappingError(f"{source}: entry {index + 1} ({entry.torch}): duplicate torch "
                               f"name (first at entry {seen[entry.torch] + 1})")
        seen[entry.torch] = index
        entries.append(entry)
    return ApiMapping(entries)


def _parse_entry(raw: object, where: str) -> MappingEntry:
    if not isinstance(raw, dict):
        raise MappingError(f"{where}: expected a mapping, got {type(raw).__name__}")
    name = record_from(_EntryName, raw).torch
    if isinstance(name, str):
        where = f"{where} ({name})"
    missing = [key for key in _REQUIRED_KEYS if key not in raw]
    if missing:
        raise MappingError(f"{where}: missing key(s) {', '.join(missing)}")
    unknown = sorted(set(raw) - _ALLOWED_KEYS)
    if unknown:
        raise MappingError(f"{where}: unknown key(s) {', '.join(map(str, unknown))} "
                           f"(allowed: {', '.join(sorted(_ALLOWED_KEYS))})")
    entry = record_from(MappingEntry, raw)
    for framework, prefix in _TOP_MODULE.items():
        value = getattr(entry, framework)
        if value is None and framework == "mindspore":
            continue
        if not isinstance(value, str) or not (value == prefix or value.startswith(prefix + ".")):
            raise MappingError(f"{where}: {framework} must be a dotted name starting with "
                               f"'{prefix}.', got {value!r}")
    if entry.kind not in KINDS:
        raise MappingError(f"{where}: kind {entry.kind!r} is not one of {', '.join(KINDS)}")
    status = entry.status
    if status not in STATUSES:
        raise MappingError(f"{where}: status {status!r} is not one of {', '.join(STATUSES)}")
    note = entry.note or ""
    if not isinstance(note, str):
        raise MappingError(f"{where}: note must be a string, got {type(note).__name__}")
    if status in ("differs", "none") and not note.strip():
        raise MappingError(f"{where}: status {status} needs a note saying how (or what to use)")
    if (status == "none") != (entry.mindspore is None):
        raise MappingError(f"{where}: mindspore must be null exactly when status is none")
    alternatives = entry.alternatives or []
    if not isinstance(alternatives, (list, tuple)) or not all(
            isinstance(a, str) and a.startswith("mindspore.") for a in alternatives):
        raise MappingError(f"{where}: alternatives must be a list of dotted names starting "
                           f"with 'mindspore.', got {alternatives!r}")
    return replace(entry, note=note, alternatives=tuple(alternatives))

"""The case model: what a case file declares once it is read and checked (Case, its inputs
and each framework's call) and what a sweep makes of it (CaseInstance), with the syntax a
case's strings use to name a param or an input (`$name`; `$$text` for a literal `$text`).

Pure records and the reference syntax; nothing here reads a file or says what is wrong
(case_validation.py and case_expansion.py do, in case_errors.py's words). A case's mapping,
once the schema has checked it, is read as typed fields (CaseSpec, by config/record_codec.py)
rather than by string keys. It imports nothing of opbench but config/ (the leaf), so every
module of the case format can build on it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping

from opbench.config.record_codec import decoded, record_from
from opbench.config.vocabulary import ADAPTER_FRAMEWORKS

__all__ = ["CASE_FILE_SUFFIXES", "ESCAPE", "REF_PATTERN", "SCHEMA_PATH", "Case",
           "CaseInstance", "CaseSpec", "DistOptions", "DocPath", "FrameworkCall", "InputSpec",
           "Location", "Ref", "SectionSpec", "ToleranceSpec", "ref_name"]

CASE_FILE_SUFFIXES = (".yaml", ".yml")
SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schema" / "case.schema.json"

# A `$param` or `$input` reference, as the schema's pattern and as a match.
REF_PATTERN = r"^\$[A-Za-z_][A-Za-z0-9_]*$"
_REF_RE = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)$")
# `$$text` is the literal string `$text`.
ESCAPE = "$$"

DocPath = tuple  # keys (str) and sequence indices (int) from the document or case root


def ref_name(value: Any) -> str | None:
    """The name a `$name` string refers to; None for any other value."""
    if isinstance(value, str):
        match = _REF_RE.match(value)
        if match:
            return match.group(1)
    return None


@dataclass(frozen=True)
class Location:
    file: str
    line: int  # 1-based

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class ToleranceSpec:
    """A case's `tolerance:` mapping."""

    rtol: float | None = None
    atol: float | None = None


@dataclass(frozen=True)
class SectionSpec:
    """One framework's section of a case as written (`torch:`, `mindspore:`, `numpy:`):
    the API path, its arguments with `$name` references unresolved, which output to
    compare."""

    api: Any = ""
    args: Any = None
    kwargs: Any = None
    output: Any = None


def _section(value: Any) -> SectionSpec:
    return record_from(SectionSpec, value or {})


@dataclass(frozen=True)
class CaseSpec:
    """One case's mapping as written, read by its keys once the schema has checked its
    structure (case_validation.py): the fields are the case format's keys
    (opbench/schema/case.schema.json), each with the default the format gives it. `inputs`
    stays a mapping of input specs: their keys may hold `$param` references, checked only
    once substituted (case_expansion.py). `name` is required by the schema; a case built
    in code (Case(raw=...)) may leave it out of `raw`."""

    name: str = ""
    op: str | None = None
    tags: tuple[str, ...] = field(default=(), metadata=decoded(tuple))
    description: str = ""
    params: Mapping[str, Any] = field(default_factory=dict,
                                      metadata=decoded(null_is_default=True))
    inputs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict,
                                                    metadata=decoded(null_is_default=True))
    threshold: float | None = None
    min_effect: float | None = None
    work: Mapping[str, Any] | None = None
    tolerance: ToleranceSpec = field(default_factory=ToleranceSpec, metadata=decoded(
        lambda value: record_from(ToleranceSpec, value or {})))
    backward: bool = False
    expect_mismatch: str | None = None
    compare: str = "values"
    torch: SectionSpec | None = field(default=None, metadata=decoded(_section))
    mindspore: SectionSpec | None = field(default=None, metadata=decoded(_section))
    numpy: SectionSpec | None = field(default=None, metadata=decoded(_section))

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> "CaseSpec":
        return record_from(cls, raw)

    @property
    def sections(self) -> dict[str, SectionSpec]:
        """The framework sections the case has, in the vocabulary's order."""
        found = {"torch": self.torch, "mindspore": self.mindspore, "numpy": self.numpy}
        return {f: found[f] for f in ADAPTER_FRAMEWORKS if found[f] is not None}


@dataclass(frozen=True)
class DistOptions:
    """An input distribution's options (case_expansion.DISTRIBUTIONS names which a
    distribution takes, with their defaults); None: the distribution takes no such option."""

    mean: float | None = None
    std: float | None = None
    low: float | None = None
    high: float | None = None
    p: float | None = None

    @classmethod
    def of(cls, options: Mapping[str, Any]) -> "DistOptions":
        return record_from(cls, options)


@dataclass(frozen=True)
class InputSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str
    dist: str = "normal"
    options: Mapping[str, Any] = field(default_factory=dict)  # mean/std/low/high/p
    requires_grad: bool | None = None


@dataclass(frozen=True)
class FrameworkCall:
    framework: str              # "torch" | "mindspore" | "numpy"
    api: str                    # dotted path, or "Tensor.method"
    args: tuple[Any, ...]       # with "$input" references still as Ref objects
    kwargs: Mapping[str, Any]
    output: int | tuple[int, ...] | None = None
    location: Location | None = None   # line of the `api` key, for load-time API errors


@dataclass(frozen=True)
class Ref:
    """A reference to a named input inside args/kwargs (resolved to a tensor at run time)."""
    name: str


@dataclass(frozen=True)
class Case:
    name: str
    op: str
    file: str
    line: int
    tags: tuple[str, ...]
    description: str
    params: Mapping[str, tuple[Any, ...]]        # sweep axes, in file order
    raw: Mapping[str, Any]                       # the case mapping as loaded (for expansion)
    threshold: float | None = None
    # The gate's minimum effect for this case (opbench gate): between --min-effect-for
    # patterns, which win, and --min-effect, which it overrides.
    min_effect: float | None = None
    # Declared work per call ({"unit": "bytes"|"flops", "per_output_element": x}) for the
    # size-sweep decomposition; None: counted from the shapes (gapmap/work.py).
    work: Mapping[str, Any] | None = None
    rtol: float | None = None
    atol: float | None = None
    backward: bool = False
    expect_mismatch: str | None = None
    compare: str = "values"
    # Line of every key and list item, by path inside the case (("inputs", "x", "shape"));
    # lets expand() name the line of a value that only becomes invalid after substitution.
    lines: Mapping[DocPath, int] = field(default_factory=dict, compare=False, repr=False)
    # The instances the loader built while checking the case, so the first expand() does
    # not build them a second time (a 50,000-case file was expanded twice).
    expanded: list = field(default_factory=list, compare=False, repr=False)

    @cached_property
    def spec(self) -> CaseSpec:
        """`raw` read as typed fields (once per case)."""
        return CaseSpec.of(self.raw)


@dataclass(frozen=True)
class CaseInstance:
    id: str                                      # stable, readable: name[k=v,...]
    case: Case
    params: Mapping[str, Any]
    inputs: tuple[InputSpec, ...]
    calls: Mapping[str, FrameworkCall]           # framework name -> call

    @property
    def op(self) -> str:
        return self.case.op

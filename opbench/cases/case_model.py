"""The case model: what a case file declares once it is read and checked (Case, its inputs
and each framework's call) and what a sweep makes of it (CaseInstance), with the syntax a
case's strings use to name a param or an input (`$name`; `$$text` for a literal `$text`).

Pure records and the reference syntax; nothing here reads a file or says what is wrong
(case_validation.py and case_expansion.py do, in case_errors.py's words). It imports
nothing of opbench, so every module of the case format can build on it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

__all__ = ["CASE_FILE_SUFFIXES", "ESCAPE", "REF_PATTERN", "SCHEMA_PATH", "Case",
           "CaseInstance", "DocPath", "FrameworkCall", "InputSpec", "Location", "Ref",
           "ref_name"]

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

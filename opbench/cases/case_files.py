"""Case files: schema validation, line-accurate errors, sweep expansion.

CONTRACT (implemented by the cases helper; other modules rely on these names).
See docs/case-format.md for the file format.

Loading is three passes over one file, each reporting every problem it finds with the
file:line of the offending key:
  1. YAML: one pass over libyaml's events (case_yaml.py) builds the data with safe
     semantics and the line of every key, and reports duplicate keys, which PyYAML would
     otherwise accept silently, and what a hostile file could do (alias bombs, deep nesting);
  2. structure: JSON Schema (opbench/schema/case.schema.json, the single source of truth
     that editors use too), its errors rewritten as short messages naming the key;
  3. meaning: things a schema cannot say: unique names, at least two frameworks, `$refs`
     that resolve, API paths of the right framework, and every sweep instance's inputs
     (a `$param` can make a shape or dtype invalid only after substitution).
"""
from __future__ import annotations

import copy
import difflib
import itertools
import json
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import yaml

from opbench.cases.api_guard import UnknownAPI, check_path_text, check_tensor_method
from opbench.cases.selection import Selection, as_tuple
from opbench.cases.yaml_source import RECURSIVE_ALIAS, YamlDocument, YamlLimitError, read_yaml
from opbench.config import limits
from opbench.config.vocabulary import (
    CASE_DTYPES,
    CASE_INT_DTYPES,
    FLOAT_DTYPES,
    MINDSPORE,
    TORCH,
)

__all__ = [
    "CaseError", "Location", "InputSpec", "FrameworkCall", "Ref", "Case", "CaseInstance",
    "load_case_file", "load_cases", "expand", "select", "load_schema",
    "FRAMEWORK_SECTIONS", "DTYPES", "FLOAT_DTYPES", "CASE_INT_DTYPES", "DISTRIBUTIONS",
    "SCHEMA_PATH",
]

FRAMEWORK_SECTIONS = (TORCH, MINDSPORE, "numpy")
# The dtypes a case's input may have (config/vocabulary.py; DTYPES is the name the runner,
# the adapters and the tracer's case writer import it by).
DTYPES = CASE_DTYPES
INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
DEFAULT_DTYPE = "float32"
# Bytes per element of the numpy array an input becomes (bfloat16 is held as float32).
_ITEMSIZE = {"float16": 2, "bfloat16": 4, "float32": 4, "float64": 8, "int32": 4,
             "int64": 8, "bool": 1}

# Distributions and the options each one takes, with their defaults (docs/case-format.md).
DISTRIBUTIONS: Mapping[str, Mapping[str, float]] = {
    "normal": {"mean": 0.0, "std": 1.0},
    "uniform": {"low": 0.0, "high": 1.0},
    # Default 0..9: small non-negative values, valid as indices into any axis of length >= 10.
    "randint": {"low": 0, "high": 10},
    # Bounded away from 0 so log, rsqrt, division and pow stay finite and well conditioned.
    "positive": {"low": 0.1, "high": 1.0},
    "mask": {"p": 0.5},
    "arange": {},
    "permutation": {},
}
DIST_OPTIONS = ("mean", "std", "low", "high", "p")
FLOAT_ONLY_DISTS = ("normal", "uniform", "positive")   # they draw non-integer values
DEFAULT_DIST_FOR = {**{d: "normal" for d in FLOAT_DTYPES},
                    **{d: "randint" for d in CASE_INT_DTYPES}, "bool": "mask"}

# An API path must belong to its section; "Tensor." is each framework's tensor type.
API_PREFIXES = {TORCH: "torch.", MINDSPORE: "mindspore.", "numpy": "numpy."}
TENSOR_PREFIX = "Tensor."
# Numbers that set how a case is judged: they must be finite.
_FINITE_KEYS = (("threshold",), ("min_effect",), ("work", "per_output_element"),
                ("tolerance", "rtol"), ("tolerance", "atol"))
# A comparison needs a baseline and a candidate.
MIN_FRAMEWORKS = 2
CASE_FILE_SUFFIXES = (".yaml", ".yml")

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schema" / "case.schema.json"

REF_PATTERN = r"^\$[A-Za-z_][A-Za-z0-9_]*$"
_REF_RE = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)$")
_ESCAPE = "$$"
# Reported while reading the YAML; the schema validator would recurse forever on such data.
_RECURSIVE_ALIAS = RECURSIVE_ALIAS

# Short explanations for the schema's regular expressions (a test checks every pattern in
# the schema has one), so errors do not show users a regex.
PATTERN_HINTS = {
    REF_PATTERN: "is not a '$param' reference",
    r"^[A-Za-z_][A-Za-z0-9_]*$": "is not a valid name (letters, digits and '_', "
                                  "not starting with a digit)",
    r"^[A-Za-z0-9_.-]+$": "may only contain letters, digits, '_', '.' and '-'",
    r"^[a-z0-9_]+$": "may only contain lower-case letters, digits and '_'",
    r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$":
        "is not a dotted path like 'torch.nn.functional.softmax' or 'Tensor.sum'",
}
_JSON_TYPE_WORDS = {"array": "a list", "object": "a mapping", "string": "a string",
                    "integer": "an integer", "number": "a number",
                    "boolean": "true or false", "null": "null"}

# Instance-id rendering of parameter values (see docs/case-format.md, "Instance ids").
_UNSAFE_ID_CHARS = re.compile(r"[^A-Za-z0-9_.+-]")
_EMPTY_LABEL = "empty"
_DISAMBIGUATOR = "~"   # never produced by a rendered value, so `label~N` is always unique

DocPath = tuple  # keys (str) and sequence indices (int) from the document or case root


class CaseError(Exception):
    """A case-file problem. str(err) is the full user-facing message:
    '<file>:<line> case '<name>': <what is wrong with which key>'.

    When several problems are reported together, str(err) has one per line and `errors`
    holds them one by one (the attributes of `err` itself are those of the first)."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 case: str | None = None, key: str | None = None,
                 errors: Sequence[CaseError] = ()):
        super().__init__(message)
        self.file, self.line, self.case, self.key = file, line, case, key
        self.errors: tuple[CaseError, ...] = tuple(errors) or (self,)


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


# ---------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------

def load_schema() -> dict[str, Any]:
    """The case-file JSON Schema (what `opbench schema` prints)."""
    return copy.deepcopy(_schema())


def load_case_file(path: str | Path) -> list[Case]:
    """Read, validate and return the cases of one YAML file; raise CaseError listing every
    problem of the file (one per line, each naming file:line, case and key)."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseError(f"{file}: cannot read case file: {exc}", file=file) from None
    return _parse_cases(text, file)


def load_cases(paths: Iterable[str | Path]) -> list[Case]:
    """Load case files and directories (searched recursively for *.yaml / *.yml, in sorted
    order, skipping hidden directories). Case names must be unique across all of them.
    Raises one CaseError listing the problems of every file."""
    errors: list[CaseError] = []
    cases: list[Case] = []
    for file in _case_files(paths, errors):
        try:
            cases.extend(load_case_file(file))
        except CaseError as exc:
            errors.extend(exc.errors)
    first_by_name: dict[str, Case] = {}
    for case in cases:
        first = first_by_name.setdefault(case.name, case)
        if first is not case:
            errors.append(_case_error(
                case.file, case.line, case.name, None,
                f"duplicate case name (first defined at {first.file}:{first.line})"))
    _raise_if_any(errors)
    return cases


def expand(case: Case) -> list[CaseInstance]:
    """The instances of a case: the cross product of its params in file order (first param
    varying slowest) with every `$param` substituted, `$input` in args/kwargs turned into
    Ref(input) and `$$text` into the literal `$text`. Raises CaseError (naming file:line,
    case and key) for values that are invalid once substituted."""
    if case.expanded:
        # Handed out once: a caller may change its instances' argument lists, so a second
        # expand() builds fresh ones.
        instances = list(case.expanded)
        case.expanded.clear()
        return instances
    problems = _Checker(case).static_problems()
    _raise_if_any(problems)
    instances, problems = _Expander(case).instances()
    _raise_if_any(problems)
    return instances


def select(instances: Iterable[CaseInstance], ops: Iterable[str] | str | None = None,
           keyword: str | None = None,
           tags: Iterable[str] | str | None = None) -> list[CaseInstance]:
    """Filter instances, keeping their order. Each given criterion must hold:
    `ops`: the instance's op equals one of them (`opbench compare OP`);
    `keyword`: a pytest -k expression over the instance's names (opbench/selection.py);
    `tags`: the case has at least one of them (`--tag`). None or empty means no filter.
    Raises selection.SelectionError for a -k expression that does not parse."""

    return Selection(keyword, as_tuple(ops), as_tuple(tags)).instances(instances)


# ---------------------------------------------------------------------------------------
# Files and YAML
# ---------------------------------------------------------------------------------------

def _case_files(paths: Iterable[str | Path], errors: list[CaseError]) -> list[Path]:
    files: list[Path] = []
    seen: set[Path] = set()
    if isinstance(paths, (str, Path)):
        paths = [paths]
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found = sorted(
                p for p in path.rglob("*")
                if p.suffix in CASE_FILE_SUFFIXES and p.is_file()
                and not any(part.startswith(".") for part in p.relative_to(path).parts))
            if not found:
                errors.append(CaseError(f"{path}: no case files (*.yaml, *.yml) in this "
                                        f"directory", file=str(path)))
                continue
        elif path.is_file():
            found = [path]
        else:
            errors.append(CaseError(f"{path}: no such case file or directory", file=str(path)))
            continue
        for p in found:
            # The same file reached twice (a directory and a file in it) is loaded once, or
            # its cases would collide with themselves.
            if p.resolve() not in seen:
                seen.add(p.resolve())
                files.append(p)
    return files


def _read_yaml(text: str, file: str) -> YamlDocument:
    try:
        return read_yaml(text)
    except YamlLimitError as exc:
        raise CaseError(f"{file}:{exc.line}: {exc}", file=file, line=exc.line) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        what = exc.problem or exc.context or "syntax error"
        if exc.problem and exc.context:
            # "while parsing a flow mapping": say where that construct started.
            started = (f" started at line {exc.context_mark.line + 1}"
                       if exc.context_mark and exc.context_mark.line + 1 != line else "")
            what += f" ({exc.context}{started})"
        raise CaseError(f"{file}:{line}: invalid YAML: {what}", file=file, line=line) from None
    except yaml.YAMLError as exc:
        raise CaseError(f"{file}: invalid YAML: {exc}", file=file) from None


# ---------------------------------------------------------------------------------------
# Messages
# ---------------------------------------------------------------------------------------

def _render_key(path: DocPath) -> str:
    """('inputs', 'x', 'shape', 1) -> 'inputs.x.shape[1]'"""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _case_error(file: str, line: int | None, case: str | None, key: str | None,
                text: str) -> CaseError:
    """case: the case name, or '#N' for a case without a usable name, or None."""
    where = f"{file}:{line}" if line else file
    if case is None:
        label = ""
    elif case.startswith("#"):
        label = f" case {case}"
    else:
        label = f" case '{case}'"
    return CaseError(f"{where}{label}: {text}", file=file, line=line, case=case, key=key)


def _raise_if_any(errors: Sequence[CaseError]) -> None:
    if not errors:
        return
    unique: dict[str, CaseError] = {}
    for err in errors:
        for single in err.errors:
            unique.setdefault(str(single), single)
    flat = list(unique.values())
    if len(flat) == 1:
        raise flat[0]
    first = flat[0]
    raise CaseError("\n".join(unique), file=first.file, line=first.line, case=first.case,
                    key=first.key, errors=flat)


def _suggestion(word: str, choices: Iterable[str], prefix: str = "") -> str:
    match = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean '{prefix}{match[0]}'?)" if match else ""


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Context:
    """Where in which file a case lives, to turn a path inside the case into a message."""

    def __init__(self, file: str, case: str | None, lines: Mapping[DocPath, int],
                 default_line: int):
        self.file, self.case, self.lines, self.default_line = file, case, lines, default_line

    @classmethod
    def of(cls, case: Case) -> _Context:
        return cls(case.file, case.name, case.lines, case.line)

    def line(self, path: DocPath) -> int:
        """The line of `path`, else of its nearest ancestor that has one."""
        for end in range(len(path), -1, -1):
            if path[:end] in self.lines:
                return self.lines[path[:end]]
        return self.default_line

    def error(self, path: DocPath, text: str, *, keyed: bool = True,
              line: int | None = None) -> CaseError:
        key = _render_key(path) if path else None
        body = f"key '{key}': {text}" if keyed and key else text
        return _case_error(self.file, line or self.line(path), self.case, key, body)


# ---------------------------------------------------------------------------------------
# Parsing and structural validation
# ---------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _validator():
    from jsonschema import Draft202012Validator
    return Draft202012Validator(_schema())


def _parse_cases(text: str, file: str) -> list[Case]:
    doc = _read_yaml(text, file)
    if doc.data is None:
        raise CaseError(f"{file}:1: empty case file; expected a mapping with a 'cases' list",
                        file=file, line=1)
    raw_cases = doc.data.get("cases") if isinstance(doc.data, dict) else None
    contexts = _case_contexts(file, doc, raw_cases)

    def context_for(path: DocPath) -> tuple[_Context, DocPath]:
        if len(path) >= 2 and path[0] == "cases" and path[1] in contexts:
            return contexts[path[1]], path[2:]
        return _Context(file, None, doc.lines, 1), path

    errors: list[CaseError] = []
    broken_cases: set[Any] = set()
    for path, line, text_ in doc.problems:
        ctx, rel = context_for(path)
        errors.append(ctx.error(rel, text_, keyed=False, line=line))
        broken_cases.add(path[1] if len(path) >= 2 else None)
    if any(message == _RECURSIVE_ALIAS for _, _, message in doc.problems):
        _raise_sorted(errors)
    for path, text_, keyed in _schema_problems(doc.data):
        ctx, rel = context_for(path)
        errors.append(ctx.error(rel, text_, keyed=keyed))
        broken_cases.add(path[1] if len(path) >= 2 and path[0] == "cases" else None)
    if None in broken_cases or not isinstance(raw_cases, list):
        _raise_sorted(errors)

    cases: list[Case] = []
    first_line: dict[str, int] = {}
    for index, raw in enumerate(raw_cases):
        if index in broken_cases:
            continue
        case = _make_case(raw, file, contexts[index])
        if case.name in first_line:
            errors.append(contexts[index].error(
                ("name",), f"duplicate case name (first defined at line "
                           f"{first_line[case.name]})", keyed=False))
            continue
        first_line[case.name] = case.line
        checker_problems = _Checker(case).static_problems()
        if not checker_problems:
            instances, checker_problems = _Expander(case).instances()
            if not checker_problems:
                case.expanded.extend(instances)
        errors.extend(checker_problems)
        cases.append(case)
    _raise_sorted(errors)
    return cases


def _raise_sorted(errors: list[CaseError]) -> None:
    """Raise the problems of one file in line order."""
    _raise_if_any(sorted(errors, key=lambda e: e.line or 0))


def _case_contexts(file: str, doc: YamlDocument, raw_cases: Any) -> dict[int, _Context]:
    if not isinstance(raw_cases, list):
        return {}
    per_case: dict[int, dict[DocPath, int]] = {i: {} for i in range(len(raw_cases))}
    for path, line in doc.lines.items():
        if len(path) >= 2 and path[0] == "cases" and path[1] in per_case:
            per_case[path[1]][path[2:]] = line
    contexts = {}
    for index, raw in enumerate(raw_cases):
        name = raw.get("name") if isinstance(raw, dict) else None
        label = name if isinstance(name, str) else f"#{index + 1}"
        lines = per_case[index]
        contexts[index] = _Context(file, label, lines, lines.get((), 1))
    return contexts


def _schema_problems(data: Any) -> Iterator[tuple[DocPath, str, bool]]:
    """(document path, message, keyed) for every schema violation, worded for people;
    `keyed`: the message needs "key '<path>': " in front (otherwise it names the key)."""
    for error in _validator().iter_errors(data):
        yield from _describe(error)


def _describe(error) -> Iterator[tuple[DocPath, str, bool]]:
    path = tuple(error.absolute_path)
    kind, value, instance = error.validator, error.validator_value, error.instance
    if kind == "additionalProperties" and isinstance(instance, dict):
        allowed = list(error.schema.get("properties", {}))
        for key in instance:
            if key not in allowed:
                yield path + (key,), f"unknown key '{key}'{_suggestion(key, allowed)}", False
    elif kind == "required":
        for key in value:
            if isinstance(instance, dict) and key not in instance:
                yield path, f"missing required key '{key}'", True
    elif kind == "pattern" and "propertyNames" in list(error.absolute_schema_path)[-3:]:
        # The offending "instance" is a mapping key; point at its line.
        hint = PATTERN_HINTS.get(value, f"does not match {value}")
        yield path + (instance,), f"{instance!r} {hint}", False
    elif kind == "anyOf":
        yield from _describe_any_of(error)
    else:
        yield path, _simple_message(error), True


def _describe_any_of(error) -> Iterator[tuple[DocPath, str, bool]]:
    # Our anyOf is always "a literal value, or a $param reference": explain the branch the
    # user evidently meant.
    instance = error.instance
    meant_ref = isinstance(instance, str) and instance.startswith("$")
    branch = [e for e in error.context
              if (e.validator == "pattern" and e.validator_value == REF_PATTERN) == meant_ref]
    for sub in branch or error.context:
        yield from _describe(sub)


def _simple_message(error) -> str:
    kind, value, instance = error.validator, error.validator_value, error.instance
    if kind == "enum":
        choices = ", ".join(str(v) for v in value)
        return f"{_short(instance)} is not one of {choices}{_suggestion(instance, value)}"
    if kind == "type":
        types = [value] if isinstance(value, str) else list(value)
        words = [("a '$param' reference" if t == "string" and
                  error.schema.get("pattern") == REF_PATTERN else _JSON_TYPE_WORDS.get(t, t))
                 for t in types]
        hint = ""
        if "array" in types and len(types) == 1 and tuple(error.absolute_path)[2:3] == (
                "params",):
            hint = " (a sweep parameter is a list of values: write [value] for one value)"
        return f"expected {' or '.join(words)}, got {_short(instance)}{hint}"
    if kind == "pattern":
        return f"{_short(instance)} {PATTERN_HINTS.get(value, f'does not match {value}')}"
    if kind == "minimum":
        return f"must be >= {value}, got {_short(instance)}"
    if kind == "maximum" and isinstance(instance, float) and math.isinf(instance):
        return f"must be a finite number, got {_short(instance)}"
    if kind == "maximum":
        return f"must be <= {value}, got {_short(instance)}"
    if kind == "exclusiveMinimum":
        return f"must be > {value}, got {_short(instance)}"
    if kind == "exclusiveMaximum":
        return f"must be < {value}, got {_short(instance)}"
    if kind == "minItems" and value == 1:
        return "must not be empty"
    if kind in ("minProperties", "minLength") and value == 1:
        return "must not be empty"
    if kind == "uniqueItems":
        return f"{_short(instance)} has repeated items"
    return error.message


# ---------------------------------------------------------------------------------------
# Meaning: checks a schema cannot express
# ---------------------------------------------------------------------------------------

def _make_case(raw: Mapping[str, Any], file: str, ctx: _Context) -> Case:
    tolerance = raw.get("tolerance") or {}
    return Case(
        name=raw["name"],
        op=raw.get("op", raw["name"]),
        file=file,
        line=ctx.default_line,
        tags=tuple(raw.get("tags", ())),
        description=raw.get("description", ""),
        params={k: tuple(v) for k, v in (raw.get("params") or {}).items()},
        raw=raw,
        threshold=raw.get("threshold"),
        min_effect=raw.get("min_effect"),
        work=raw.get("work"),
        rtol=tolerance.get("rtol"),
        atol=tolerance.get("atol"),
        backward=raw.get("backward", False),
        expect_mismatch=raw.get("expect_mismatch"),
        compare=raw.get("compare", "values"),
        lines=dict(ctx.lines),
    )


def _ref_name(value: Any) -> str | None:
    if isinstance(value, str):
        match = _REF_RE.match(value)
        if match:
            return match.group(1)
    return None


def _strings(value: Any, path: DocPath) -> Iterator[tuple[DocPath, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, path + (i,))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, path + (key,))


class _Checker:
    """Problems visible without expanding the sweep."""

    def __init__(self, case: Case):
        self.case, self.raw, self.ctx = case, case.raw, _Context.of(case)
        self.inputs = dict(self.raw.get("inputs") or {})

    def static_problems(self) -> list[CaseError]:
        return [*self._finite(), *self._frameworks(), *self._names(), *self._refs()]

    def _finite(self) -> Iterator[CaseError]:
        # NaN passes every comparison a JSON Schema can make (`nan < 0` is false), and an
        # infinite atol turned a real mismatch into PASS.
        for path in _FINITE_KEYS:
            value: Any = self.raw
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            if isinstance(value, float) and not math.isfinite(value):
                yield self.ctx.error(path, f"must be a finite number, got {value!r}")

    def _frameworks(self) -> Iterator[CaseError]:
        present = [f for f in FRAMEWORK_SECTIONS if f in self.raw]
        if len(present) < MIN_FRAMEWORKS:
            found = ", ".join(present) or "none"
            yield self.ctx.error((), f"needs at least {MIN_FRAMEWORKS} framework sections to "
                                     f"compare (found: {found}; possible: "
                                     f"{', '.join(FRAMEWORK_SECTIONS)})")
        for framework in present:
            api = (self.raw[framework] or {}).get("api", "")
            prefix = API_PREFIXES[framework]
            if not (api.startswith(prefix) or api.startswith(TENSOR_PREFIX)):
                yield self.ctx.error((framework, "api"),
                                     f"'{api}' must start with '{prefix}' or '{TENSOR_PREFIX}'")
                continue
            refusal = _unsafe_api(api)
            if refusal:
                yield self.ctx.error((framework, "api"), refusal)

    def _names(self) -> Iterator[CaseError]:
        for name in self.inputs:
            if name in self.case.params:
                yield self.ctx.error(("inputs", name), f"'{name}' is both a param and an "
                                     f"input, so '${name}' would be ambiguous")

    def _refs(self) -> Iterator[CaseError]:
        params = list(self.case.params)
        for name, spec in self.inputs.items():
            for path, text in _strings(spec, ("inputs", name)):
                ref = _ref_name(text)
                if ref is None or ref in params:
                    continue
                if ref in self.inputs:
                    yield self.ctx.error(path, f"'{text}' is an input; input specs can only "
                                               f"use params")
                else:
                    yield self.ctx.error(path, f"unknown reference '{text}': no param named "
                                               f"'{ref}'{_suggestion(ref, params, '$')}")
        known = params + list(self.inputs)
        for framework in FRAMEWORK_SECTIONS:
            section = self.raw.get(framework) or {}
            for part in ("args", "kwargs"):
                for path, text in _strings(section.get(part), (framework, part)):
                    ref = _ref_name(text)
                    if ref is not None and ref not in known:
                        yield self.ctx.error(path, f"unknown reference '{text}': no param or "
                                             f"input named '{ref}'"
                                             f"{_suggestion(ref, known, '$')}")


def _unsafe_api(api: str) -> str | None:
    """What the text of an API path alone shows to be out of bounds (special attributes,
    file and process APIs): refused at load time, before any framework is imported. Where
    the walk actually leads is checked when the framework resolves it
    (frameworks/resolve.py, with the same guard: api_guard.py)."""
    try:
        if api.startswith(TENSOR_PREFIX):
            check_tensor_method(api, api[len(TENSOR_PREFIX):])
        else:
            check_path_text(api, api.split("."))
    except UnknownAPI as exc:
        return str(exc)
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def _value_labels(values: Sequence[Any]) -> list[str]:
    """Id labels for one param's values: unique, deterministic, filename-safe-ish."""
    labels: list[str] = []
    for position, value in enumerate(values, start=1):
        label = _label(value)
        if label in labels:
            label = f"{label}{_DISAMBIGUATOR}{position}"
        labels.append(label)
    return labels


def _label(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list):
        if not value:
            return _EMPTY_LABEL
        return "x".join(f"[{_label(v)}]" if isinstance(v, list) else _label(v)
                        for v in value)
    if isinstance(value, dict):
        return "{" + "_".join(f"{_label(k)}={_label(v)}" for k, v in value.items()) + "}"
    text = _UNSAFE_ID_CHARS.sub("_", str(value))
    return text or _EMPTY_LABEL


def _instance_id(case_name: str, labels: Mapping[str, str]) -> str:
    """`name[k1=v1,k2=v2]`, or `name` without params."""
    if not labels:
        return case_name
    return f"{case_name}[{','.join(f'{k}={v}' for k, v in labels.items())}]"


class _Expander:
    """Builds the instances and reports values that are invalid once substituted."""

    def __init__(self, case: Case):
        self.case, self.raw, self.ctx = case, case.raw, _Context.of(case)
        self.input_names = tuple((self.raw.get("inputs") or {}).keys())
        self.labels = {name: _value_labels(values) for name, values in case.params.items()}

    def instances(self) -> tuple[list[CaseInstance], list[CaseError]]:
        names = list(self.case.params)
        axes = [range(len(self.case.params[n])) for n in names]
        try:
            limit, budget = limits.max_instances(), limits.input_budget_bytes()
        except limits.LimitError as exc:
            return [], [self.ctx.error((), str(exc))]
        count = math.prod(len(axis) for axis in axes)
        if count > limit:
            sizes = " x ".join(str(len(axis)) for axis in axes)
            return [], [self.ctx.error(("params",), (
                f"the sweep makes {count:,} instances ({sizes}), more than the limit of "
                f"{limit:,}; raise it with --max-instances or {limits.MAX_INSTANCES_ENV} if "
                f"the case really needs them"))]
        instances, problems = [], []
        for combo in itertools.product(*axes):
            chosen = dict(zip(names, combo))
            values = {n: self.case.params[n][i] for n, i in chosen.items()}
            errors: list[CaseError] = []
            inputs = tuple(self._input(name, spec, values, chosen, errors)
                           for name, spec in (self.raw.get("inputs") or {}).items())
            calls = {f: self._call(f, values) for f in FRAMEWORK_SECTIONS if f in self.raw}
            if not errors:
                self._check_budget(inputs, budget, chosen, errors)
            if errors:
                problems.extend(errors)
                continue
            ident = _instance_id(self.case.name, {n: self.labels[n][i] for n, i in chosen.items()})
            instances.append(CaseInstance(id=ident, case=self.case, params=copy.deepcopy(values),
                                          inputs=inputs, calls=calls))
        return instances, problems

    def _check_budget(self, inputs: Sequence[InputSpec], budget: int,
                      chosen: Mapping[str, int], errors: list[CaseError]) -> None:
        """Refuse an instance whose inputs would not fit the memory budget, before anything
        is allocated."""
        sizes = {spec.name: math.prod(spec.shape) * _ITEMSIZE[spec.dtype] for spec in inputs}
        total = sum(sizes.values())
        if total <= budget:
            return
        biggest = max(sizes, key=sizes.get)
        listed = ", ".join(f"{name} {limits.format_size(size)}" for name, size in sizes.items())
        where = {n: self.labels[n][i] for n, i in chosen.items()}
        ident = _instance_id(self.case.name, where)
        errors.append(self.ctx.error(("inputs", biggest), (
            f"instance {ident}: its inputs need {limits.format_size(total)} ({listed}), more "
            f"than the input budget of {limits.format_size(budget)}; raise it with "
            f"--input-budget or {limits.INPUT_BUDGET_ENV} if the machine has the memory")))

    # -- substitution --------------------------------------------------------------------
    def _substitute(self, value: Any, values: Mapping[str, Any], inputs: bool) -> Any:
        if isinstance(value, str):
            if value.startswith(_ESCAPE):
                return value[1:]
            ref = _ref_name(value)
            if ref is not None and ref in values:
                # Param values are used literally (a value "$x" stays the string "$x"), and
                # copied so no two instances share a mutable list.
                return copy.deepcopy(values[ref])
            if ref is not None and inputs and ref in self.input_names:
                return Ref(ref)
            return value
        if isinstance(value, list):
            return [self._substitute(v, values, inputs) for v in value]
        if isinstance(value, dict):
            return {k: self._substitute(v, values, inputs) for k, v in value.items()}
        return value

    def _call(self, framework: str, values: Mapping[str, Any]) -> FrameworkCall:
        section = self.raw[framework]
        output = section.get("output")
        return FrameworkCall(
            framework=framework,
            api=section["api"],
            args=tuple(self._substitute(list(section.get("args") or []), values, True)),
            kwargs=self._substitute(dict(section.get("kwargs") or {}), values, True),
            output=tuple(output) if isinstance(output, list) else output,
            location=Location(self.case.file, self.ctx.line((framework, "api"))),
        )

    # -- inputs --------------------------------------------------------------------------
    def _input(self, name: str, spec: Mapping[str, Any], values: Mapping[str, Any],
               chosen: Mapping[str, int], errors: list[CaseError]) -> InputSpec | None:
        base = ("inputs", name)

        def get(key: str, default: Any = None) -> Any:
            return self._substitute(spec[key], values, False) if key in spec else default

        def fail(key: str | None, text: str) -> None:
            path = base + ((key,) if key else ())
            raw_value = spec.get(key) if key else None
            ref = _ref_name(raw_value)
            if ref is not None and ref in chosen:
                # The fix belongs to the param value, so point at its line.
                line = self.ctx.line(("params", ref, chosen[ref]))
                errors.append(self.ctx.error(path, f"{text} (from ${ref})", line=line))
            else:
                errors.append(self.ctx.error(path, text))

        shape = get("shape")
        if not (isinstance(shape, list) and all(_is_int(d) and d >= 0 for d in shape)):
            fail("shape", f"{_short(shape)} is not a list of non-negative ints")
            shape = []
        dtype = get("dtype", DEFAULT_DTYPE)
        if dtype not in DTYPES:
            fail("dtype", f"{_short(dtype)} is not one of {', '.join(DTYPES)}"
                          f"{_suggestion(str(dtype), DTYPES)}")
            return None
        dist = get("dist", DEFAULT_DIST_FOR[dtype])
        if dist not in DISTRIBUTIONS:
            fail("dist", f"{_short(dist)} is not one of {', '.join(DISTRIBUTIONS)}"
                         f"{_suggestion(str(dist), DISTRIBUTIONS)}")
            return None
        options = dict(DISTRIBUTIONS[dist])
        for key in DIST_OPTIONS:
            if key not in spec:
                continue
            if key not in options:
                takes = ", ".join(DISTRIBUTIONS[dist]) or "no options"
                fail(key, f"does not apply to dist '{dist}' (it takes {takes})")
                continue
            value = get(key)
            if not _is_number(value):
                fail(key, f"expected a finite number, got {_short(value)}")
                continue
            options[key] = value
        self._check_dist(dist, dtype, shape, options, spec, fail)
        requires_grad = spec.get("requires_grad")
        if requires_grad and dtype not in FLOAT_DTYPES:
            fail("requires_grad", f"gradients need a floating dtype, not {dtype}")
        return InputSpec(name=name, shape=tuple(shape), dtype=dtype, dist=dist,
                         options=options, requires_grad=requires_grad)

    @staticmethod
    def _check_dist(dist: str, dtype: str, shape: list, options: dict[str, Any],
                    spec: Mapping[str, Any], fail) -> None:
        where = "dist" if "dist" in spec else ("dtype" if "dtype" in spec else None)
        if dtype == "bool" and dist != "mask":
            fail(where, f"dtype bool needs dist mask, not '{dist}'")
        elif dist in FLOAT_ONLY_DISTS and dtype not in FLOAT_DTYPES:
            fail(where, f"dist '{dist}' draws fractional values; dtype {dtype} needs "
                        f"randint, arange, permutation or mask")
        if dist == "normal" and options["std"] < 0:
            fail("std", "must be >= 0")
        if dist in ("uniform", "positive", "randint") and not options["low"] < options["high"]:
            fail("high", f"must be greater than low ({options['low']})")
        if dist == "positive" and options["low"] <= 0:
            fail("low", "must be > 0 for dist positive")
        if dist == "randint":
            for key in ("low", "high"):
                if not _is_int(options[key]):
                    fail(key, f"randint bounds must be integers, got {options[key]!r}")
            if dtype in INT_RANGES:
                lowest, highest = INT_RANGES[dtype]
                if options["low"] < lowest or options["high"] - 1 > highest:
                    fail("high" if options["high"] - 1 > highest else "low",
                         f"randint range [{options['low']}, {options['high']}) does not fit "
                         f"{dtype}")
        if dist == "mask" and not 0 <= options["p"] <= 1:
            fail("p", "must be between 0 and 1")
        if dist == "permutation" and not shape:
            fail("shape", "dist permutation needs at least one dimension")


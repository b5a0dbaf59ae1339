"""Reading a case file and checking it: the files a path names, the YAML (with the line of
every key), the structure (the case JSON Schema, opbench/schema/case.schema.json, the
single source of truth that editors use too, its errors reworded to name the key), and the
meaning a schema cannot express: unique names, at least two frameworks, `$refs` that
resolve, API paths of the right framework and inside it (api_guard.py). Every problem of a
file is reported with the file:line of the offending key (case_errors.py).

Loading is three passes over one file:
  1. YAML: one pass over libyaml's events (yaml_source.py) builds the data with safe
     semantics and the line of every key, and reports duplicate keys, which PyYAML would
     otherwise accept silently, and what a hostile file could do (alias bombs, deep nesting);
  2. structure: the JSON Schema;
  3. meaning: static_problems here, then every sweep instance's inputs once substituted
     (case_expansion.py: a `$param` can make a shape or dtype invalid only then).
"""
from __future__ import annotations

import copy

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import yaml

from opbench.cases.api_guard import UnknownAPI, check_path_text, check_tensor_method
from opbench.cases.case_errors import CaseContext, CaseError, raise_sorted, short, suggestion
from opbench.cases.case_model import (
                                      CASE_FILE_SUFFIXES,
                                      REF_PATTERN,
                                      SCHEMA_PATH,
                                      Case,
                                      CaseSpec,
                                      DocPath,
                                      ref_name,
                                      )
from opbench.cases.yaml_source import RECURSIVE_ALIAS, YamlDocument, YamlLimitError, read_yaml
from opbench.config.vocabulary import ADAPTER_FRAMEWORKS

__all__ = ["API_PREFIXES", "MIN_FRAMEWORKS", "PATTERN_HINTS", "TENSOR_PREFIX", "ParsedFile",
           "case_file_paths", "parse_case_data", "parse_case_file", "schema", "static_problems"]

# An API path must belong to its section; "Tensor." is each framework's tensor type.
API_PREFIXES = {framework: f"{framework}." for framework in ADAPTER_FRAMEWORKS}
TENSOR_PREFIX = "Tensor."
# Numbers that set how a case is judged: they must be finite.
_FINITE_KEYS = (("threshold",), ("min_effect",), ("work", "per_output_element"),
                ("tolerance", "rtol"), ("tolerance", "atol"))
# A comparison needs a baseline and a candidate.
MIN_FRAMEWORKS = 2
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


@dataclass(frozen=True)
class ParsedFile:
    """One file's cases as far as reading and checking go: `cases`, every case that could
    be made (file order); `problems`, what is wrong with them; `checked`, those with no
    problem yet, whose sweeps expansion builds and checks next."""

    cases: list[Case]
    problems: list[CaseError]
    checked: list[Case]


def case_file_paths(paths: Iterable[str | Path], errors: list[CaseError]) -> list[Path]:
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


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """The case-file JSON Schema, read once (callers that may change it take a copy)."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _validator():
    from jsonschema import Draft202012Validator
    return Draft202012Validator(schema())


def parse_case_file(text: str, file: str) -> ParsedFile:
    """The cases of one file's text, checked in three passes (YAML, schema, meaning; see
    the module's docstring). Raises CaseError at once when the YAML or the structure around
    the cases is broken; otherwise returns every case it could make with the problems found
    so far, for expansion to add its own."""
    return _parse_document(_read_yaml(text, file), file)


def parse_case_data(data: Any, source: str) -> ParsedFile:
    """Cases built in memory (a mapping with a 'cases' list, as a case file holds), checked
    by the same schema and meaning passes as a file's; problems name `source` (no lines).
    For callers that make cases themselves (`opbench model`'s calls measured alone): no YAML
    written and read back."""
    return _parse_document(YamlDocument(copy.deepcopy(data), {}, []), source)


def _parse_document(doc: YamlDocument, file: str) -> ParsedFile:
    if doc.data is None:
        raise CaseError(f"{file}:1: empty case file; expected a mapping with a 'cases' list",
                        file=file, line=1)
    raw_cases = doc.data.get("cases") if isinstance(doc.data, dict) else None
    contexts = _case_contexts(file, doc, raw_cases)

    def context_for(path: DocPath) -> tuple[CaseContext, DocPath]:
        if len(path) >= 2 and path[0] == "cases" and path[1] in contexts:
            return contexts[path[1]], path[2:]
        return CaseContext(file, None, doc.lines, 1), path

    errors: list[CaseError] = []
    broken_cases: set[Any] = set()
    for path, line, text_ in doc.problems:
        ctx, rel = context_for(path)
        errors.append(ctx.error(rel, text_, keyed=False, line=line))
        broken_cases.add(path[1] if len(path) >= 2 else None)
    if any(message == _RECURSIVE_ALIAS for _, _, message in doc.problems):
        raise_sorted(errors)
    for path, text_, keyed in _schema_problems(doc.data):
        ctx, rel = context_for(path)
        errors.append(ctx.error(rel, text_, keyed=keyed))
        broken_cases.add(path[1] if len(path) >= 2 and path[0] == "cases" else None)
    if None in broken_cases or not isinstance(raw_cases, list):
        raise_sorted(errors)

    cases: list[Case] = []
    checked: list[Case] = []
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
        problems = static_problems(case)
        if not problems:
            checked.append(case)
        errors.extend(problems)
        cases.append(case)
    return ParsedFile(cases, errors, checked)


def _case_contexts(file: str, doc: YamlDocument, raw_cases: Any) -> dict[int, CaseContext]:
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
        contexts[index] = CaseContext(file, label, lines, lines.get((), 1))
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
                yield path + (key,), f"unknown key '{key}'{suggestion(key, allowed)}", False
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
        return f"{short(instance)} is not one of {choices}{suggestion(instance, value)}"
    if kind == "type":
        types = [value] if isinstance(value, str) else list(value)
        words = [("a '$param' reference" if t == "string" and
                  error.schema.get("pattern") == REF_PATTERN else _JSON_TYPE_WORDS.get(t, t))
                 for t in types]
        hint = ""
        if "array" in types and len(types) == 1 and tuple(error.absolute_path)[2:3] == (
                "params",):
            hint = " (a sweep parameter is a list of values: write [value] for one value)"
        return f"expected {' or '.join(words)}, got {short(instance)}{hint}"
    if kind == "pattern":
        return f"{short(instance)} {PATTERN_HINTS.get(value, f'does not match {value}')}"
    if kind == "minimum":
        return f"must be >= {value}, got {short(instance)}"
    if kind == "maximum" and isinstance(instance, float) and math.isinf(instance):
        return f"must be a finite number, got {short(instance)}"
    if kind == "maximum":
        return f"must be <= {value}, got {short(instance)}"
    if kind == "exclusiveMinimum":
        return f"must be > {value}, got {short(instance)}"
    if kind == "exclusiveMaximum":
        return f"must be < {value}, got {short(instance)}"
    if kind == "minItems" and value == 1:
        return "must not be empty"
    if kind in ("minProperties", "minLength") and value == 1:
        return "must not be empty"
    if kind == "uniqueItems":
        return f"{short(instance)} has repeated items"
    return error.message


def _make_case(raw: Mapping[str, Any], file: str, ctx: CaseContext) -> Case:
    spec = CaseSpec.of(raw)
    return Case(
        name=spec.name,
        op=spec.name if spec.op is None else spec.op,
        file=file,
        line=ctx.default_line,
        tags=spec.tags,
        description=spec.description,
        params={k: tuple(v) for k, v in spec.params.items()},
        raw=raw,
        threshold=spec.threshold,
        min_effect=spec.min_effect,
        work=spec.work,
        rtol=spec.tolerance.rtol,
        atol=spec.tolerance.atol,
        backward=spec.backward,
        expect_mismatch=spec.expect_mismatch,
        compare=spec.compare,
        lines=dict(ctx.lines),
    )


def _strings(value: Any, path: DocPath) -> Iterator[tuple[DocPath, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, path + (i,))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, path + (key,))


def static_problems(case: Case) -> list[CaseError]:
    """What is wrong with a case that shows without expanding its sweep: numbers that must
    be finite, framework sections and their API paths, names, references."""
    return _Checker(case).static_problems()


class _Checker:
    """Problems visible without expanding the sweep."""

    def __init__(self, case: Case):
        self.case, self.raw, self.ctx = case, case.raw, CaseContext.of(case)
        self.spec = case.spec
        self.inputs = dict(self.spec.inputs)

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
        sections = self.spec.sections
        present = list(sections)
        if len(present) < MIN_FRAMEWORKS:
            found = ", ".join(present) or "none"
            yield self.ctx.error((), f"needs at least {MIN_FRAMEWORKS} framework sections to "
                                     f"compare (found: {found}; possible: "
                                     f"{', '.join(ADAPTER_FRAMEWORKS)})")
        for framework in present:
            api = sections[framework].api
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
                ref = ref_name(text)
                if ref is None or ref in params:
                    continue
                if ref in self.inputs:
                    yield self.ctx.error(path, f"'{text}' is an input; input specs can only "
                                               f"use params")
                else:
                    yield self.ctx.error(path, f"unknown reference '{text}': no param named "
                                               f"'{ref}'{suggestion(ref, params, '$')}")
        known = params + list(self.inputs)
        for framework, section in self.spec.sections.items():
            for part, value in (("args", section.args), ("kwargs", section.kwargs)):
                for path, text in _strings(value, (framework, part)):
                    ref = ref_name(text)
                    if ref is not None and ref not in known:
                        yield self.ctx.error(path, f"unknown reference '{text}': no param or "
                                             f"input named '{ref}'"
                                             f"{suggestion(ref, known, '$')}")


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


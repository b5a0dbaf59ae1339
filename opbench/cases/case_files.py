"""Case files: the public surface of the case format. Load (read, validate, expand every
sweep once to check it), expand, select; and every name the rest of opbench imports from
the format, gathered from the modules that do one job each:

  case_model.py       the records (Case, CaseInstance, InputSpec, FrameworkCall, Ref; a
                      case's mapping read as typed fields: CaseSpec, DistOptions) and
                      the `$name` reference syntax
  case_validation.py  files, YAML with the line of every key, the JSON Schema, and the
                      checks a schema cannot express
  case_expansion.py   sweeps into instances, their ids, and each instance's inputs checked
                      once substituted (dtypes, distributions, budgets)
  case_errors.py      CaseError and the wording every check shares (file:line, case, key)

See docs/case-format.md for the file format.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Iterable, Mapping

from opbench.cases.case_errors import CaseError, case_error, raise_if_any, raise_sorted
from opbench.cases.case_expansion import DISTRIBUTIONS, DTYPES, instances_of
from opbench.cases.case_model import (
                                      CASE_FILE_SUFFIXES,
                                      SCHEMA_PATH,
                                      Case,
                                      CaseInstance,
                                      CaseSpec,
                                      DistOptions,
                                      FrameworkCall,
                                      InputSpec,
                                      Location,
                                      Ref,
                                      )
from opbench.cases.case_validation import (
                                           API_PREFIXES,
                                           PATTERN_HINTS,
                                           ParsedFile,
                                           case_file_paths,
                                           parse_case_data,
                                           parse_case_file,
                                           schema,
                                           static_problems,
                                           )
from opbench.cases.selection import Selection, as_tuple
from opbench.config.vocabulary import ADAPTER_FRAMEWORKS, CASE_INT_DTYPES, FLOAT_DTYPES

__all__ = [
    "CaseError", "Location", "InputSpec", "FrameworkCall", "Ref", "Case", "CaseInstance",
    "CaseSpec", "DistOptions",
    "load_case_file", "load_case_data", "load_cases", "expand", "select", "load_schema",
    "FRAMEWORK_SECTIONS", "DTYPES", "FLOAT_DTYPES", "CASE_INT_DTYPES", "DISTRIBUTIONS",
    "SCHEMA_PATH", "API_PREFIXES", "PATTERN_HINTS", "CASE_FILE_SUFFIXES",
]

# The framework sections a case may have (config/vocabulary.py's ADAPTER_FRAMEWORKS), by the
# name a new framework's checklist in ARCHITECTURE.md gives them.
FRAMEWORK_SECTIONS = ADAPTER_FRAMEWORKS


def load_schema() -> dict[str, Any]:
    """The case-file JSON Schema (what `opbench schema` prints)."""
    return copy.deepcopy(schema())


def load_case_file(path: str | Path) -> list[Case]:
    """Read, validate and return the cases of one YAML file; raise CaseError listing every
    problem of the file (one per line, each naming file:line, case and key)."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseError(f"{file}: cannot read case file: {exc}", file=file) from None
    return _expanded(parse_case_file(text, file))


def load_case_data(data: Mapping[str, Any], source: str) -> list[Case]:
    """Validate and return cases built in memory (a mapping with a 'cases' list, as a case
    file holds), expanded as a file's are; CaseError names `source`, the case and the key.
    What `opbench model` measures alone goes through here, not through a YAML file."""
    return _expanded(parse_case_data(data, source))


def _expanded(parsed: ParsedFile) -> list[Case]:
    problems = list(parsed.problems)
    for case in parsed.checked:
        instances, found = instances_of(case)
        if found:
            problems.extend(found)
        else:
            # kept for the first expand(): a 50,000-instance file was expanded twice
            case.expanded.extend(instances)
    raise_sorted(problems)
    return parsed.cases


def load_cases(paths: Iterable[str | Path]) -> list[Case]:
    """Load case files and directories (searched recursively for *.yaml / *.yml, in sorted
    order, skipping hidden directories). Case names must be unique across all of them.
    Raises one CaseError listing the problems of every file."""
    errors: list[CaseError] = []
    cases: list[Case] = []
    for file in case_file_paths(paths, errors):
        try:
            cases.extend(load_case_file(file))
        except CaseError as exc:
            errors.extend(exc.errors)
    first_by_name: dict[str, Case] = {}
    for case in cases:
        first = first_by_name.setdefault(case.name, case)
        if first is not case:
            errors.append(case_error(
                case.file, case.line, case.name, None,
                f"duplicate case name (first defined at {first.file}:{first.line})"))
    raise_if_any(errors)
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
    raise_if_any(static_problems(case))
    instances, problems = instances_of(case)
    raise_if_any(problems)
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

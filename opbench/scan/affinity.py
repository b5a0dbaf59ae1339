"""`opbench scan --affinity`: calls and data-flow patterns that have a cheaper equivalent in
the same framework, found statically (the catalogue: opbench/data/affinity_families.yaml;
the matchers: scan/affinity_match.py).

    from opbench.scan.affinity import find_affinity
    hits = find_affinity(["path/to/repo"]).hits

Every hit is a candidate, "not measured": whether the swap is faster here, and by how much in
a given model, is what `opbench model --suggest` measures.
"""
from __future__ import annotations

import importlib.resources
import os
import string
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

import yaml

from opbench.scan.affinity_match import Match, match_source
from opbench.scan.rows import FileError
from opbench.scan.scanner import discover_files, mentions_framework
from opbench.scan.source import decode_source

FAMILIES_RESOURCE = "data/affinity_families.yaml"
FAMILY_KEYS = ("id", "framework", "kind", "api_type", "pattern", "affinity_api", "template",
               "why", "source")
OPTIONAL_FAMILY_KEYS = ("route_from",)
NOT_MEASURED = "not measured"

# The Ascend affinity CSV's columns first (affinity_api_call.csv), then opbench's own.
CSV_COLUMNS = ("File", "Start Line", "End Line", "Api Type", "Api Call Name",
               "Affinity Api Name", "Family", "Replacement", "Measured")


@dataclass(frozen=True)
class AffinityFamily:
    id: str                 # "<framework>.<kind>", e.g. torch.silu_formula
    framework: str          # torch | mindspore
    kind: str               # the matcher in affinity_match.py
    api_type: str           # function | method | pattern
    pattern: str            # what is written now
    affinity_api: str       # the replacement API
    template: str           # the replacement as code; "" when the swap is not mechanical
    why: str
    source: str             # where the family comes from (the Ascend lists, or by hand)
    route_from: str = ""    # a route family: the API whose every call is marked


@dataclass(frozen=True)
class AffinityHit:
    file: str
    start_line: int         # the statement span (from the first assignment the match followed)
    end_line: int
    api_type: str
    api: str                # what is written now, one line
    affinity_api: str
    family: str
    replacement: str        # code to write instead, "" when not mechanical
    framework: str
    measured: bool = False  # always False here: static candidates, not measurements


@dataclass(frozen=True)
class AffinityResult:
    hits: tuple[AffinityHit, ...]
    errors: tuple[FileError, ...]
    files_scanned: int


class CatalogueError(ValueError):
    """The families file is malformed (names the entry and the key)."""


def parse_families(entries: object, origin: str) -> tuple[AffinityFamily, ...]:
    if not isinstance(entries, list):
        raise CatalogueError(f"{origin}: expected a list of families")
    families = []
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        where = f"{origin}: entry {index + 1}"
        if not isinstance(entry, dict):
            raise CatalogueError(f"{where}: expected a mapping")
        missing = [k for k in FAMILY_KEYS if k not in entry]
        unknown = sorted(set(entry) - set(FAMILY_KEYS) - set(OPTIONAL_FAMILY_KEYS))
        if missing or unknown:
            raise CatalogueError(f"{where} ({entry.get('id', '?')}): missing keys {missing}, "
                                 f"unknown keys {unknown}")
        family = AffinityFamily(**{k: str(entry[k] or "") for k in FAMILY_KEYS
                                   + OPTIONAL_FAMILY_KEYS if k in entry})
        if family.id != f"{family.framework}.{family.kind}" or family.id in seen:
            raise CatalogueError(f"{where}: id {family.id!r} must be unique and equal "
                                 "'<framework>.<kind>'")
        seen.add(family.id)
        families.append(family)
    return tuple(families)


@lru_cache(maxsize=1)
def load_families() -> tuple[AffinityFamily, ...]:
    """The shipped catalogue."""
    resource = importlib.resources.files("opbench").joinpath(FAMILIES_RESOURCE)
    return parse_families(yaml.safe_load(resource.read_text(encoding="utf-8")),
                          FAMILIES_RESOURCE)


def _families_by_key() -> dict[tuple[str, str], AffinityFamily]:
    return {(f.framework, f.kind): f for f in load_families()}


def _replacement(template: str, fields: tuple[tuple[str, str], ...]) -> str:
    """The template filled from the source, or "" when a field it needs was not taken."""
    if not template or not fields:
        return ""
    values = dict(fields)
    needed = {name for _, name, _, _ in string.Formatter().parse(template) if name}
    if not needed <= values.keys():
        return ""
    return template.format(**values)


def hit_of(match: Match, file: str) -> AffinityHit | None:
    family = _families_by_key().get((match.framework, match.kind))
    if family is None:
        return None
    return AffinityHit(file=file, start_line=match.start_line, end_line=match.end_line,
                       api_type=match.api_type, api=match.written,
                       affinity_api=family.affinity_api, family=family.id,
                       replacement=_replacement(family.template, match.fields),
                       framework=match.framework)


def find_affinity_in_source(text: str, file: str = "<string>") -> tuple[AffinityHit, ...]:
    """The hits of one module's source text. Raises SyntaxError."""
    routes = {f.route_from: f.kind for f in load_families() if f.route_from}
    return tuple(hit for m in match_source(text, file, routes) if (hit := hit_of(m, file)))


def find_affinity(paths: Iterable[str | os.PathLike]) -> AffinityResult:
    """Every affinity hit in the Python files under `paths` (nothing imported or run)."""
    files = discover_files(paths)
    hits: list[AffinityHit] = []
    errors: list[FileError] = []
    for file in files:
        try:
            with open(file, "rb") as handle:
                data = handle.read()
            if mentions_framework(data):
                hits.extend(find_affinity_in_source(decode_source(data), file))
        except SyntaxError as exc:
            errors.append(FileError(file, exc.lineno, f"{type(exc).__name__}: {exc.msg}"))
        except (OSError, UnicodeDecodeError, LookupError, ValueError) as exc:
            errors.append(FileError(file, None, f"{type(exc).__name__}: {exc}"))
        except RecursionError:
            errors.append(FileError(file, None, "RecursionError: too deeply nested to analyse"))
    return AffinityResult(hits=tuple(hits), errors=tuple(errors), files_scanned=len(files))


def csv_values(hit: AffinityHit) -> tuple[str, ...]:
    return (hit.file, str(hit.start_line), str(hit.end_line), hit.api_type, hit.api,
            hit.affinity_api, hit.family, hit.replacement, NOT_MEASURED)


def json_row(hit: AffinityHit) -> dict:
    return {"file": hit.file, "start_line": hit.start_line, "end_line": hit.end_line,
            "api_type": hit.api_type, "api": hit.api, "affinity_api": hit.affinity_api,
            "family": hit.family, "replacement": hit.replacement,
            "framework": hit.framework, "measured": False}

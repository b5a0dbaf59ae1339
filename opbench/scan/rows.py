"""The row model of `opbench scan`: one row per framework call found in the source.

A row starts life in the visitor with only the *where* and *what* (file, lines, the call as
written, the resolved API) and is completed by `annotate` with the mapping, coverage and
measured-ratio columns. Rows are immutable; annotation makes new ones with `replace`.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

# API types. `special` is an operator or indexing form on a tensor (`x[mask] = v`, `a @ b`),
# reported under the dunder method it dispatches to (`torch.Tensor.__setitem__`).
FUNCTION, CLASS, METHOD, SPECIAL = "function", "class", "method", "special"
API_TYPES = (FUNCTION, CLASS, METHOD, SPECIAL)

# Mapping statuses: the three of opbench.frameworks.apimap plus `unknown` (the API is not in the mapping
# table at all, which is a different fact from "the table says there is no equivalent").
MAPPING_UNKNOWN = "unknown"
MAPPED_STATUSES = ("same", "differs")

SLOW_VERDICT = "SLOW"


@dataclass(frozen=True)
class ScanRow:
    file: str
    line: int                 # 1-based first line of the call
    end_line: int             # last line (multi-line calls)
    col: int                  # 1-based column of the call's first character
    api_type: str             # one of API_TYPES
    call: str                 # the call as written (whitespace collapsed, truncated)
    api: str                  # resolved full dotted name, e.g. torch.nn.functional.relu
    framework: str            # "torch" | "mindspore"
    guess: bool = False       # True when the API rests on a heuristic (see guess_reason)
    guess_reason: str = ""
    # --- filled by annotate() ---
    mapped_api: str = ""      # the equivalent API in the other framework
    mapping_status: str = ""  # same | differs | none | unknown
    mapping_note: str = ""
    covered: bool | None = None   # None: no case library was loaded
    # --- filled by annotate() when results are given ---
    ratio: float | None = None    # worst (lowest) measured ratio over the joined instances
    ci_low: float | None = None
    ci_high: float | None = None
    verdict: str = ""
    mode: str = ""                # measurement mode of the worst ratio (serial / async)
    instances: int = 0            # how many measured instances were joined to this API
    worst_instance: str = ""      # id of the instance that gave the worst ratio

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"


# The CSV/JSON column set, in order. This is a public, documented interface (docs/scan.md):
# add columns only at the end, never rename or reorder.
COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(ScanRow))


@dataclass(frozen=True)
class FileError:
    """A file that could not be read or parsed; the scan went on without it."""
    file: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class ScanResult:
    rows: tuple[ScanRow, ...]
    errors: tuple[FileError, ...]
    files_scanned: int
    elapsed_s: float = 0.0


@dataclass(frozen=True)
class Summary:
    files: int
    files_failed: int
    calls: int
    guessed_calls: int
    distinct_apis: int
    mapped_apis: int
    unmapped_apis: int
    covered_apis: int | None      # None when no case library was loaded
    slow_apis: int | None         # None when no results were joined
    slow_calls: int | None
    elapsed_s: float = 0.0


def summarize(result: ScanResult, rows: tuple[ScanRow, ...] | None = None,
              *, with_cases: bool = False, with_results: bool = False) -> Summary:
    """Counts over `rows` (defaults to result.rows; pass filtered/annotated rows)."""
    rows = result.rows if rows is None else rows
    apis = {r.api for r in rows}
    mapped = {r.api for r in rows if r.mapping_status in MAPPED_STATUSES}
    slow = [r for r in rows if r.verdict == SLOW_VERDICT]
    return Summary(
        files=result.files_scanned,
        files_failed=len(result.errors),
        calls=len(rows),
        guessed_calls=sum(1 for r in rows if r.guess),
        distinct_apis=len(apis),
        mapped_apis=len(mapped),
        unmapped_apis=len(apis - mapped),
        covered_apis=len({r.api for r in rows if r.covered}) if with_cases else None,
        slow_apis=len({r.api for r in slow}) if with_results else None,
        slow_calls=len(slow) if with_results else None,
        elapsed_s=result.elapsed_s,
    )

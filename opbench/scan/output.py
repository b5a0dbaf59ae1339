"""Scan output: CSV and JSON (one row per call, COLUMNS) and a rich terminal table; the same
three for `--affinity` hits."""
from __future__ import annotations

import csv
import json
from collections import Counter
from dataclasses import asdict
from operator import attrgetter
from typing import IO, Iterable

from rich.console import Console
from rich.table import Table
from rich.text import Text

from opbench.scan.affinity import CSV_COLUMNS as AFFINITY_CSV_COLUMNS
from opbench.scan.affinity import NOT_MEASURED, AffinityHit
from opbench.scan.affinity import csv_values as affinity_csv_values
from opbench.scan.affinity import json_row as affinity_json_row
from opbench.scan.rows import COLUMNS, FileError, ScanRow, Summary

JSON_SCHEMA_VERSION = 1   # 1: first version (rows, summary, errors, columns)

# A terminal table of every call is unreadable past a screenful or two; beyond this many
# calls the table shows one line per distinct API instead (the CSV keeps every call).
TABLE_CALL_ROWS_MAX = 200
GROUP_AUTO, GROUP_CALL, GROUP_API = "auto", "call", "api"
GUESS_MARK = "~"          # prefixed to the API of a guessed row in the table


def _csv_value(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def write_csv(rows: Iterable[ScanRow], stream: IO[str]) -> None:
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(COLUMNS)
    values_of = attrgetter(*COLUMNS)   # not asdict(): it deep-copies, 5x slower on big scans
    writer.writerows([_csv_value(v) for v in values_of(row)] for row in rows)


def _row_dict(row: ScanRow) -> dict:
    return dict(zip(COLUMNS, attrgetter(*COLUMNS)(row)))


def write_json(rows: Iterable[ScanRow], summary: Summary, errors: Iterable[FileError],
               stream: IO[str]) -> None:
    document = {
        "schema_version": JSON_SCHEMA_VERSION,
        "columns": list(COLUMNS),
        "summary": asdict(summary),
        "errors": [asdict(e) for e in errors],
        "rows": [_row_dict(r) for r in rows],
    }
    json.dump(document, stream, indent=1)
    stream.write("\n")


def summary_lines(summary: Summary) -> list[str]:
    failed = f", {summary.files_failed} could not be parsed" if summary.files_failed else ""
    lines = [f"Scanned {summary.files} files in {summary.elapsed_s:.1f} s{failed}."]
    parts = [f"calls {summary.calls} ({summary.guessed_calls} guessed)",
             f"distinct APIs {summary.distinct_apis}",
             f"mapped {summary.mapped_apis}", f"unmapped {summary.unmapped_apis}"]
    if summary.covered_apis is not None:
        parts.append(f"covered {summary.covered_apis}")
    if summary.slow_apis is not None:
        parts.append(f"slow {summary.slow_apis} ({summary.slow_calls} calls)")
    lines.append(" · ".join(parts))
    return lines


def _ratio_text(row: ScanRow) -> str:
    if row.ratio is None:
        return ""
    return f"{row.ratio:.2f}" + (f" ×{row.instances}" if row.instances > 1 else "")


def _covered_text(row: ScanRow) -> str:
    return "" if row.covered is None else ("yes" if row.covered else "no")


def _api_text(row: ScanRow) -> str:
    return f"{GUESS_MARK}{row.api}" if row.guess else row.api


def _call_table(rows: list[ScanRow], with_cases: bool, with_results: bool) -> Table:
    table = Table(title=f"{len(rows)} framework calls", title_justify="left")
    for name in ("location", "type", "call", "api", "maps to", "status"):
        table.add_column(name, overflow="fold")
    if with_cases:
        table.add_column("case")
    if with_results:
        table.add_column("ratio", justify="right")
        table.add_column("verdict")
    for row in rows:
        cells = [row.location, row.api_type, row.call, _api_text(row), row.mapped_api,
                 row.mapping_status]
        if with_cases:
            cells.append(_covered_text(row))
        if with_results:
            cells += [_ratio_text(row), row.verdict]
        table.add_row(*map(Text, cells))   # Text: `x[mask]` is not rich markup
    return table


def _api_table(rows: list[ScanRow], with_cases: bool, with_results: bool) -> Table:
    calls = Counter(r.api for r in rows)
    first: dict[str, ScanRow] = {}
    for row in rows:
        # A certain row represents the API better than a guessed one.
        if row.api not in first or (first[row.api].guess and not row.guess):
            first[row.api] = row
    if with_results:
        order = sorted(first, key=lambda a: (first[a].ratio is None, first[a].ratio or 0.0, a))
    else:
        order = sorted(first, key=lambda a: (-calls[a], a))
    table = Table(title=f"{len(order)} distinct APIs in {len(rows)} calls "
                        f"({GUESS_MARK} = guessed tensor receiver)", title_justify="left")
    for name in ("api", "type", "calls", "first at", "maps to", "status"):
        table.add_column(name, overflow="fold", justify="right" if name == "calls" else "left")
    if with_cases:
        table.add_column("case")
    if with_results:
        table.add_column("ratio", justify="right")
        table.add_column("verdict")
    for api in order:
        row = first[api]
        cells = [_api_text(row), row.api_type, str(calls[api]), row.location, row.mapped_api,
                 row.mapping_status]
        if with_cases:
            cells.append(_covered_text(row))
        if with_results:
            cells += [_ratio_text(row), row.verdict]
        table.add_row(*map(Text, cells))   # Text: `x[mask]` is not rich markup
    return table


def render_table(console: Console, rows: Iterable[ScanRow], summary: Summary,
                 errors: Iterable[FileError], *, group: str = GROUP_AUTO,
                 with_cases: bool = False, with_results: bool = False) -> None:
    rows = list(rows)
    if group == GROUP_AUTO:
        group = GROUP_CALL if len(rows) <= TABLE_CALL_ROWS_MAX else GROUP_API
    if rows:
        make = _call_table if group == GROUP_CALL else _api_table
        console.print(make(rows, with_cases, with_results))
    render_errors(console, errors)
    for line in summary_lines(summary):
        console.print(line, highlight=False, soft_wrap=True)


def render_errors(console: Console, errors: Iterable[FileError]) -> None:
    errors = list(errors)
    if errors:
        console.print(f"{len(errors)} file(s) could not be parsed (skipped):", style="yellow",
                      highlight=False)
        for error in errors:
            console.print(f"  {error}", highlight=False, markup=False, soft_wrap=True)


# ---- `opbench scan --affinity` ------------------------------------------------------------
AFFINITY_JSON_SCHEMA_VERSION = 1   # 1: first version (rows, files, errors, columns)


def write_affinity_csv(hits: Iterable[AffinityHit], stream: IO[str]) -> None:
    """The Ascend affinity CSV's columns first, then Family, Replacement, Measured."""
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(AFFINITY_CSV_COLUMNS)
    writer.writerows(affinity_csv_values(hit) for hit in hits)


def write_affinity_json(hits: Iterable[AffinityHit], files_scanned: int,
                        errors: Iterable[FileError], stream: IO[str]) -> None:
    rows = [affinity_json_row(hit) for hit in hits]
    document = {
        "schema_version": AFFINITY_JSON_SCHEMA_VERSION,
        "files": files_scanned,
        "errors": [asdict(e) for e in errors],
        "rows": rows,
    }
    json.dump(document, stream, indent=1)
    stream.write("\n")


def affinity_summary_line(hits: list[AffinityHit], files_scanned: int) -> str:
    families = Counter(hit.family for hit in hits)
    top = ", ".join(f"{family} {count}" for family, count in families.most_common(4))
    return (f"Scanned {files_scanned} files: {len(hits)} affinity candidates in "
            f"{len(families)} families{f' ({top})' if top else ''}; {NOT_MEASURED}: "
            "`opbench model --suggest` measures a script's.")


def render_affinity_table(console: Console, hits: Iterable[AffinityHit], files_scanned: int,
                          errors: Iterable[FileError]) -> None:
    hits = list(hits)
    if hits:
        table = Table(title=f"{len(hits)} affinity candidates ({NOT_MEASURED})",
                      title_justify="left")
        for name in ("location", "lines", "type", "written now", "affinity API", "family",
                     "replacement"):
            table.add_column(name, overflow="fold")
        for hit in hits:
            lines = (str(hit.start_line) if hit.start_line == hit.end_line
                     else f"{hit.start_line}-{hit.end_line}")
            table.add_row(*map(Text, (f"{hit.file}:{hit.start_line}", lines, hit.api_type,
                                      hit.api, hit.affinity_api, hit.family,
                                      hit.replacement)))
        console.print(table)
    render_errors(console, errors)
    console.print(affinity_summary_line(hits, files_scanned), highlight=False, soft_wrap=True,
                  markup=False)

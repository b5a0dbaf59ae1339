"""Static scan of a code base for torch / MindSpore API calls (`opbench scan`).

    from opbench.scan import scan_paths, annotate
    result = scan_paths(["path/to/repo"])
    rows = annotate(result.rows, mapping=load_mapping())
"""
from __future__ import annotations

from opbench.scan.annotate import annotate
from opbench.scan.coverage import (
    covered_apis,
    default_cases_dir,
    load_covered_apis,
    normalise_case_api,
)
from opbench.scan.results_join import MeasuredApi, ResultsIndex
from opbench.scan.rows import COLUMNS, FileError, ScanResult, ScanRow, Summary, summarize
from opbench.scan.scanner import discover_files, scan_file, scan_paths, scan_source

__all__ = [
    "COLUMNS", "FileError", "MeasuredApi", "ResultsIndex", "ScanResult", "ScanRow", "Summary",
    "annotate", "covered_apis", "default_cases_dir", "discover_files", "load_covered_apis",
    "normalise_case_api", "scan_file", "scan_paths", "scan_source", "summarize",
]

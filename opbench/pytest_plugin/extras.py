"""What the plugin does for pytest's and pytest-benchmark's extras before anything runs:

- `--benchmark-histogram` needs pygal, which pytest-benchmark imports only when the session
  ends: without it the run measured everything and then died in an INTERNALERROR traceback.
  It is refused at start-up instead, with the install line (`opbench[histogram]`).
- `pytest --markers` lists registered markers without collecting, so case tags, which are
  registered on collection, were missing from it. With --markers the tags of the case files
  named on the command line (and of the shipped library) are registered at configure time.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Iterable, Iterator

import pytest

HISTOGRAM_MODULE = "pygal"
HISTOGRAM_REFUSAL = ("--benchmark-histogram needs pygal, which is not installed: "
                     "pip install 'opbench[histogram]' (pygal and pygaljs)")
TAG_MARKER_TEXT = "opbench case tag"


def refuse_unavailable_extras(config: pytest.Config) -> None:
    """A usage error now instead of a traceback after the whole run."""
    histogram = config.getoption("benchmark_histogram", default=None)
    if histogram and importlib.util.find_spec(HISTOGRAM_MODULE) is None:
        raise pytest.UsageError(HISTOGRAM_REFUSAL)


def register_tags_for_markers_listing(config: pytest.Config) -> None:
    """With --markers: register every case tag, as collection would."""
    if not config.getoption("markers", default=False):
        return
    from opbench.cases.library import LibraryMissing, shipped_cases_dir
    from opbench.pytest_plugin.collect import RESERVED_MARKERS

    roots = [Path(arg.split("::")[0]) for arg in config.args]
    try:
        roots.append(shipped_cases_dir())
    except LibraryMissing:
        pass
    for tag in sorted(set(_tags(roots))):
        if tag not in RESERVED_MARKERS:
            config.addinivalue_line("markers", f"{tag}: {TAG_MARKER_TEXT}")


def _tags(roots: Iterable[Path]) -> Iterator[str]:
    from opbench.cases.case_files import CASE_FILE_SUFFIXES, CaseError, load_case_file
    from opbench.pytest_plugin.collect import is_case_file

    for root in roots:
        files = ([root] if root.is_file() else
                 sorted(p for p in root.rglob("*") if p.suffix in CASE_FILE_SUFFIXES)
                 if root.is_dir() else [])
        for path in files:
            if not is_case_file(path, given_on_command_line=path == root):
                continue
            try:
                cases = load_case_file(path)
            except CaseError:
                continue            # collection reports it; a listing of markers does not
            for case in cases:
                yield from case.tags

"""Where the shipped case library is, and how user case directories add to it.

One source of truth: the library is `cases/` at the top of the repository (what
`pytest cases/` collects and what a checkout's user edits). The wheel carries the same files
as `opbench/case_library/` (pyproject.toml maps that package to `cases/`, so the build copies
them; nothing is duplicated in the repository). An editable install or a checkout on
PYTHONPATH has no `opbench/case_library/` and finds `cases/` next to the package instead.

`--cases DIR` adds a user's cases to the library; a user case with the name of a shipped case
replaces it (a local variant of an operator wins over the shipped one).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

# The wheel's copy of cases/ (see [tool.setuptools.package-dir] in pyproject.toml).
PACKAGED_DIR = Path(__file__).resolve().parent.parent / "case_library"
# A checkout (or an editable install of one): cases/ beside the opbench package.
CHECKOUT_DIR = Path(__file__).resolve().parent.parent.parent / "cases"


class LibraryMissing(RuntimeError):
    """Neither the packaged nor the checkout's case library is there (a broken install)."""


def shipped_cases_dir() -> Path:
    for candidate in (PACKAGED_DIR, CHECKOUT_DIR):
        if candidate.is_dir() and any(candidate.glob("*.yaml")):
            return candidate
    raise LibraryMissing(f"the shipped case library is missing (looked in {PACKAGED_DIR} and "
                         f"{CHECKOUT_DIR}); reinstall opbench or pass case paths")


def display_path(path: Path, cwd: Path | None = None) -> str:
    """Relative to the working directory when inside it (`cases` in a checkout, so records
    and messages read as before), else absolute."""
    cwd = cwd or Path.cwd()
    try:
        return os.path.relpath(path, cwd) if path.resolve().is_relative_to(cwd.resolve()) \
            else str(path)
    except ValueError:   # another drive on Windows
        return str(path)


def merge_cases(base: Sequence, extra: Sequence) -> list:
    """The cases of `base` with those of `extra` added; an extra case named like a base case
    replaces it, in the base case's place."""
    extra_by_name = {case.name: case for case in extra}
    merged = [extra_by_name.pop(case.name, case) for case in base]
    return merged + [case for case in extra if case.name in extra_by_name]

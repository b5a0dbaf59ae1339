"""Find the Python files under the given paths and scan each one, in parallel when it pays.

Files are parsed with `ast` only: nothing is imported or executed. A file that cannot be
read or parsed becomes a FileError and the scan carries on.
"""
from __future__ import annotations

import ast
import gc
import multiprocessing
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterable

from opbench.config.vocabulary import FRAMEWORKS
from opbench.scan.rows import FileError, ScanResult, ScanRow
from opbench.scan.source import SourceText, decode_source
from opbench.scan.visitor import ModuleVisitor

# Below this many files, starting worker processes (a fresh interpreter each, ~0.2 s) costs
# more than the parallel scan saves.
PARALLEL_MIN_FILES = 64
# Files per task handed to a worker: small enough to balance the load (files are sent
# largest first), large enough that inter-process traffic stays negligible.
FILES_PER_TASK = 8
# The visitor recurses once per nesting level of an expression; generated code can chain
# thousands of `a + b + ...` terms, which would overflow Python's default limit of 1000.
VISITOR_RECURSION_LIMIT = 20_000
# Directory names never descended into (caches; hidden dirs such as .git/.venv are skipped
# too, and so is any directory holding a virtualenv's pyvenv.cfg).
SKIPPED_DIR_NAMES = frozenset({"__pycache__", "node_modules"})

ProgressCallback = Callable[[int, int], None]   # (files done, files total)


@dataclass(frozen=True)
class FileScan:
    file: str
    rows: tuple[ScanRow, ...]
    error: FileError | None = None


def discover_files(paths: Iterable[str | os.PathLike]) -> list[str]:
    """Python files under `paths`, in a stable order. A path naming a file is taken as is,
    whatever its suffix."""
    found: list[str] = []
    seen: set[str] = set()

    def add(path: str) -> None:
        if path not in seen:
            seen.add(path)
            found.append(path)

    for root in map(os.fspath, paths):
        if os.path.isfile(root):
            add(root)
            continue
        for directory, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(
                d for d in dirnames
                if not d.startswith(".") and d not in SKIPPED_DIR_NAMES
                and not os.path.exists(os.path.join(directory, d, "pyvenv.cfg")))
            for name in sorted(filenames):
                if name.endswith(".py"):
                    add(os.path.join(directory, name))
    return found


@contextmanager
def _gc_paused():
    """Pause the cyclic garbage collector. A parse allocates hundreds of thousands of AST
    nodes, which set off collection after collection over everything alive (a third of the
    scan's time on the torch tree); the nodes hold no reference cycles, so reference counting
    alone frees them."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def mentions_framework(data: bytes) -> bool:
    """Can this file possibly import a framework? Checked on the raw bytes before parsing:
    a file that never spells a framework's name yields no rows, and most files of a mixed
    code base are like that."""
    return any(root.encode() in data for root in FRAMEWORKS)


def scan_source(text: str, file: str = "<string>") -> list[ScanRow]:
    """Rows for one module's source text, sorted by position. Raises SyntaxError."""
    previous_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous_limit, VISITOR_RECURSION_LIMIT))
    try:
        with _gc_paused():
            tree = ast.parse(text, filename=file)
            rows = ModuleVisitor(file, SourceText(text)).visit_module(tree)
            del tree
    finally:
        sys.setrecursionlimit(previous_limit)
    # Position order; of calls starting at the same place (`F.relu(h).sum()`) the inner first.
    rows.sort(key=lambda r: (r.line, r.col, r.end_line, len(r.call), r.api))
    return rows


def scan_file(file: str) -> FileScan:
    """Scan one file; every way it can fail becomes a FileError."""
    try:
        with open(file, "rb") as handle:
            data = handle.read()
        if not mentions_framework(data):
            return FileScan(file, ())
        text = decode_source(data)
        return FileScan(file, tuple(scan_source(text, file)))
    except SyntaxError as exc:   # includes IndentationError / TabError
        return FileScan(file, (), FileError(file, exc.lineno, f"{type(exc).__name__}: {exc.msg}"))
    except (OSError, UnicodeDecodeError, LookupError, ValueError) as exc:
        # ValueError: null bytes in the source; LookupError: an unknown coding cookie.
        return FileScan(file, (), FileError(file, None, f"{type(exc).__name__}: {exc}"))
    except (RecursionError, MemoryError) as exc:
        return FileScan(file, (), FileError(
            file, None, f"{type(exc).__name__}: too deeply nested to analyse"))


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:   # not on Linux
        return max(1, os.cpu_count() or 1)


def _scan_parallel(files: list[str], jobs: int,
                   on_progress: ProgressCallback | None) -> dict[str, FileScan]:
    # Largest first, so no worker is left alone with a huge file at the end.
    ordered = sorted(files, key=_size_or_zero, reverse=True)
    scans: dict[str, FileScan] = {}
    with multiprocessing.get_context(_start_method()).Pool(jobs) as pool:
        for scan in pool.imap_unordered(scan_file, ordered, chunksize=FILES_PER_TASK):
            scans[scan.file] = scan
            if on_progress is not None:
                on_progress(len(scans), len(files))
    return scans


def _start_method() -> str:
    """fork where it exists: the workers need nothing but the already imported scanner, and
    spawn would re-run the caller's main script in every worker (a script without an
    `if __name__ == "__main__"` guard, or one fed on stdin, would break). The scanner starts
    no threads itself; the command's progress bar is drawn without a refresh thread."""
    return "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"


def _size_or_zero(file: str) -> int:
    try:
        return os.path.getsize(file)
    except OSError:
        return 0


def scan_paths(paths: Iterable[str | os.PathLike], *, jobs: int | None = None,
               on_progress: ProgressCallback | None = None,
               files: list[str] | None = None) -> ScanResult:
    """Scan every Python file under `paths` (or exactly `files` when given)."""
    files = discover_files(paths) if files is None else files
    jobs = default_jobs() if jobs is None else max(1, jobs)
    start_s = time.perf_counter()
    if jobs > 1 and len(files) >= PARALLEL_MIN_FILES:
        scans = _scan_parallel(files, jobs, on_progress)
    else:
        scans = {}
        for file in files:
            scans[file] = scan_file(file)
            if on_progress is not None:
                on_progress(len(scans), len(files))
    rows: list[ScanRow] = []
    errors: list[FileError] = []
    for file in files:           # discovery order, whatever order the workers finished in
        scan = scans[file]
        rows.extend(scan.rows)
        if scan.error is not None:
            errors.append(scan.error)
    return ScanResult(rows=tuple(rows), errors=tuple(errors), files_scanned=len(files),
                      elapsed_s=time.perf_counter() - start_s)

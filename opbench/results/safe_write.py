"""Results files that cannot be written must not cost the measurements.

Seen before this module: a read-only directory, a file where a directory should be, or a
full disk each gave a traceback and exit 1 (the code for "a real finding"), and a full disk
in the middle of a run aborted it. Now the results path is checked before anything is
measured (a usage error, exit 2), and a write that fails mid-run is retried at every later
save while the record stays in memory; if the last try fails too, the run ends with
ResultsNotSaved, which carries the record (a RunRecord) so the caller can still show it.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping

from opbench.results.records import RunRecord
from opbench.results.run_file import RunFileWriter

__all__ = ["ResultsNotSaved", "ResilientSaver", "unwritable_reason"]


class ResultsNotSaved(Exception):
    """The run finished but its results file could not be written; `record` has it all."""

    def __init__(self, path: str | os.PathLike, error: BaseException, record: RunRecord,
                 failures: int):
        super().__init__(f"could not write the results to {path}: {_describe(error)} "
                         f"({failures} failed attempt{'s' if failures != 1 else ''}; the "
                         f"measurements were kept in memory and are shown above)")
        self.path, self.error, self.record, self.failures = path, error, record, failures


def _describe(error: BaseException) -> str:
    return error.strerror if isinstance(error, OSError) and error.strerror else str(error)


def unwritable_reason(path: str | os.PathLike) -> str | None:
    """Why a results file could not be written at `path`, or None if it can: the parent
    directories are created, and a scratch file is written in the directory and removed."""
    target = Path(path)
    if target.is_dir():
        return f"{target} is a directory"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, scratch = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".check",
                                       dir=target.parent)
        os.close(fd)
        os.unlink(scratch)
    except OSError as exc:
        where = exc.filename or target.parent
        return f"cannot write to {where}: {_describe(exc)}"
    if target.exists() and not os.access(target, os.W_OK):
        return f"{target} is not writable"
    return None


class ResilientSaver:
    """save() after every instance: a failed write is remembered, not raised, and the next
    save() tries again with the whole record (the dict the run is building; written as
    records.write_run_dict writes it, by a run_file.RunFileWriter of its own). finish() is
    the last try."""

    def __init__(self, path: str | os.PathLike, record: dict[str, Any],
                 write: Callable[[str | os.PathLike, Mapping[str, Any]], None] | None = None):
        self.path, self.record = path, record
        self._write = RunFileWriter() if write is None else write
        self.error: OSError | None = None
        self.failures = 0

    def __call__(self) -> None:
        try:
            self._write(self.path, self.record)
        except OSError as exc:   # ENOSPC, EACCES, ENOTDIR, EROFS, ...
            self.error = exc
            self.failures += 1
        else:
            self.error = None

    def finish(self) -> None:
        self()
        if self.error is not None:
            raise ResultsNotSaved(self.path, self.error, RunRecord.from_dict(self.record),
                                  self.failures)

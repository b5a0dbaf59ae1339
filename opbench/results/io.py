"""The results file's version, its JSON Schema, the facts of the machine a record starts
with, and the atomic JSON write. The typed records, the one loader and the one writer of a
results file are records.py beside it.

Format history (bump SCHEMA_VERSION on any change a reader must know about, and add the
step that upgrades the previous version to records.MIGRATIONS, so `load_results` keeps
reading every older version):
  1  (opbench 0.1) first format: environment, config, per-framework info and overheads,
     instances with correctness check, per-mode measurements with raw samples, ratio,
     interval and verdict.
     Compatible additions since (a reader of version 1 treats a missing key as noted):
     config.processes (1), config.quiesce (false), run-level between_process_prior, and per
     measurement process_of_round (all rounds from process 1), n_processes,
     between_process_sd, settle_s / settle_timed_out (no pre-sample wait), interference
     ([]) and inconclusive_reason; run-level ceilings (none measured) and per instance
     work (null: counted from the shapes) and peak_memory; config.shard (absent: the whole
     selection) and, in a record joined by opbench merge (merge.py), merged_from,
     missing_shards, absolute_times_comparable (absent: true) and per instance machine_id
     (absent: the record's); per measurement cpu_s, effective_cores, allowed_cores and
     samples_over_cores (absent: cores not measured), cause, fit and roofline (absent: the
     views compute them from the record); frameworks[].cpus (absent: not pinned);
     ceilings[].copy_cores, gemm_cores, cache_levels and cache_bytes (absent: DRAM copy
     only); peak_memory[].malloc_bytes and output_bytes (absent: another measure);
     frameworks[].build (absent: the framework exposes no build, or not recorded) and
     frameworks[].python (absent: the run's own interpreter); check.worst_output and
     worst_index, grad_check's too (absent: the values agree, or the file is older and
     only the detail text says where); sequential.stopped null (the instance was still
     measured when the file was written: a run in progress or killed; older readers
     refused such a file); machine_facts (absent: overhead and ceilings were measured in
     the run).

The JSON Schema of this format is opbench/schema/results.schema.json; writers validate
against it in tests, the loader (records.load_results) uses it to reject foreign files with
a clear message.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import socket
import subprocess
import tempfile
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from opbench.config import OPBENCH_VERSION

SCHEMA_VERSION = 1
# machine_id of a merged record whose parts ran on different machines (merge.py): it never
# equals another record's machine_id, so no reader takes its absolute times as comparable.
MIXED_MACHINES_PREFIX = "mixed:"


class ResultsError(Exception):
    """A results file that cannot be read; the message names the file."""


@lru_cache(maxsize=None)
def results_schema() -> dict[str, Any]:
    text = resources.files("opbench").joinpath("schema/results.schema.json").read_text()
    return json.loads(text)


def validate_record(record: dict[str, Any]) -> None:
    """Raise jsonschema.ValidationError if `record` does not follow the results schema."""
    import jsonschema  # local: only readers/tests that validate pay for the import

    jsonschema.validate(record, results_schema())


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_commit(cwd: str | os.PathLike | None = None) -> str | None:
    """The commit of the repository the user runs in (their framework or model checkout),
    so a result can be tied to the code it measured. None outside a git checkout."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True,
                             text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def machine_id() -> str:
    """A short fingerprint of the machine (host, CPU, core count): equal ids mean absolute
    times are comparable across runs; different ids mean only ratios are."""
    basis = f"{socket.gethostname()}|{cpu_model()}|{os.cpu_count()}|{platform.machine()}"
    return hashlib.sha256(basis.encode()).hexdigest()[:12]


def environment() -> dict[str, Any]:
    import numpy

    return {
        "opbench": OPBENCH_VERSION,
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "platform": platform.platform(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "machine_id": machine_id(),
        "git_commit": git_commit(),
    }


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def new_record(config: dict[str, Any], frameworks: dict[str, Any],
               overhead: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "created_utc": utc_now(),
        "complete": False,
        "interrupted": False,
        "environment": environment(),
        "config": config,
        "frameworks": frameworks,
        "overhead": overhead,
        "instances": [],
    }


def write_json_atomic(path: str | os.PathLike, data: Any) -> None:
    """`data` as JSON (indent 1), written atomically (write_text_atomic)."""
    write_text_atomic(path, json_text(data))


def json_text(data: Any, indent: int | None = 1) -> str:
    """How opbench writes JSON: indented by 1, no NaN, numpy scalars as numbers."""
    return json.dumps(data, indent=indent, allow_nan=False, default=_json_default)


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Write to a temporary file in the same directory, fsync, then rename over the target:
    a crash or Ctrl-C at any moment leaves either the old file or the new one, never a
    truncated mix. A newline ends the file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp makes the file private (0600); a results file is an ordinary file and
        # follows the umask like one.
        os.fchmod(fd, 0o666 & ~_current_umask())
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _current_umask() -> int:
    mask = os.umask(0)   # the only way to read it is to set it
    os.umask(mask)
    return mask


def _json_default(value: Any) -> Any:
    # numpy scalars and tuples of them reach the record from stats and inputs
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def plain_json(data: Any) -> Any:
    """`data` as plain JSON types (numpy scalars become floats, tuples lists): what crosses
    to pytest-xdist's controller, whose channel carries only Python's own types."""
    return json.loads(json.dumps(data, allow_nan=False, default=_json_default))

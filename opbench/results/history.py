"""The run history: every recorded run in one SQLite file, queried per operator.

SQLite because it is in the standard library, is a single file a CI job can cache or
upload as an artifact, and answers "this operator over the last N runs" with an index
instead of re-reading N JSON files. A run is stored with what makes it comparable or not -
machine, framework versions and builds, commit, configuration - and every measurement's ratio,
interval, verdict, medians and raw samples (so a stored run can serve as a baseline later).

Recording the same results record twice is a no-op: each run is keyed by a digest of its
content.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from opbench.results.io import utc_now
from opbench.results.records import RunRecord, as_plain

__all__ = ["DB_ENV", "DEFAULT_DB", "HistoryError", "HistoryStore", "TrendPoint", "default_db"]

DB_ENV = "OPBENCH_DB"
DEFAULT_DB = "opbench.db"
# How long to wait for another process's lock on the database (a CI job recording while
# another reads it) before giving up with a HistoryError: long enough for any write of a
# run (milliseconds), short enough that a stuck lock does not hang a CI job.
LOCK_WAIT_S = 30.0
# Bump with a migration in _migrate when the tables change; readers refuse newer files.
# 2: runs name each side's build (reference_build, target_build): two builds of one version
#    string (a nightly, a patched build) are different code, and a history keyed by the
#    version alone showed them as one series. A v1 file gains the columns, empty (its runs'
#    builds were not kept).
# 3: acknowledged changes (opbench history INSTANCE --acknowledge RUN): a series' accepted
#    new level starts at that run, so later change scans compare against it. A v2 file gains
#    the empty table.
SCHEMA_VERSION = 3

_ACK_SCHEMA = """
CREATE TABLE IF NOT EXISTS acknowledged (
    instance_id TEXT NOT NULL,
    mode TEXT NOT NULL,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    note TEXT,
    recorded_utc TEXT NOT NULL,
    PRIMARY KEY (instance_id, mode, run_id)
);
"""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    digest TEXT NOT NULL UNIQUE,
    recorded_utc TEXT NOT NULL,
    created_utc TEXT,
    source TEXT,
    label TEXT,
    machine_id TEXT,
    cpu_model TEXT,
    git_commit TEXT,
    opbench_version TEXT,
    reference TEXT,
    target TEXT,
    reference_version TEXT,
    target_version TEXT,
    device TEXT,
    threads INTEGER,
    config_json TEXT,
    reference_build TEXT,
    target_build TEXT
);
CREATE TABLE IF NOT EXISTS measurements (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    instance_id TEXT NOT NULL,
    op TEXT NOT NULL,
    mode TEXT NOT NULL,
    verdict TEXT,
    ratio REAL,
    ci_low REAL,
    ci_high REAL,
    rounds INTEGER,
    reference_median_s REAL,
    target_median_s REAL,
    samples_json TEXT,
    PRIMARY KEY (run_id, instance_id, mode)
);
CREATE INDEX IF NOT EXISTS measurements_op ON measurements(op, instance_id);
""" + _ACK_SCHEMA


class HistoryError(Exception):
    """A history database that cannot be used; the message names the file."""


def default_db() -> str:
    return os.environ.get(DB_ENV, DEFAULT_DB)


@dataclass(frozen=True)
class TrendPoint:
    """One measurement of one instance in one recorded run."""

    run_id: int
    created_utc: str | None
    git_commit: str | None
    machine_id: str | None
    reference_version: str | None
    target_version: str | None
    label: str | None
    instance_id: str
    op: str
    mode: str
    verdict: str | None
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    rounds: int | None
    reference_median_s: float | None
    target_median_s: float | None
    reference_build: str | None = None
    target_build: str | None = None
    threads: int | None = None
    config_json: str | None = None

    @property
    def frameworks(self) -> str:
        """`2.13.0 / 2.10.0 (build 1a2b3c)`: the reference's and target's code, by version
        and, where the run named one, build: what makes two runs one series or two."""
        def one(version: str | None, build: str | None) -> str:
            return (version or "?") + (f" (build {build})" if build else "")
        return (f"{one(self.reference_version, self.reference_build)} / "
                f"{one(self.target_version, self.target_build)}")


def _digest(record: RunRecord) -> str:
    text = json.dumps(record.to_dict(), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class HistoryStore:
    """`with HistoryStore(path) as store: store.record_run(record)`; creates the file."""

    def __init__(self, path: str | os.PathLike, lock_wait_s: float = LOCK_WAIT_S):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=lock_wait_s)
            self._db.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except (sqlite3.DatabaseError, OSError) as exc:
            raise HistoryError(f"{self.path}: not a usable opbench history database "
                               f"({exc})") from None

    def _migrate(self) -> None:
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise HistoryError(f"{self.path}: history schema {version} is newer than this "
                               f"opbench reads ({SCHEMA_VERSION})")
        if version == 0:
            tables = self._db.execute(
                "SELECT count(*) FROM sqlite_master WHERE type='table'").fetchone()[0]
            if tables:
                raise HistoryError(f"{self.path}: an SQLite file, but not an opbench history")
            with self._db:
                self._db.executescript(_SCHEMA)
                self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        elif version < SCHEMA_VERSION:
            with self._db:
                if version == 1:
                    for column in ("reference_build", "target_build"):
                        self._db.execute(f"ALTER TABLE runs ADD COLUMN {column} TEXT")
                self._db.executescript(_ACK_SCHEMA)
                self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "HistoryStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ----------------------------------------------------------------------------

    def record_run(self, record: RunRecord, *, source: str | None = None,
                   label: str | None = None) -> tuple[int, bool]:
        """Store a results record; returns (run id, True if newly added). A record already
        stored (same content) is not added again."""
        try:
            return self._record_run(record, source, label)
        except sqlite3.DatabaseError as exc:   # locked past LOCK_WAIT_S, disk full, ...
            raise HistoryError(f"{self.path}: could not record the run ({exc})") from None

    def _record_run(self, record: RunRecord, source: str | None,
                    label: str | None) -> tuple[int, bool]:
        digest = _digest(record)
        row = self._db.execute("SELECT id FROM runs WHERE digest = ?", (digest,)).fetchone()
        if row:
            return int(row[0]), False
        env, config = record.environment, record.config
        reference, target = config.reference, config.target
        versions = record.framework_versions()
        builds = {name: info.build for name, info in record.frameworks.items()}
        with self._db:
            cursor = self._db.execute(
                "INSERT INTO runs (digest, recorded_utc, created_utc, source, label, machine_id,"
                " cpu_model, git_commit, opbench_version, reference, target, reference_version,"
                " target_version, device, threads, config_json, reference_build, target_build)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (digest, utc_now(), record.created_utc, source, label,
                 env.machine_id, env.cpu_model, env.git_commit, env.opbench, reference, target,
                 versions.get(reference), versions.get(target), config.device,
                 config.threads, json.dumps(config.to_dict(), sort_keys=True),
                 builds.get(reference), builds.get(target)))
            run_id = int(cursor.lastrowid)
            self._db.executemany(
                "INSERT INTO measurements VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                list(self._measurement_rows(run_id, record, reference, target)))
        return run_id, True

    @staticmethod
    def _measurement_rows(run_id: int, record: RunRecord, reference: str,
                          target: str) -> Iterator[tuple]:
        for inst in record.instances:
            verdict = None if inst.verdict is None else inst.verdict.value
            if not inst.measurements:
                # ERROR / MISMATCH / correctness-only: the verdict still belongs to the trend
                yield (run_id, inst.id, inst.op, "-", verdict,
                       None, None, None, None, None, None, None)
            for mode, m in inst.measurements.items():
                yield (run_id, inst.id, inst.op, mode, m.verdict.value,
                       m.ratio, m.ci_low, m.ci_high, m.rounds,
                       m.median_s(reference), m.median_s(target),
                       json.dumps(as_plain(m.samples_s)))

    def acknowledge(self, instance_id: str, run_id: int, *, mode: str | None = None,
                    note: str | None = None) -> list[str]:
        """Accept the level of instance_id's series from run_id on (a known regression, an
        accepted trade): later change scans start there. Returns the modes acknowledged."""
        modes = [r[0] for r in self._db.execute(
            "SELECT mode FROM measurements WHERE run_id = ? AND instance_id = ? AND mode != '-'",
            (run_id, instance_id)) if mode is None or r[0] == mode]
        if not modes:
            raise HistoryError(f"{self.path}: run #{run_id} has no measurement of "
                               f"'{instance_id}'" + (f" in mode {mode}" if mode else ""))
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO acknowledged VALUES (?, ?, ?, ?, ?)",
                [(instance_id, m, run_id, note, utc_now()) for m in modes])
        return modes

    def acknowledged(self) -> dict[tuple[str, str], int]:
        """(instance id, mode) -> the latest acknowledged run."""
        return {(i, m): int(r) for i, m, r in self._db.execute(
            "SELECT instance_id, mode, max(run_id) FROM acknowledged GROUP BY instance_id, mode")}

    # -- reading ----------------------------------------------------------------------------

    def run_count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM runs").fetchone()[0])

    def operators(self) -> list[str]:
        return [r[0] for r in self._db.execute(
            "SELECT DISTINCT op FROM measurements ORDER BY op")]

    def trend(self, selector: str, *, mode: str | None = None,
              last_runs: int | None = None) -> list[TrendPoint]:
        """Measurements of an operator (exact op name) - or, when no op has that name, of
        the instances whose id contains `selector` - oldest run first. last_runs keeps only
        the most recent N runs that measured it."""
        where = "m.op = ?"
        if not self._db.execute("SELECT 1 FROM measurements WHERE op = ? LIMIT 1",
                                (selector,)).fetchone():
            where = "instr(lower(m.instance_id), lower(?)) > 0"
        params: list[Any] = [selector]
        if mode is not None:
            where += " AND m.mode = ?"
            params.append(mode)
        rows = self._db.execute(
            "SELECT r.id, r.created_utc, r.git_commit, r.machine_id, r.reference_version,"
            " r.target_version, r.label, m.instance_id, m.op, m.mode, m.verdict, m.ratio,"
            " m.ci_low, m.ci_high, m.rounds, m.reference_median_s, m.target_median_s,"
            " r.reference_build, r.target_build"
            f" FROM measurements m JOIN runs r ON r.id = m.run_id WHERE {where}"
            " ORDER BY r.id, m.instance_id, m.mode", params).fetchall()
        points = [TrendPoint(*row) for row in rows]
        if last_runs is not None:
            keep = sorted({p.run_id for p in points})[-last_runs:] if last_runs > 0 else []
            points = [p for p in points if p.run_id in set(keep)]
        return points

    def all_points(self) -> list[TrendPoint]:
        """Every measurement of every run, oldest run first: the change-point scan's input
        (results/changes.py keys them into series)."""
        rows = self._db.execute(
            "SELECT r.id, r.created_utc, r.git_commit, r.machine_id, r.reference_version,"
            " r.target_version, r.label, m.instance_id, m.op, m.mode, m.verdict, m.ratio,"
            " m.ci_low, m.ci_high, m.rounds, m.reference_median_s, m.target_median_s,"
            " r.reference_build, r.target_build, r.threads, r.config_json"
            " FROM measurements m JOIN runs r ON r.id = m.run_id"
            " ORDER BY r.id, m.instance_id, m.mode").fetchall()
        return [TrendPoint(*row) for row in rows]

    def samples(self, run_id: int, instance_id: str, mode: str) -> dict[str, list[float]]:
        row = self._db.execute(
            "SELECT samples_json FROM measurements WHERE run_id = ? AND instance_id = ? AND"
            " mode = ?", (run_id, instance_id, mode)).fetchone()
        return json.loads(row[0]) if row and row[0] else {}

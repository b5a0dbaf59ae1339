"""The machine facts a run explains its numbers with, measured once and kept: each side's
per-call floors and sync cost (measure.measure_overhead) and the machine's ceilings
(ceilings.py), in a user cache directory, keyed by what they depend on.

Why: they belong to the machine, the framework builds and the thread count, not to the
run, and measuring them took ~2 s of every `opbench compare` here (the floors in each of 3
worker processes, the 64 MiB copies and the 1024^3 products once; docs/measurement.md).

The key (facts_key): the machine (CPU model, core count, the cores this process may use),
each side's framework, version, build and interpreter with what it reported after its set-up
(threads, launch mode, the cores it was pinned to: framework_info), and the run's device,
threads, launch mode and quiesce setting. Another key is another file; a key that differs
in any part measures again. A file older than MAX_AGE_S, `--remeasure-machine`
(RunConfig.remeasure_machine) or a file that cannot be read also measure again; a corrupt
file is ignored with a warning (MachineFacts.warnings), never a traceback.

Where floors are used (checked before caching them): only in explanations (verdicts/
explain.py's notes, gapmap/attribute.py's cause) and the report; no verdict, interval or
interference test reads them. The record keeps the figures it used, and where they came
from (MachineFacts.provenance: measured now, or read from the cache and when).
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Mapping

from opbench.config import RunConfig
from opbench.config.record_codec import record_from

__all__ = ["CACHE_DIR_ENV", "MAX_AGE", "MEASURED", "CACHED", "MachineFacts",
           "FactsCache", "cache_dir", "machine_identity", "facts_key", "obtain_machine_facts"]

# Moves the cache (tests use a temporary directory); else $XDG_CACHE_HOME/opbench, else
# ~/.cache/opbench.
CACHE_DIR_ENV = "OPBENCH_CACHE_DIR"
# After a week the facts are measured again even when the key matches: what the key cannot
# see (a kernel or firmware update, a changed frequency governor, a new neighbour on a shared
# host) is then noticed within a week, at the cost of ~2 s once a week.
MAX_AGE = timedelta(days=7)
# The file's format; a file of another format is measured over (not an error).
FORMAT = 1

MEASURED = "measured"
CACHED = "cache"

# What a side's framework_info reports that is not a property of the build or the set-up:
# the pool's process count is the run's choice.
_NOT_KEYED = frozenset({"processes"})


@dataclass(frozen=True)
class MachineFacts:
    """Each side's floors and the ceilings, with where they came from."""

    overhead: Mapping[str, Mapping[str, float]]
    ceilings: Mapping[str, Mapping[str, Any]]
    measured_utc: str
    source: str                      # MEASURED (in this run) or CACHED
    cache_file: str | None = None    # where they were kept or read; None: no cache
    warnings: tuple[str, ...] = field(default=())

    def provenance(self) -> dict[str, Any]:
        """What the results record keeps beside the figures (`machine_facts`); not the
        cache file's path, which names the user's home directory."""
        found: dict[str, Any] = {"source": self.source, "measured_utc": self.measured_utc}
        if self.warnings:
            found["warnings"] = list(self.warnings)
        return found


def cache_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """$OPBENCH_CACHE_DIR, else $XDG_CACHE_HOME/opbench, else ~/.cache/opbench."""
    if environ.get(CACHE_DIR_ENV):
        return Path(environ[CACHE_DIR_ENV])
    if environ.get("XDG_CACHE_HOME"):
        return Path(environ["XDG_CACHE_HOME"]) / "opbench"
    return Path.home() / ".cache" / "opbench"


def _cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_identity() -> dict[str, Any]:
    """The machine as the facts depend on it: CPU model, core count, this process's cores."""
    try:
        affinity = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = None
    return {"cpu_model": _cpu_model(), "cores": os.cpu_count(), "affinity": affinity,
            "platform": platform.platform()}


def facts_key(config: RunConfig, framework_info: Mapping[str, Mapping[str, Any]],
              identity: Mapping[str, Any]) -> dict[str, Any]:
    """Everything the floors and ceilings depend on (see the module doc), as plain JSON."""
    sides = {}
    for name in config.frameworks:
        facts = {k: v for k, v in (framework_info.get(name) or {}).items()
                 if k not in _NOT_KEYED}
        facts["framework"] = config.framework_of(name)
        facts["interpreter"] = config.python_of(name) or sys.executable
        if config.python_of(name) is None:
            facts["python_version"] = platform.python_version()
        sides[name] = facts
    return {"machine": dict(identity), "sides": sides, "device": config.device,
            "threads": config.threads, "launch": config.launch, "quiesce": config.quiesce}


def _digest(key: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()


def _utc(text: str) -> datetime:
    when = datetime.fromisoformat(text)
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class _Format:
    """Which format a cache file says it has (read before the rest)."""

    format: Any = None


@dataclass(frozen=True)
class _CacheFile:
    """A cache file's JSON (FactsCache.store writes it): the facts and the key they are
    for. A key missing is a corrupt file (KeyError, caught by load)."""

    key: Any
    measured_utc: str
    overhead: Any
    ceilings: Any
    format: Any = None


class FactsCache:
    """One JSON file per key in `directory`: {format, key, measured_utc, overhead,
    ceilings}."""

    def __init__(self, directory: Path, max_age: timedelta = MAX_AGE):
        self.directory, self.max_age = Path(directory), max_age

    @classmethod
    def from_environment(cls) -> "FactsCache":
        return cls(cache_dir())

    def path_for(self, key: Mapping[str, Any]) -> Path:
        return self.directory / f"machine-facts-{_digest(key)[:16]}.json"

    def load(self, key: Mapping[str, Any], now: datetime
             ) -> tuple[MachineFacts | None, str | None]:
        """The cached facts for `key` (None when there are none, they are too old or the
        file is unusable), and a warning when a file was there but could not be used."""
        path = self.path_for(key)
        try:
            text = path.read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError):
            return None, None
        except OSError as exc:
            return None, f"could not read the machine-facts cache {path} ({exc}): measured again"
        try:
            data = json.loads(text)
            if not isinstance(data, dict) or record_from(_Format, data).format != FORMAT:
                raise ValueError(f"not a format-{FORMAT} machine-facts file")
            stored = record_from(_CacheFile, data)
            measured = _utc(stored.measured_utc)
            overhead, ceilings = stored.overhead, stored.ceilings
            if not isinstance(overhead, dict) or not isinstance(ceilings, dict):
                raise ValueError("overhead and ceilings must be objects")
            # a digest collision or a hand edit: these facts are not for this key
            same_key = json.dumps(stored.key, sort_keys=True, default=str) == \
                json.dumps(key, sort_keys=True, default=str)
        except (ValueError, KeyError, TypeError) as exc:
            return None, (f"ignored a corrupt machine-facts cache file {path} "
                          f"({type(exc).__name__}: {exc}); measured again")
        if not same_key:
            return None, None
        age = now - measured
        if age > self.max_age or age < timedelta(0):
            return None, None
        return MachineFacts(overhead=overhead, ceilings=ceilings,
                            measured_utc=stored.measured_utc, source=CACHED,
                            cache_file=str(path)), None

    def store(self, key: Mapping[str, Any], facts: MachineFacts) -> str | None:
        """Write the facts for `key` atomically; a warning (never an exception) when the
        directory cannot be written."""
        path = self.path_for(key)
        data = {"format": FORMAT, "key": key, "measured_utc": facts.measured_utc,
                "overhead": facts.overhead, "ceilings": facts.ceilings}
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            scratch = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            scratch.write_text(json.dumps(data, indent=1, default=str), encoding="utf-8")
            os.replace(scratch, path)
        except OSError as exc:
            return f"could not keep the machine facts in {path} ({exc}): the next run " \
                   f"measures them again"
        return None


def obtain_machine_facts(session: Any, config: RunConfig, cache: FactsCache | None,
                         now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
                         identity: Callable[[], Mapping[str, Any]] = machine_identity
                         ) -> MachineFacts:
    """The floors and ceilings for an opened MeasuringSession (protocol.py): read from
    `cache` when it holds them for this key, else measured (and kept there). The session's
    `overhead` is set either way: the explanations read it. No cache (None): measured,
    as before the cache existed."""
    key = facts_key(config, session.framework_info(), identity()) if cache else None
    warnings: list[str] = []
    if cache is not None and key is not None and not config.remeasure_machine:
        found, warning = cache.load(key, now())
        warnings += [warning] if warning else []
        if found is not None:
            session.overhead = {name: dict(v) for name, v in found.overhead.items()}
            return found
    overhead = session.measure_overheads()
    ceilings = session.measure_ceilings()
    facts = MachineFacts(overhead=overhead, ceilings=ceilings,
                         measured_utc=now().isoformat(timespec="seconds"), source=MEASURED,
                         cache_file=str(cache.path_for(key)) if cache and key else None)
    if cache is not None and key is not None:
        warning = cache.store(key, facts)
        warnings += [warning] if warning else []
    return MachineFacts(overhead=facts.overhead, ceilings=facts.ceilings,
                        measured_utc=facts.measured_utc, source=MEASURED,
                        cache_file=facts.cache_file, warnings=tuple(warnings))

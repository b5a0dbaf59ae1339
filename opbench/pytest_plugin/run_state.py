"""The one measuring Session of a pytest session, and the records of what ran.

MindSpore honours its thread count only before its first operator, so a process sets the
frameworks up once: the Session is created when the first case item runs (a `pytest tests/`
run that collects no case never imports a framework) and serves every item after it.
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Callable

import pytest

from opbench.cases.case_files import CaseInstance
from opbench.config import RunConfig
from opbench.pytest_plugin.options import PluginOptions
from opbench.runloop.recorded_run import measure_everywhere, open_session
from opbench.runner.machine_facts import FactsCache, obtain_machine_facts
from opbench.runner.raw_records import instance_header
from opbench.runner.session import Session
from opbench.verdicts.rules import Verdict

SessionFactory = Callable[[RunConfig], "Session | None"]
# Keep a framework's start-up failure to its first lines: what is missing or wrong is said
# there; the rest is the framework's own stack.
MAX_ERROR_LINES = 3


class RunState:
    """Lazily opened Session; `run(instance)` always returns a record, never raises for a
    problem of the frameworks or the case (those become verdict ERROR with the message)."""

    def __init__(self, options: PluginOptions, make_session: SessionFactory):
        self.options = options
        self.run_config = options.run_config
        self._make_session = make_session
        self._session: Session | None = None
        self._setup_error: str | None = None
        # wall seconds the frameworks' set-up took (opening, per-call floors); None until
        # a case item opened the session
        self.setup_s: float | None = None
        self.records: list[dict[str, Any]] = []    # every finished item's record, in order
        # pytest-xdist controller: each worker's results record, by worker id, and
        # pytest-benchmark's session when the controller feeds it (xdist_isolation.py)
        self.worker_records: dict[str, dict[str, Any]] = {}
        self.controller_benchmarks: Any = None
        # Case files that failed to load: reported as collection errors that do not stop
        # the other files from running (see pytest_plugin.pytest_runtestloop).
        self.case_file_errors = 0

    @property
    def opened(self) -> Session | None:
        return self._session

    def session(self) -> Session | None:
        """The opened Session, or None when setting it up failed (see setup_error)."""
        if self._session is None and self._setup_error is None:
            started = time.perf_counter()
            try:
                # A Session supplied by the hook measures in this process.
                session = self._make_session(replace(self.run_config, processes=1))
                if session is None:
                    # the run's worker processes (or this process with --opbench-processes 1)
                    session = open_session(self.run_config)
                else:
                    session.open()
                if self.run_config.timing:
                    # the floors from the machine-facts cache when it holds them (else
                    # measured and kept), as `opbench run` does
                    obtain_machine_facts(session, self.run_config,
                                         FactsCache.from_environment())
            except Exception as exc:  # FrameworkUnavailable, DeviceUnavailable, a crash
                self._setup_error = (f"cannot set up {' and '.join(self.run_config.frameworks)}"
                                     f" on {self.run_config.device}: {short_error(exc)}")
            else:
                self._session = session
                self.setup_s = round(time.perf_counter() - started, 3)
        return self._session

    def close(self) -> None:
        """End the worker processes, if the session has any."""
        if self._session is not None:
            self._session.close()

    @property
    def setup_error(self) -> str | None:
        return self._setup_error

    def run(self, instance: CaseInstance) -> dict[str, Any]:
        session = self.session()
        if session is None:
            return error_record(instance, self.run_config, self._setup_error or "no session")
        problems = session.check_apis([instance])
        if problems:
            return error_record(instance, self.run_config, "\n".join(problems))
        # every pass of every process for this item now: an item is measured whole
        return measure_everywhere(session, instance)


def error_record(instance: CaseInstance, run_config: RunConfig, message: str) -> dict[str, Any]:
    record = instance_header(instance, run_config)
    record["verdict"] = Verdict.ERROR.value
    record["error"] = message
    record["duration_s"] = 0.0
    return record


def short_error(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    lines = [line for line in text.splitlines() if line.strip()][:MAX_ERROR_LINES]
    head = " ".join(lines)
    # The adapters' own exceptions carry user-facing messages; anything else is named.
    if type(exc).__name__ in ("FrameworkUnavailable", "DeviceUnavailable", "ValueError"):
        return head
    return f"{type(exc).__name__}: {head}"


RUN_STATE = pytest.StashKey[RunState]()

"""A run recorded: every instance measured through a session (this process or worker
processes), judged, and kept in a results record that is rewritten atomically after every
instance and every pass, so an interrupt or a crash keeps what was measured.

This is the one execute-and-record path: `opbench run`/`compare`/`check`, the gate and
scripts (`opbench.run`) go through it; the pytest front door measures one item at a time
through measure_instance/measure_everywhere below. It never prints: progress goes to
callbacks.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Callable, Sequence

from opbench.cases.case_files import CaseInstance
from opbench.config import RunConfig
from opbench.results.io import new_record, utc_now
from opbench.results.records import InstanceRecord, RunRecord
from opbench.results.safe_write import ResilientSaver
from opbench.runloop.scheduler import InstanceCallback, schedule
from opbench.runloop.sequential_run import EarlyStop, LookCallback, mark_decided, run_sequential
from opbench.runner.measure import Clock
from opbench.runner.injection import Injection, InjectingSession
from opbench.runner.machine_facts import FactsCache, MachineFacts, obtain_machine_facts
from opbench.runner.protocol import MeasuringSession
from opbench.runner.session import ApiError, Session
from opbench.runner.workers import worker_pool
from opbench.verdicts.conclusions import apply_between_process_prior, judge_instance

__all__ = ["run", "run_passes", "open_session", "check_only", "measure_instance",
           "extend_instance", "measure_everywhere", "InstanceCallback", "PassCallback"]


def measure_instance(session: MeasuringSession, instance: CaseInstance) -> dict[str, Any]:
    """Pass 1 of an instance (check, calibrate, first share of rounds), judged."""
    return judge_instance(session.run_instance(instance), session.config, session.overhead)


def extend_instance(session: MeasuringSession, instance: CaseInstance,
                    record: dict[str, Any], pass_index: int) -> dict[str, Any]:
    """A later pass's rounds pooled into an instance's record, judged again."""
    extended = session.extend_instance(instance, record, pass_index)
    if not extended.get("measurements"):
        return extended
    return judge_instance(extended, session.config, session.overhead)


def measure_everywhere(session: MeasuringSession, instance: CaseInstance) -> dict[str, Any]:
    """Every pass of every process for one instance, back to back: for front doors that
    measure one instance at a time (pytest items)."""
    record = measure_instance(session, instance)
    for pass_index in range(2, session.total_passes + 1):
        record = extend_instance(session, instance, record, pass_index)
    return record


# run()'s default: the machine-facts cache of the environment (machine_facts.cache_dir).
FROM_ENVIRONMENT = "environment"


def machine_facts(session: MeasuringSession, config: RunConfig,
                  facts_cache: "FactsCache | None | str" = FROM_ENVIRONMENT) -> MachineFacts:
    """The per-call floors and ceilings for an opened session (its `overhead` set), as every
    run and gate stage gets them: from the machine-facts cache when it holds them for this
    machine and these builds, else measured now and kept (runner/machine_facts.py).
    facts_cache: FROM_ENVIRONMENT (the user's cache directory), a FactsCache, or None
    (measured every time)."""
    cache = FactsCache.from_environment() if facts_cache == FROM_ENVIRONMENT else facts_cache
    return obtain_machine_facts(session, config, cache,
                                now=lambda: datetime.fromisoformat(utc_now()))


# on_pass(pass_index, passes, measured, decided): before each later pass, how many instances
# it measures again and how many an early stop has already settled (0 without one).
PassCallback = Callable[[int, int, int, int], None]


def run(instances: Sequence[CaseInstance], config: RunConfig, *,
        json_path: str | os.PathLike | None = None,
        on_progress: InstanceCallback | None = None,
        session: MeasuringSession | None = None,
        clock: Clock = time.perf_counter,
        on_pass: PassCallback | None = None,
        on_look: LookCallback | None = None,
        early_stop: EarlyStop | None = None,
        facts_cache: "FactsCache | None | str" = FROM_ENVIRONMENT) -> RunRecord:
    """Run every instance and return the record. With json_path the record is rewritten
    atomically after every instance (and every pass), so an interrupt or crash keeps what
    was measured. on_progress(i, n, instance, record_or_None) is called before (None) and
    after each instance of the first pass; on_pass(pass_index, passes, measured, decided)
    before each later one,
    or under sequential stopping (config.sequential) on_look(process, max_processes,
    undecided, decided, eta_s) before each process after the first (sequential_run.py).
    early_stop: the fixed protocol's instances stop at a process's end once its rule says
    they are decided (run_passes). facts_cache: where the per-call floors and ceilings are
    kept between runs (runner/machine_facts.py; default: the user's cache directory, None:
    measured every run). Raises ApiError before timing anything if an API does not
    resolve."""
    owned = session is None
    if session is None:
        session = open_session(config, clock)
    try:
        cache = FactsCache.from_environment() if facts_cache == FROM_ENVIRONMENT \
            else facts_cache
        return _run_opened(session, instances, config, json_path, on_progress, on_pass,
                           on_look, early_stop, cache)
    finally:
        if owned:
            session.close()


def open_session(config: RunConfig, clock: Clock = time.perf_counter,
                 injection: Injection | None = None) -> MeasuringSession:
    """An opened Session in this process, or, with config.processes > 1, an opened pool of
    worker processes (workers.py): the two MeasuringSessions. Its `setup_s` says how long the
    opening took (wall time: both frameworks imported in every process). `injection`: the
    gate self-test's slowdown (runner/injection.py), in this process; worker processes read
    it from their environment."""
    session: MeasuringSession
    if config.in_workers:
        session = worker_pool(config)
    elif injection is not None:
        session = InjectingSession(config, injection, clock=clock)
    else:
        session = Session(config, clock)
    started = time.perf_counter()
    session.open()
    session.setup_s = time.perf_counter() - started
    return session


def _run_opened(session, instances, config, json_path, on_progress, on_pass, on_look=None,
                early_stop=None, facts_cache=None):
    problems = session.check_apis(instances)
    if problems:
        raise ApiError("\n".join(problems))
    started = time.perf_counter()
    # the floors and ceilings: from the cache when it holds them for this machine and these
    # builds, else measured now (and kept); the record keeps the figures and their source
    facts = machine_facts(session, config, facts_cache) if config.timing else None
    record = new_record(config.as_dict(), session.framework_info(),
                        dict(facts.overhead) if facts else {})
    if facts is not None:
        record["ceilings"] = dict(facts.ceilings)
        record["machine_facts"] = facts.provenance()
    # Wall time before the first instance: it does not shrink with workers or shorter
    # selections, and the report says so (report.timing_notes).
    if getattr(session, "setup_s", None) is not None:
        record["setup_s"] = round(session.setup_s + time.perf_counter() - started, 3)
    # A failed write is retried at every save and does not stop the run (safe_write.py).
    saver = ResilientSaver(json_path, record) if json_path else None
    save = saver or (lambda: None)
    save()
    try:
        if config.sequential is not None and config.timing:
            run_sequential(session, instances, record["instances"], save=save,
                           on_progress=on_progress, on_look=on_look)
        else:
            run_passes(session, instances, record["instances"], save=save,
                       on_progress=on_progress, on_pass=on_pass, early_stop=early_stop)
    except BaseException:
        # KeyboardInterrupt or a crash outside an instance: keep what was measured
        record["interrupted"] = True
        record["finished_utc"] = utc_now()
        save()
        raise
    record["instances"], prior = apply_between_process_prior(record["instances"], config)
    if prior is not None:
        record["between_process_prior"] = {"sd": prior.sd, "df": prior.df,
                                           "instances": prior.instances}
    record["complete"] = True
    record["finished_utc"] = utc_now()
    if saver:
        saver.finish()   # raises ResultsNotSaved (carrying the record) if it still fails
    return RunRecord.from_dict(record)


def run_passes(session: MeasuringSession, instances: Sequence[CaseInstance],
               records: list[dict[str, Any]], *, save: Callable[[], None] = lambda: None,
               on_progress: InstanceCallback | None = None,
               on_pass: PassCallback | None = None,
               early_stop: EarlyStop | None = None) -> list[dict[str, Any]]:
    """Pass 1 runs each instance whole (check, calibration, its share of the rounds) and
    appends its record to `records`; passes 2..N visit the measured instances again in the
    same order and add rounds (Session.extend_instance). N is config.passes for a Session,
    passes x processes for a worker pool (its `total_passes`: every process makes its
    passes through the whole selection in turn, so an instance's shares lie minutes apart
    on a long run, across the machine's slow drift). save() runs after every instance of
    every pass. early_stop: at the end of each worker process but the last, the instances
    its rule names as decided are measured no more (their records say so: `sequential`);
    a Session (one process) has no such point."""
    return schedule(session, instances, records, FixedPasses(on_pass, early_stop),
                    save=save, on_progress=on_progress)


@dataclass(frozen=True)
class FixedPasses:
    """The scheduler's rule for the fixed protocol (run_passes): every pass of every
    process, an instance leaving early only when `early_stop` settles it at a process's
    end."""

    on_pass: PassCallback | None = None
    early_stop: EarlyStop | None = None

    def judged(self, session: MeasuringSession, record: dict[str, Any], visit: int,
               records: Sequence[dict[str, Any]]) -> dict[str, Any]:
        if visit > 1 and not record.get("measurements"):
            return record
        return judge_instance(record, session.config, session.overhead)

    def opened(self, records: list[dict[str, Any]], first: int, count: int) -> list[int]:
        return list(range(count))

    def later_visits(self, session: MeasuringSession) -> Sequence[int]:
        return range(2, (session.total_passes if session.config.timing else 1) + 1)

    def look(self, session: MeasuringSession, visit: int, records: list[dict[str, Any]],
             first: int, open_: list[int], share_s: dict[int, float],
             elapsed_s: float) -> list[int] | None:
        per_process = session.config.passes
        if self.early_stop is not None and (visit - 1) % per_process == 0:
            open_ = _stop_decided(self.early_stop, (visit - 1) // per_process, records,
                                  first, open_)
            if not open_:
                return None
        if self.on_pass:
            passes = session.total_passes if session.config.timing else 1
            self.on_pass(visit, passes, len(open_), len(records) - first - len(open_))
        return open_

    def closed(self, record: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        return record, False

    def finish(self, records: list[dict[str, Any]], first: int, open_: list[int]) -> None:
        return None


def _stop_decided(early_stop: EarlyStop, processes: int, records: list[dict[str, Any]],
                  first: int, open_: list[int]) -> list[int]:
    """The look after `processes` worker processes: the open instances its rule settles
    (among records[first:], this run's) are marked; the offsets still open."""
    settled = set(early_stop.settled(processes, records[first:]))
    still = []
    for offset in open_:
        if records[first + offset].get("id") in settled:
            records[first + offset] = mark_decided(records[first + offset], processes,
                                                   early_stop.confidences[processes - 1])
        else:
            still.append(offset)
    return still


def check_only(config: RunConfig) -> RunConfig:
    return replace(config, timing=False)

"""A run that stops each instance on its verdict (config.Sequential, verdicts/sequential.py).

Process 1 measures every instance (check, calibration, its first share of rounds) and
looks: an instance whose interval, at the look's spent confidence, is already wholly on one
side of the threshold stops there. Process 2 measures only the undecided ones, and so on:
the time the decided instances no longer take goes to the undecided as more processes
(the between-process spread is what keeps their intervals wide), up to the cap
(max_processes) and within the time budget. Processes beyond the pool's own are fresh
workers started when first needed (WorkerPool.ensure_process).

Every instance record gets `sequential`: the processes it was measured in, why it stopped
(decided, cap, budget, failed) and the look's confidence. Never prints: progress goes to
callbacks.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Collection, Mapping, Sequence

from opbench.cases.case_files import CaseInstance
from opbench.config import Sequential
from opbench.results.records import InstanceSequence
from opbench.runloop.scheduler import InstanceCallback, schedule
from opbench.runner.protocol import MeasuringSession
from opbench.verdicts.conclusions import (InstanceState, judge_instance,
                                          run_between_process_prior)
from opbench.verdicts.rules import Verdict
from opbench.verdicts.sequential import decided, look_for

__all__ = ["EarlyStop", "InstanceCallback", "LookCallback", "SequentialStop", "is_settled",
           "mark_decided", "run_sequential", "with_course",
           "STOPPED_BUDGET", "STOPPED_CAP",
           "STOPPED_DECIDED", "STOPPED_FAILED"]

STOPPED_DECIDED = "decided"     # PASS or SLOW at a look
STOPPED_CAP = "cap"             # still undecided after max_processes
STOPPED_BUDGET = "budget"       # still undecided when the time budget ran out
STOPPED_FAILED = "failed"       # MISMATCH or ERROR: more processes cannot change it

# on_look(process, max_processes, undecided, decided, eta_s): before each process after the
# first, how many instances it will measure, how many are settled, and how long the
# undecided took in the previous process (the next one's duration, up to a fresh start).
LookCallback = Callable[[int, int, int, int, float], None]


@dataclass(frozen=True)
class EarlyStop:
    """Early stopping inside a fixed protocol's passes (recorded_run.run_passes): at the end
    of each worker process but the last, `settled(processes, records)` names the instances
    (by id) whose verdict a rule above this layer already decides (the gate's evidence
    rules: runloop/gate_early_stop.py), and they are measured no more. `confidences`: each planned
    look's spent confidence (verdicts/sequential.look_confidences), one per process, the
    one a stopped instance was judged at recorded with it."""

    settled: Callable[[int, Sequence[dict[str, Any]]], Collection[str]]
    confidences: tuple[float, ...]


def mark_decided(record: Mapping[str, Any], processes: int, confidence: float
                 ) -> dict[str, Any]:
    """A new instance record saying it stopped at the look after its `processes`-th
    process."""
    return {**record, "sequential": {"processes": processes, "stopped": STOPPED_DECIDED,
                                     "look_confidence": confidence}}


def run_sequential(session: MeasuringSession, instances: Sequence[CaseInstance],
                   records: list[dict[str, Any]], *, save: Callable[[], None] = lambda: None,
                   on_progress: InstanceCallback | None = None,
                   on_look: LookCallback | None = None,
                   clock: Callable[[], float] = time.perf_counter) -> list[dict[str, Any]]:
    """Measure `instances` process by process, each until its verdict is decided, appending
    their records to `records` (saved after every instance of every process)."""
    if session.config.sequential is None:
        raise ValueError("run_sequential needs config.sequential")
    return schedule(session, instances, records,
                    SequentialStop(session.config.sequential, on_look), save=save,
                    on_progress=on_progress, clock=clock)


@dataclass(frozen=True)
class SequentialStop:
    """The scheduler's rule for sequential stopping (the module doc): a visit is a process;
    an instance leaves when its verdict is decided (with_course), the run ends at the cap or
    when the next process would overrun the time budget."""

    plan: Sequential
    on_look: LookCallback | None = None

    def judged(self, session: MeasuringSession, record: dict[str, Any], visit: int,
               records: Sequence[dict[str, Any]]) -> dict[str, Any]:
        return _judged(session, record, visit, records)

    def opened(self, records: list[dict[str, Any]], first: int, count: int) -> list[int]:
        for i in range(count):
            records[first + i] = with_course(records[first + i])
        return [i for i in range(count) if not is_settled(records[first + i])]

    def later_visits(self, session: MeasuringSession) -> Sequence[int]:
        return range(2, self.plan.max_processes + 1)

    def look(self, session: MeasuringSession, visit: int, records: list[dict[str, Any]],
             first: int, open_: list[int], share_s: dict[int, float],
             elapsed_s: float) -> list[int] | None:
        next_s = sum(share_s[i] for i in open_)
        budget = self.plan.time_budget_s
        if budget is not None and elapsed_s + next_s > budget:
            return None
        if self.on_look:
            self.on_look(visit, self.plan.max_processes, len(open_),
                         len(records) - first - len(open_), next_s)
        ensure = getattr(session, "ensure_process", None)   # a worker pool's
        if ensure is not None:
            ensure(visit)
        return list(open_)

    def closed(self, record: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        # the record saved is the judged one; whether it is settled is written after
        course = with_course(record)
        return course, is_settled(course)

    def finish(self, records: list[dict[str, Any]], first: int, open_: list[int]) -> None:
        for i in open_:
            record = records[first + i]
            stopped = (STOPPED_CAP if _processes(record) >= self.plan.max_processes
                       else STOPPED_BUDGET)
            course = InstanceState.of(record).sequential
            records[first + i] = {**record, "sequential": {**course, "stopped": stopped}}


def _judged(session: MeasuringSession, record: dict[str, Any], process: int,
            records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The record judged at the look after its `process`-th process, with the run's
    between-process spread as measured so far."""
    config = session.config
    if not InstanceState.of(record).measurements:
        return judge_instance(record, config, session.overhead)
    look = look_for(min(process, _processes(record)), config.sequential.max_processes,
                    run_between_process_prior(records, config))
    judged = judge_instance(record, config, session.overhead, look)
    judged["sequential"] = {"processes": _processes(judged), "stopped": None,
                            "look_confidence": look.confidence}
    return judged


def _processes(record: Mapping[str, Any]) -> int:
    """Processes the instance's rounds came from (the fewest over its measurements)."""
    return InstanceState.of(record).processes


def with_course(record: Mapping[str, Any]) -> dict[str, Any]:
    """A new record whose `sequential` entry (added when absent) says whether the instance
    measures no more: stopped "failed" or "decided", or None while it goes on."""
    state = InstanceState.of(record)
    verdict = state.verdict
    course = dict(state.sequential or {"processes": state.processes,
                                       "stopped": None, "look_confidence": None})
    if verdict in (Verdict.MISMATCH.value, Verdict.ERROR.value) or not state.measurements:
        course["stopped"] = STOPPED_FAILED
    # every view decided, not just the instance's worst: a SLOW serial row would otherwise
    # stop a forward+backward row still INCONCLUSIVE (seen on 11 instances of the library)
    elif decided(verdict) and all(decided(outcome.verdict)
                                  for outcome in state.outcomes().values()):
        course["stopped"] = STOPPED_DECIDED
    return {**record, "sequential": course}


def is_settled(record: Mapping[str, Any]) -> bool:
    """The instance measures no more (with_course said why)."""
    course = InstanceState.of(record).sequential
    if course is None:
        raise KeyError("sequential")      # with_course has not seen the record
    return InstanceSequence.from_dict(course, "sequential").stopped is not None

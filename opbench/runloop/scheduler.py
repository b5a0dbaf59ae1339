"""The run loop's one scheduler: every instance measured once (pass 1: its check,
calibration and first share of rounds), then visited again while it is open, a stop rule
deciding at each look which instances measure no more and when the run ends.

The rules (a StopRule each):
  FixedPasses (recorded_run.py)   the fixed protocol: every pass of every worker process in
                                  turn; with the gate's evidence (EarlyStop) an instance its
                                  rule settles leaves at a process's end
  SequentialStop (sequential_run.py)   process by process until each verdict is decided
                                  (verdicts/sequential.py's looks), up to a cap and within a
                                  time budget
A new rule is a class with these five methods; the scheduler saves after every instance of
every visit and never prints (progress goes to callbacks).
"""
from __future__ import annotations

import time
from typing import Any, Callable, Protocol, Sequence

from opbench.cases.case_files import CaseInstance
from opbench.results.records import InstanceRecord
from opbench.runner.protocol import MeasuringSession

__all__ = ["InstanceCallback", "StopRule", "schedule"]

# on_progress(i, n, instance, record): before (None) and after each instance of the first
# pass or process, with the instance's record as the results file will hold it.
InstanceCallback = Callable[[int, int, CaseInstance, "InstanceRecord | None"], None]


class StopRule(Protocol):
    """When an instance has been measured enough. `records` is the run's list (earlier
    selections' records first); `ours` the offsets of this selection's in it (`first` +
    offset); `share_s[offset]` how long the instance's last visit took."""

    def judged(self, session: MeasuringSession, record: dict[str, Any], visit: int,
               records: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """An instance's record after visit `visit` (1: pass 1), judged as the rule
        judges: this is the record saved."""

    def opened(self, records: list[dict[str, Any]], first: int, count: int) -> list[int]:
        """After pass 1: the offsets still open (the rule may rewrite their records)."""

    def later_visits(self, session: MeasuringSession) -> Sequence[int]:
        """The visits after pass 1, in order (each passed to session.extend_instance)."""

    def look(self, session: MeasuringSession, visit: int, records: list[dict[str, Any]],
             first: int, open_: list[int], share_s: dict[int, float],
             elapsed_s: float) -> list[int] | None:
        """Before visit `visit`: the offsets it measures (the rule may settle some and
        rewrite their records), or None when the run ends here."""

    def closed(self, record: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """After a visit's record was saved: the record kept (the rule may add what it
        decided) and whether the instance measures no more."""

    def finish(self, records: list[dict[str, Any]], first: int, open_: list[int]) -> None:
        """After the last visit: the still open instances' records completed."""


def schedule(session: MeasuringSession, instances: Sequence[CaseInstance],
             records: list[dict[str, Any]], rule: StopRule, *,
             save: Callable[[], None] = lambda: None,
             on_progress: InstanceCallback | None = None,
             clock: Callable[[], float] = time.perf_counter) -> list[dict[str, Any]]:
    """Measure `instances` under `rule`, appending their records to `records` (saved after
    every instance of every visit); returns this selection's records."""
    started = clock()
    first = len(records)
    share_s: dict[int, float] = {}
    for i, inst in enumerate(instances):
        if on_progress:
            on_progress(i, len(instances), inst, None)
        before = clock()
        records.append(rule.judged(session, session.run_instance(inst), 1, records))
        share_s[i] = clock() - before
        save()
        if on_progress:
            on_progress(i, len(instances), inst, InstanceRecord.from_dict(records[-1]))
    open_ = rule.opened(records, first, len(instances))
    for visit in rule.later_visits(session):
        if not open_:
            break
        chosen = rule.look(session, visit, records, first, open_, share_s, clock() - started)
        if chosen is None:
            break
        still = []
        for offset in chosen:
            before = clock()
            # a new record each visit (the session pools into a copy; the judge writes anew)
            extended = session.extend_instance(instances[offset], records[first + offset],
                                               visit)
            records[first + offset] = rule.judged(session, extended, visit, records)
            share_s[offset] = clock() - before
            save()
            records[first + offset], done = rule.closed(records[first + offset])
            if not done:
                still.append(offset)
        open_ = still
    rule.finish(records, first, open_)
    return records[first:]

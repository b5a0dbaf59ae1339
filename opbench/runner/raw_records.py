"""The raw records a session writes for each instance and each of its measurements, before
anything is judged.

The session (session.py) measures; this module turns what was measured into record fields:
the instance header, and a measurement's raw rounds with where each came from (pass,
process, the wait before each sample) and the protocol's own notes as a frozen
RawMeasurement, a later pass's rounds pooled into a new one. Statistics and verdicts are
judged by opbench/verdicts/conclusions.py into new records. Pure: measure()'s results in,
frozen values and dicts out; shared with the worker processes (workers.py builds headers
for failed instances).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from opbench.cases.case_files import CaseInstance
from opbench.config.record_codec import decoded, record_from
from opbench.runner.check import CheckResult
from opbench.runner.measure import ROUNDS_CUT_NOTE, MeasuredRounds, MoreRounds
from opbench.runner.core_use import effective_cores, samples_over

if TYPE_CHECKING:   # runner imports this module
    from opbench.config import RunConfig

__all__ = ["BACKWARD_SUFFIX", "RawInstance", "RawMeasurement", "instance_header", "jsonable",
           "key_mode", "output_shapes", "protocol_notes"]

BACKWARD_SUFFIX = "+backward"


def _tuple(value: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(value)


def _tuples(value: Sequence[Sequence[Any]]) -> tuple[tuple[Any, ...], ...]:
    return tuple(tuple(v) for v in value)


def _tuples_by_name(value: Mapping[str, Sequence[Any]]) -> dict[str, tuple[Any, ...]]:
    return {name: tuple(v) for name, v in value.items()}


@dataclass(frozen=True)
class RawMeasurement:
    """A measurement's raw rounds and where each came from (pass, process, the wait before
    each sample, the CPU time it took), before anything is judged: `first` makes it from
    pass 1's share, `pooled` makes a new one with a later share's rounds added, and
    `as_dict` is the record the results file keeps (verdicts/conclusions.py adds the
    statistics and notes to a copy)."""

    # `decoded`: how `of` reads the field back from a measurement record (record_codec)
    mode: str
    loops: int
    rounds_requested: int
    rounds_per_pass: int
    threshold: float
    samples_s: Mapping[str, tuple[float, ...]] = field(metadata=decoded(_tuples_by_name))
    order: tuple[tuple[str, ...], ...] = field(metadata=decoded(_tuples))
    pass_of_round: tuple[int, ...] = field(metadata=decoded(_tuple))
    warmup_calls: Mapping[str, int]
    calibration: Mapping[str, Any]
    # () in a record written before processes: every round from process 1 (`of` fills it)
    process_of_round: tuple[Any, ...] = field(default=(), metadata=decoded(_tuple, True))
    passes: int = 1
    # the wait before each sample (None: no settle), aligned with samples_s; timed-out waits
    settle_s: Mapping[str, tuple[float | None, ...]] = field(
        default_factory=dict, metadata=decoded(_tuples_by_name))
    settle_timed_out: Mapping[str, int] = field(default_factory=dict, metadata=decoded(dict))
    # each sample's process CPU seconds (None where a share had no CPU clock); None: no
    # share had one, and the record says nothing of cores
    cpu_s: Mapping[str, tuple[float | None, ...]] | None = field(
        default=None, metadata=decoded(_tuples_by_name))
    allowed_cores: int | None = None
    protocol_notes: tuple[str, ...] = field(default=(), metadata=decoded(_tuple))

    @classmethod
    def first(cls, m: MeasuredRounds, threshold: float, rounds_requested: int,
              process_index: int, allowed_cores: int | None = None,
              notes: Sequence[str] = ()) -> "RawMeasurement":
        """The record of pass 1's share in one process."""
        c = m.calibration
        raw = cls(mode=m.mode, loops=m.loops, rounds_requested=rounds_requested,
                  rounds_per_pass=m.rounds, threshold=threshold,
                  samples_s={n: tuple(v) for n, v in m.per_call_s.items()},
                  order=tuple(tuple(o) for o in m.order), pass_of_round=(1,) * m.rounds,
                  process_of_round=(process_index,) * m.rounds,
                  warmup_calls=dict(m.warmup_calls),
                  calibration={"target_sample_time_s": c.target_sample_time_s,
                               "clock_resolution_s": c.clock_resolution_s,
                               "sync_cost_s": c.sync_cost_s,
                               "probes": [{"loops": lp, "sample_s": t} for lp, t in c.probes]},
                  protocol_notes=tuple(notes))
        return raw._with_settled(m.settled)._with_cpu(m.cpu_s, allowed_cores)

    @classmethod
    def of(cls, m: Mapping[str, Any]) -> "RawMeasurement":
        """A measurement record's raw part again (a later pass pools into it; the
        statistics and notes it carries are redone by the judge)."""
        raw = record_from(cls, m)
        if not raw.process_of_round:
            raw = replace(raw, process_of_round=(1,) * raw.rounds)
        return raw

    @property
    def rounds(self) -> int:
        return len(self.order)

    def pooled(self, extra: MoreRounds, pass_index: int, process_index: int,
               allowed_cores: int | None = None) -> "RawMeasurement":
        """A new record with a later share's rounds added, with their pass, process and
        waits; the judge redoes the statistics."""
        added = len(extra.order)
        raw = replace(self,
                      samples_s={n: v + tuple(extra.per_call_s.get(n, ()))
                                 for n, v in self.samples_s.items()},
                      order=self.order + tuple(tuple(o) for o in extra.order),
                      pass_of_round=self.pass_of_round + (pass_index,) * added,
                      process_of_round=self.process_of_round + (process_index,) * added,
                      passes=max(self.passes, pass_index))
        return raw._with_settled(extra.settled)._with_cpu(extra.cpu_s, allowed_cores)

    def _with_settled(self, settled: Mapping[str, Sequence[Any]]) -> "RawMeasurement":
        """Each sample's pre-sample wait (seconds) and whether it timed out, aligned with
        samples_s, so a reader can see how long the other side's leftovers lasted."""
        waits, timed_out = dict(self.settle_s), dict(self.settle_timed_out)
        for name, results in settled.items():
            waits[name] = waits.get(name, ()) + tuple(
                None if r is None else round(r.waited_s, 6) for r in results)
            timed_out[name] = timed_out.get(name, 0) + sum(
                1 for r in results if r is not None and r.timed_out)
        return replace(self, settle_s=waits, settle_timed_out=timed_out)

    def _with_cpu(self, cpu_s: Mapping[str, Sequence[float]],
                  allowed_cores: int | None) -> "RawMeasurement":
        """The share's CPU seconds appended (nulls where a share had no CPU clock, so they
        stay aligned with samples_s), once any share had a CPU clock."""
        if not cpu_s and self.cpu_s is None:
            return self
        rounds_before = self.rounds - len(next(iter(cpu_s.values()), ()))
        kept = {}
        for name in self.samples_s:
            values = (self.cpu_s or {}).get(name, ())
            values += (None,) * (rounds_before - len(values))   # shares without a CPU clock
            kept[name] = values + tuple(cpu_s.get(name, (None,) * (self.rounds - len(values))))
        return replace(self, cpu_s=kept,
                       allowed_cores=self.allowed_cores if allowed_cores is None
                       else allowed_cores)

    def as_dict(self) -> dict[str, Any]:
        """The measurement's record, in the order the results file has always had it."""
        record = {
            "mode": self.mode,
            "loops": self.loops,
            "rounds": self.rounds,
            "rounds_requested": self.rounds_requested,
            "passes": self.passes,
            "rounds_per_pass": self.rounds_per_pass,
            "pass_of_round": list(self.pass_of_round),
            "processes": len(set(self.process_of_round)),
            "process_of_round": list(self.process_of_round),
            "samples_s": {n: list(v) for n, v in self.samples_s.items()},
            "order": [list(o) for o in self.order],
            "warmup_calls": dict(self.warmup_calls),
            "calibration": self.calibration,
            "threshold": self.threshold,
            "settle_s": {n: list(v) for n, v in self.settle_s.items()},
            "settle_timed_out": dict(self.settle_timed_out),
        }
        if self.cpu_s is not None:
            record.update(self._core_use())
        record["protocol_notes"] = list(self.protocol_notes)
        return record

    def _core_use(self) -> dict[str, Any]:
        """Each sample's process CPU seconds, each side's effective cores over all its
        samples (CPU time over wall time) and how many of its samples used more cores than
        the run allows (pinning.py)."""
        cpu = {n: list(v) for n, v in (self.cpu_s or {}).items()}
        walls = {n: [t * self.loops for t in samples] for n, samples in self.samples_s.items()}
        fields: dict[str, Any] = {
            "cpu_s": cpu,
            "effective_cores": {n: (None if (c := effective_cores(cpu[n], walls[n])) is None
                                    else round(c, 3)) for n in cpu}}
        if self.allowed_cores is not None:
            fields["allowed_cores"] = self.allowed_cores
            fields["samples_over_cores"] = {n: samples_over(cpu[n], walls[n],
                                                            self.allowed_cores) for n in cpu}
        return fields


@dataclass(frozen=True)
class RawInstance:
    """What the runner recorded for one instance, before anything is judged: what it is
    (`header`, instance_header), how its outputs and gradients compared, each measurement's
    raw rounds, each side's peak memory, what failed and how long it all took. A stage that
    never ran stays None and writes no key; `as_dict` is the record in the order the results
    file has always had it (the judge, verdicts/conclusions.py, makes a new one from it)."""

    header: Mapping[str, Any]
    check: CheckResult | None = None
    output_shapes: Any = None                 # one shape, or one per output of a tuple
    grad_check: CheckResult | None = None
    threshold: float | None = None
    measurements: Mapping[str, RawMeasurement] | None = None
    peak_memory: Mapping[str, Any] | None = None
    # --profile (profiling.py): measurement key -> side -> its profile entry
    profile: Mapping[str, Any] | None = None
    error: str | None = None
    traceback: str | None = None
    duration_s: float | None = None

    def as_dict(self) -> dict[str, Any]:
        record = dict(self.header)
        if self.error is not None:
            record["error"] = self.error          # the header's key: its place is kept
        if self.check is not None:
            record["check"] = self.check.as_dict()
            record["output_shapes"] = self.output_shapes
        if self.grad_check is not None:
            record["grad_check"] = self.grad_check.as_dict()
        if self.threshold is not None:
            record["threshold"] = self.threshold
        if self.measurements is not None:
            record["measurements"] = {k: m.as_dict() for k, m in self.measurements.items()}
        if self.peak_memory is not None:
            record["peak_memory"] = self.peak_memory
        if self.profile is not None:
            record["profile"] = self.profile
        if self.traceback is not None:
            record["traceback"] = self.traceback
        if self.duration_s is not None:
            record["duration_s"] = self.duration_s
        return record


def protocol_notes(m: MeasuredRounds, config: "RunConfig") -> list[str]:
    """measure()'s notes speak of the first pass's share; restate a cut in totals."""
    if config.shares == 1:
        return list(m.notes)
    notes = [n for n in m.notes if not n.startswith(ROUNDS_CUT_NOTE)]
    if len(notes) < len(m.notes):
        pieces = " x ".join(f"{n} {what}" for n, what in
                            ((config.passes, "passes"), (config.processes, "processes"))
                            if n > 1)
        notes.insert(0, f"{ROUNDS_CUT_NOTE} {config.settings.rounds} to "
                        f"{m.rounds * config.shares} ({m.rounds} in each of {pieces}) to "
                        f"stay within {config.settings.max_time_s:g} s")
    return notes


def key_mode(key: str) -> str:
    """The timing mode of a measurement key ("serial+backward" -> "serial")."""
    return key[:-len(BACKWARD_SUFFIX)] if key.endswith(BACKWARD_SUFFIX) else key


def output_shapes(value: Any) -> Any:
    if isinstance(value, tuple):
        return [output_shapes(v) for v in value]
    return list(np.shape(value))


def instance_header(instance: CaseInstance, config: "RunConfig") -> dict[str, Any]:
    """What identifies an instance in the record, before anything ran, and the case's own
    gate minimum effect: `opbench gate` decides from the records alone (gate/evaluate.py is
    pure). Written as null when the case sets none, so the gate can tell "this case sets
    none now" from "written before the key existed" (absent), which falls back to the
    baseline's."""
    case = instance.case
    return {
        "id": instance.id,
        "case": case.name,
        "op": case.op,
        "file": case.file,
        "line": case.line,
        "tags": list(case.tags),
        "params": jsonable(dict(instance.params)),
        "inputs": [{"name": s.name, "shape": list(s.shape), "dtype": s.dtype, "dist": s.dist}
                   for s in instance.inputs],
        "apis": {n: c.api for n, c in instance.calls.items()},
        "backward": case.backward,
        "min_effect": case.min_effect,
        # the case's declared work (gapmap/work.py counts it from the shapes without)
        "work": dict(case.work) if case.work else None,
        "verdict": None,
        "error": None,
    }


def jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        # JSON has no inf/nan (the file is written with allow_nan=False); the id spells
        # them the same way
        return repr(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)

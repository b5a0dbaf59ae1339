"""The results file as typed, frozen records: RunRecord and its parts, the one loader
(load_results) and the one writer (write_results).

Why: a results file used to be read as nested dicts by string paths all over the package
(`inst["measurements"][key]["summary"][ref]["median_s"]`), so a renamed key failed at run
time, somewhere else. Here every key of opbench/schema/results.schema.json is a typed field
read in one place; the views, the gate, merge and history read attributes.

Round trip: `RunRecord.from_dict(d).to_dict() == d` for every record opbench writes and
reads, with the same key order (kept in `key_order`), absent keys absent and nulls null (the
gate tells "absent" from null for min_effect: `record.has("min_effect")`), numbers as they
were, and keys this opbench does not know kept in `extra`, so a file written by a newer
opbench and rewritten by an older one loses nothing. An absent optional key reads as the
default the schema gives it (config.passes: 1, measurement.notes: ()); a default is not
written back unless the file had the key. Free-form JSON inside a record (an instance's
params, a measurement's calibration, unknown keys) is frozen too: mappings become read-only
mappings, arrays tuples; to_dict gives plain dicts and lists again.

While it measures, the run holds each instance as the dict its frozen values write (the
runner's RawInstance, runner/raw_records.py; the judge's new record, verdicts/conclusions.py:
layers below this one, and worker processes send dicts); every save goes through
write_run_dict, which writes `RunRecord.from_dict(d).to_dict()`: what is written is what this
model reads, and the run loop hands each instance to its callbacks as an InstanceRecord.
Records compare equal when their keys, values and key order are.
"""
from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, ClassVar, Iterator, Mapping, TypeVar

from opbench.config import LAUNCH_QUEUED, Side
from opbench.results.io import (
                                SCHEMA_VERSION,
                                ResultsError,
                                validate_record,
                                write_json_atomic,
                                )
from opbench.verdicts.explain import floor_key
from opbench.verdicts.rules import Verdict

__all__ = ["Ceilings", "Check", "DeclaredWork", "Environment", "FrameworkInfo", "InputSpec",
           "InstanceRecord", "Interference", "Interval", "MIGRATIONS", "Measurement",
           "MachineFactsSource", "MergedPart", "Overhead", "PeakMemory", "ProcessPrior",
           "RecordError",
           "RecordedConfig", "RecordedSettings", "RunRecord", "ShardRecord", "SideSummary",
           "WorkerRecord", "as_plain", "load_results", "migrate", "write_results",
           "write_run_dict"]


class RecordError(ResultsError):
    """Data that does not hold a results record; the message names the key."""


# -- free-form JSON, frozen ------------------------------------------------------------------

_EMPTY: Mapping[str, Any] = MappingProxyType({})


# Concrete types, not typing.Mapping: an ABC check per sample would double a save's cost.
_MAPPINGS = (dict, MappingProxyType)
_ARRAYS = (list, tuple)


def _freeze(value: Any) -> Any:
    if isinstance(value, _MAPPINGS):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, _ARRAYS):
        return tuple(_freeze(v) if isinstance(v, (_MAPPINGS, _ARRAYS)) else v for v in value)
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, _MAPPINGS):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, _ARRAYS):
        return [_thaw(v) if isinstance(v, (_MAPPINGS, _ARRAYS)) else v for v in value]
    return value


# -- how a field is read from JSON and written back ------------------------------------------

@dataclass(frozen=True)
class _Codec:
    decode: Callable[[Any, str], Any]     # (JSON value, where) -> field value
    encode: Callable[[Any], Any]          # field value -> JSON value


_JSON = _Codec(lambda value, where: _freeze(value), _thaw)


def _verdict_of(value: Any, where: str) -> Verdict | None:
    if value is None:
        return None
    try:
        return Verdict(value)
    except ValueError:
        raise RecordError(f"{where}: {value!r} is not a verdict") from None


_VERDICT = _Codec(_verdict_of, lambda v: v.value if isinstance(v, Verdict) else v)

R = TypeVar("R", bound="_Record")


def _one(cls: type[_Record]) -> _Codec:
    return _Codec(lambda value, where: None if value is None else cls.from_dict(value, where),
                  lambda v: None if v is None else v.to_dict())


def _each(cls: type[_Record]) -> _Codec:
    def decode(value: Any, where: str) -> tuple[_Record, ...]:
        if not isinstance(value, (list, tuple)):
            raise RecordError(f"{where}: expected an array, got {type(value).__name__}")
        return tuple(cls.from_dict(v, f"{where}/{i}") for i, v in enumerate(value))
    return _Codec(decode, lambda v: [r.to_dict() for r in v])


def _by_name(cls: type[_Record]) -> _Codec:
    def decode(value: Any, where: str) -> Mapping[str, _Record]:
        if not isinstance(value, _MAPPINGS):
            raise RecordError(f"{where}: expected an object, got {type(value).__name__}")
        return MappingProxyType({k: cls.from_dict(v, f"{where}/{k}") for k, v in value.items()})
    return _Codec(decode, lambda v: {k: r.to_dict() for k, r in v.items()})


_REQUIRED: Any = dataclasses.MISSING


def _key(default: Any = _REQUIRED, codec: _Codec = _JSON) -> Any:
    """A field read from the key of its own name. No default: the schema requires the key."""
    if isinstance(default, _MAPPINGS):     # read-only, but dataclasses cannot tell
        return field(default_factory=lambda: default, metadata={"codec": codec,
                                                                  "default": default})
    return field(default=default, metadata={"codec": codec, "default": default})


# -- the record machinery ---------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class _Record:
    """A JSON object of the results file. Subclasses declare one field per key they know,
    in the order opbench writes them."""

    key_order: tuple[str, ...] = field(default=(), repr=False)   # the keys as read, in order
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, repr=False)  # unknown keys

    _fields_cache: ClassVar[dict[type, dict[str, dataclasses.Field]]] = {}

    @classmethod
    def _known(cls) -> dict[str, dataclasses.Field]:
        known = _Record._fields_cache.get(cls)
        if known is None:
            known = {f.name: f for f in dataclasses.fields(cls) if "codec" in f.metadata}
            _Record._fields_cache[cls] = known
        return known

    @classmethod
    def from_dict(cls: type[R], data: Mapping[str, Any], where: str = "") -> R:
        """The record of one JSON object; RecordError names the key that does not fit."""
        if not isinstance(data, _MAPPINGS):
            raise RecordError(f"{where or '(top level)'}: expected an object, got "
                              f"{type(data).__name__}")
        known = cls._known()
        values: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in data.items():
            f = known.get(key)
            if f is None:
                extra[key] = _freeze(value)
            else:
                values[key] = f.metadata["codec"].decode(value, f"{where}/{key}".lstrip("/"))
        for name, f in known.items():
            if name not in values and f.metadata["default"] is _REQUIRED:
                raise RecordError(f"{where or '(top level)'}: the required key {name!r} is "
                                  f"missing")
        return cls(key_order=tuple(data), extra=MappingProxyType(extra), **values)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object again: the keys as read, in their order, then any key set since
        (dataclasses.replace) that is not at its default."""
        known = self._known()
        out: dict[str, Any] = {}
        for key in self.key_order:
            if key in known:
                out[key] = known[key].metadata["codec"].encode(getattr(self, key))
            elif key in self.extra:
                out[key] = _thaw(self.extra[key])
        for name, f in known.items():
            if name not in out and self._set(name, f):
                out[name] = f.metadata["codec"].encode(getattr(self, name))
        for key, value in self.extra.items():
            if key not in out:
                out[key] = _thaw(value)
        return out

    def _set(self, name: str, f: dataclasses.Field) -> bool:
        default = f.metadata["default"]
        return default is _REQUIRED or getattr(self, name) != default

    def replace(self: R, **changes: Any) -> R:
        """A copy with `changes` (dicts and lists frozen like the ones read)."""
        return dataclasses.replace(self, **{k: _freeze(v) for k, v in changes.items()})

    def has(self, key: str) -> bool:
        """The key is in the record (to_dict writes it), null or not; False when absent."""
        f = self._known().get(key)
        if f is None:
            return key in self.extra
        return key in self.key_order or self._set(key, f)


# -- the parts --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Interval:
    """A ratio (reference time / target time) and its confidence interval."""

    estimate: float
    low: float
    high: float

    def __iter__(self) -> Iterator[float]:
        return iter((self.estimate, self.low, self.high))


@dataclass(frozen=True, kw_only=True)
class SideSummary(_Record):
    """One framework's per-call times over a measurement's rounds (verdicts/stats.summarize)."""

    n: int = _key()
    median_s: float = _key()
    mean_s: float | None = _key(None)
    min_s: float | None = _key(None)
    max_s: float | None = _key(None)
    iqr_s: float | None = _key(None)
    mad_s: float | None = _key(None)
    cv: float | None = _key(None)


@dataclass(frozen=True, kw_only=True)
class Interference(_Record):
    """An order effect or within-process clusters found in a measurement's samples."""

    kind: str = _key()
    side: str = _key()
    effect: float = _key()
    detail: str = _key()


@dataclass(frozen=True, kw_only=True)
class Measurement(_Record):
    """One measured view of an instance (serial, async, serial+backward, async+backward):
    raw rounds and where they came from, each side's summary, the ratio with its interval,
    the verdict and the notes that explain it."""

    mode: str = _key()
    loops: int = _key()
    rounds: int = _key()
    rounds_requested: int | None = _key(None)
    passes: int = _key(1)                                 # absent in older files: 1
    rounds_per_pass: int | None = _key(None)
    pass_of_round: tuple[int, ...] = _key(())
    processes: int | None = _key(None)
    process_of_round: tuple[int | str, ...] = _key(())   # absent: every round from process 1
    samples_s: Mapping[str, tuple[float, ...]] = _key()
    order: tuple[tuple[str, ...], ...] = _key(())
    warmup_calls: Mapping[str, int] = _key(_EMPTY)
    calibration: Mapping[str, Any] = _key(_EMPTY)
    threshold: float = _key()
    settle_s: Mapping[str, tuple[float | None, ...]] = _key(_EMPTY)
    settle_timed_out: Mapping[str, int] = _key(_EMPTY)
    # runner/pinning.py: each sample's process CPU seconds (aligned with samples_s), each
    # side's cores over its samples, the cores the run allows, and how many samples used more
    cpu_s: Mapping[str, tuple[float | None, ...]] = _key(_EMPTY)
    effective_cores: Mapping[str, float | None] = _key(_EMPTY)
    allowed_cores: int | None = _key(None)
    samples_over_cores: Mapping[str, int] = _key(_EMPTY)
    summary: Mapping[str, SideSummary] = _key(codec=_by_name(SideSummary))
    ratio: float = _key()
    ci_low: float = _key()
    ci_high: float = _key()
    confidence: float | None = _key(None)
    coverage: float | None = _key(None)
    method: str | None = _key(None)
    too_few_rounds: bool = _key(False)
    n_processes: int | None = _key(None)
    between_process_sd: float | None = _key(None)       # null: one process
    interference: tuple[Interference, ...] = _key((), _each(Interference))
    inconclusive_reason: str | None = _key(None)
    # Interference was found but every recomputed version gives the same verdict: why it
    # stands (verdicts/conclusions.py). Absent when nothing was found or it decided.
    interference_ruled_out: str | None = _key(None)
    verdict: Verdict = _key(codec=_VERDICT)
    protocol_notes: tuple[str, ...] = _key(())
    notes: tuple[str, ...] = _key(())
    # gate/pool.py: the baseline run each round of a pooled measurement came from
    run_of_round: tuple[int, ...] = _key(())
    # gapmap/figures.py, written by the front door at the end of a run: the cause of a SLOW
    # measurement {kind, basis, overhead_share}, the size-sweep fit it belongs to, and each
    # side's roofline point; absent in older files (the views then compute them)
    cause: Mapping[str, Any] | None = _key(None)
    fit: Mapping[str, Any] | None = _key(None)
    roofline: Mapping[str, Mapping[str, Any]] | None = _key(None)
    # gapmap/figures.py, with --profile: the cause both sides' profiles give a SLOW row
    # {kind: host | kernel | extra kernels, basis, source: profile, agrees_with_sweep}
    profile_cause: Mapping[str, Any] | None = _key(None)

    @property
    def interval(self) -> Interval:
        return Interval(self.ratio, self.ci_low, self.ci_high)

    def median_s(self, side: str) -> float | None:
        """The side's median time per call; None when the measurement has no such side."""
        summary = self.summary.get(side)
        return None if summary is None else summary.median_s


@dataclass(frozen=True, kw_only=True)
class Check(_Record):
    """Outputs (or gradients) of the two frameworks compared before timing."""

    ok: bool = _key()
    max_abs_err: float | None = _key(None)
    max_rel_err: float | None = _key(None)
    rtol: float = _key()
    atol: float = _key()
    detail: str = _key("")
    expected_mismatch: str | None = _key(None)
    # runner/check.py: where the values differ (the flattened output's position, the index
    # of its worst out-of-tolerance element); absent: they agree, or differ in count, shape
    # or dtype kind.
    worst_output: int | None = _key(None)
    worst_index: tuple[int, ...] | None = _key(None)


@dataclass(frozen=True, kw_only=True)
class InputSpec(_Record):
    name: str = _key()
    shape: tuple[int, ...] = _key()
    dtype: str = _key()
    dist: str | None = _key(None)


@dataclass(frozen=True, kw_only=True)
class DeclaredWork(_Record):
    """The case's own work per call (case key work), when it declares one."""

    unit: str = _key()                    # bytes | flops
    per_output_element: float = _key()


@dataclass(frozen=True, kw_only=True)
class PeakMemory(_Record):
    bytes: int | None = _key()
    measure: str | None = _key()
    error: str | None = _key(None)
    # runner/memory.py's CPU probe: malloc's bytes held with the output, the output's own
    malloc_bytes: int | None = _key(None)
    output_bytes: int | None = _key(None)


@dataclass(frozen=True, kw_only=True)
class InstanceSequence(_Record):
    """An instance's course under sequential stopping (runloop/sequential_run.py): the
    processes it was measured in, why it stopped (decided, cap, budget, failed; None while
    it is still measured: the file of a run in progress, or of one killed) and the
    confidence of the look that settled it."""

    processes: int = _key()
    stopped: str | None = _key()
    look_confidence: float | None = _key(None)


@dataclass(frozen=True, kw_only=True)
class InstanceRecord(_Record):
    """One case instance: what it is (case, op, APIs, inputs), how its outputs compared,
    each measured view and the instance's verdict."""

    id: str = _key()
    case: str = _key()
    op: str = _key()
    file: str = _key()
    line: int | None = _key(None)
    tags: tuple[str, ...] = _key(())
    params: Mapping[str, Any] = _key(_EMPTY)
    inputs: tuple[InputSpec, ...] = _key((), _each(InputSpec))
    apis: Mapping[str, str] = _key()
    backward: bool = _key(False)
    # The case's own gate minimum effect. null: the case sets none; absent (has() False):
    # written before the key existed (gate/evaluate.py tells the two apart).
    min_effect: float | None = _key(None)
    work: DeclaredWork | None = _key(None, _one(DeclaredWork))   # null: counted from shapes
    verdict: Verdict | None = _key(codec=_VERDICT)
    error: str | None = _key(None)
    check: Check | None = _key(None, _one(Check))
    output_shapes: Any = _key(None)              # one shape, or one per output of a tuple
    threshold: float | None = _key(None)
    measurements: Mapping[str, Measurement] = _key(_EMPTY, _by_name(Measurement))
    peak_memory: Mapping[str, PeakMemory] = _key(_EMPTY, _by_name(PeakMemory))
    # --profile (runner/profiling.py, opbench/profiles): measurement key -> side -> its
    # profile entry (kernels per call, and gapmap/figures.py's split against the timed call)
    profile: Mapping[str, Mapping[str, Any]] = _key(_EMPTY)
    explanation: tuple[str, ...] = _key(())
    duration_s: float | None = _key(None)
    grad_check: Check | None = _key(None, _one(Check))
    traceback: str | None = _key(None)
    pass_errors: tuple[str, ...] = _key(())
    machine_id: str | None = _key(None)      # a merged record's: the machine it ran on
    worker: str | None = _key(None)          # a record joined from pytest-xdist workers
    pooled_runs: int | None = _key(None)     # gate/pool.py: baseline runs pooled into it
    sequential: InstanceSequence | None = _key(None, _one(InstanceSequence))

    @property
    def measured(self) -> bool:
        """It has timing measurements (not ERROR, MISMATCH or correctness-only)."""
        return bool(self.measurements)

    def failed_check(self) -> Check | None:
        """The comparison that failed, gradients first; None when both agree."""
        for check in (self.grad_check, self.check):
            if check is not None and not check.ok:
                return check
        return None


@dataclass(frozen=True, kw_only=True)
class Environment(_Record):
    opbench: str = _key()
    python: str = _key()
    numpy: str = _key()
    platform: str | None = _key(None)
    cpu_model: str = _key()
    cpu_count: int | None = _key(None)
    machine_id: str | None = _key()
    git_commit: str | None = _key(None)


@dataclass(frozen=True, kw_only=True)
class RecordedSettings(_Record):
    """The protocol's settings as the run recorded them (config.MeasureSettings)."""

    rounds: int | None = _key(None)
    min_sample_time_s: float | None = _key(None)
    warmup_time_s: float | None = _key(None)
    max_time_s: float | None = _key(None)
    max_loops: int | None = _key(None)
    min_rounds: int | None = _key(None)


@dataclass(frozen=True, kw_only=True)
class ShardRecord(_Record):
    """config.shard: shard `index` of `count` of a selection of `of_instances` instances."""

    index: int = _key()
    count: int = _key()
    of_instances: int = _key()
    selection: str = _key()


@dataclass(frozen=True, kw_only=True)
class WorkerRecord(_Record):
    """config.worker: the cores and device a pytest-xdist worker owned."""

    id: str | None = _key(None)
    cpus: tuple[int, ...] | None = _key(None)
    device: str | None = _key(None)
    visible_device: str | None = _key(None)


@dataclass(frozen=True, kw_only=True)
class SequentialRecord(_Record):
    """config.sequential: a run that stopped each instance on its verdict (config.Sequential)."""

    max_processes: int = _key()
    time_budget_s: float | None = _key(None)


@dataclass(frozen=True, kw_only=True)
class RecordedConfig(_Record):
    """The run configuration as recorded (config.RunConfig.as_dict). Absent keys read as
    what a file written before them means."""

    reference: str = _key()
    target: str = _key()
    device: str = _key()
    threads: int = _key()
    modes: tuple[str, ...] = _key()
    threshold: float = _key()
    backward: bool | None = _key(None)
    timing: bool = _key(True)
    launch: str = _key(LAUNCH_QUEUED)
    passes: int = _key(1)
    processes: int = _key(1)
    quiesce: bool = _key(False)
    settings: RecordedSettings = _key(RecordedSettings(), _one(RecordedSettings))
    shard: ShardRecord | None = _key(None, _one(ShardRecord))
    worker: WorkerRecord | None = _key(None, _one(WorkerRecord))
    sequential: SequentialRecord | None = _key(None, _one(SequentialRecord))
    profile: bool = _key(False)          # --profile; absent: off
    # A side in another interpreter; both sides' framework when they share one (the sides
    # are then labels: config.sides). Absent: this interpreter, and the side's own name.
    reference_python: str | None = _key(None)
    target_python: str | None = _key(None)
    reference_framework: str | None = _key(None)
    target_framework: str | None = _key(None)

    @property
    def sides(self) -> tuple[Side, Side]:
        """The two sides as recorded (config.RunConfig's): each its framework, its
        interpreter (None: the run's own) and its name in the record as its label."""
        return (Side(self.reference_framework or self.reference, self.reference_python,
                     self.reference),
                Side(self.target_framework or self.target, self.target_python, self.target))


@dataclass(frozen=True, kw_only=True)
class FrameworkInfo(_Record):
    name: str | None = _key(None)
    version: str | None = _key()
    device: str | None = _key()
    threads: int | None = _key()
    launch: str | None = _key(None)
    processes: int | None = _key(None)
    cpus: tuple[int, ...] | None = _key(None)     # the cores the measuring was pinned to
    # The source commit the framework was built from, where it says (Adapter.build), as the
    # side's own process read it; absent: the framework exposes none (or an older file).
    build: str | None = _key(None)
    # The interpreter the side ran in, when not the run's own (`--target mindspore@PYTHON`,
    # a named environment); absent: the run's interpreter (environment.python).
    python: str | None = _key(None)


@dataclass(frozen=True, kw_only=True)
class Overhead(_Record):
    """A framework's per-call yardsticks: idle sync, trivial-op floors, first call."""

    sync_cost_s: float | None = _key(None)
    dispatch_floor_serial_s: float | None = _key(None)
    dispatch_floor_async_s: float | None = _key(None)
    first_call_serial_s: float | None = _key(None)

    def floor_s(self, key: str) -> float | None:
        """The dispatch floor of a measurement key's mode."""
        return getattr(self, floor_key(key))


@dataclass(frozen=True, kw_only=True)
class Ceilings(_Record):
    """A framework's machine ceilings; only `error` when it could not measure them."""

    memory_bandwidth_bytes_per_s: float | None = _key(None)
    peak_flops_per_s: float | None = _key(None)
    copy_bytes: int | None = _key(None)
    copy_s: float | None = _key(None)
    gemm_n: int | None = _key(None)
    gemm_s: float | None = _key(None)
    threads: int | None = _key(None)
    copy_cores: float | None = _key(None)         # cores used: CPU time over wall time
    gemm_cores: float | None = _key(None)
    # runner/ceilings.py: copy bandwidth at cache sizes ({"L2": {copy_bytes,
    # bandwidth_bytes_per_s}, ...}) and the cache sizes one core sees ({"L1": bytes, ...})
    cache_levels: Mapping[str, Any] = _key(_EMPTY)
    cache_bytes: Mapping[str, int] = _key(_EMPTY)
    error: str | None = _key(None)


@dataclass(frozen=True, kw_only=True)
class MachineFactsSource(_Record):
    """Where a run's overhead and ceilings came from (runner/machine_facts.py)."""

    source: str = _key()                 # "measured" (in this run) or "cache"
    measured_utc: str = _key()
    warnings: tuple[str, ...] = _key(())

    @property
    def cached(self) -> bool:
        return self.source == "cache"


@dataclass(frozen=True, kw_only=True)
class ProcessPrior(_Record):
    """The run's typical SD of a log ratio between worker processes."""

    sd: float | None = _key(None)
    df: float | None = _key(None)
    instances: int | None = _key(None)


@dataclass(frozen=True, kw_only=True)
class MergedPart(_Record):
    """One record an `opbench merge` (or a pytest-xdist controller) joined."""

    file: str = _key()
    machine_id: str | None = _key(None)
    instances: int = _key()
    complete: bool | None = _key(None)
    shard: ShardRecord | None = _key(None, _one(ShardRecord))
    worker: WorkerRecord | None = _key(None, _one(WorkerRecord))
    measuring_s: float | None = _key(None)
    setup_s: float | None = _key(None)


@dataclass(frozen=True, kw_only=True)
class RunRecord(_Record):
    """A whole results file."""

    schema_version: int = _key()
    created_utc: str = _key()
    complete: bool = _key()
    interrupted: bool = _key(False)
    environment: Environment = _key(codec=_one(Environment))
    config: RecordedConfig = _key(codec=_one(RecordedConfig))
    frameworks: Mapping[str, FrameworkInfo] = _key(codec=_by_name(FrameworkInfo))
    overhead: Mapping[str, Overhead] = _key(_EMPTY, _by_name(Overhead))
    instances: tuple[InstanceRecord, ...] = _key(codec=_each(InstanceRecord))
    ceilings: Mapping[str, Ceilings] = _key(_EMPTY, _by_name(Ceilings))
    # absent in older files: overhead and ceilings measured in the run
    machine_facts: MachineFactsSource | None = _key(None, _one(MachineFactsSource))
    setup_s: float | None = _key(None)
    between_process_prior: ProcessPrior | None = _key(None, _one(ProcessPrior))
    finished_utc: str | None = _key(None)
    merged_from: tuple[MergedPart, ...] = _key((), _each(MergedPart))
    missing_shards: tuple[int, ...] = _key(())
    absolute_times_comparable: bool = _key(True)
    # gate/pool.py: the files a pooled baseline was pooled from (in memory, never written)
    pooled_from: tuple[str, ...] = _key(())

    @property
    def measuring_s(self) -> float:
        """The instances' measuring time, summed (each duration_s): the run's wall time
        apart from its set-up (setup_s)."""
        return sum(float(i.duration_s or 0.0) for i in self.instances)

    def framework_versions(self) -> dict[str, str | None]:
        """Each framework's version (the run history keys a run by it, results/history.py);
        what must match for two records' rounds to be pooled or joined is the build too
        (framework_builds)."""
        return {name: info.version for name, info in self.frameworks.items()}

    def framework_builds(self) -> dict[str, str]:
        """Each framework as `version` or `version (build B)`: what must match for two
        records' rounds to be pooled (gate/pool.py) or joined (merge.py), since two builds
        of one version string (a nightly, a patched build) are different code. A side that
        named no build (the framework exposes none, or a file older than the key) shows its
        version alone."""
        return {name: info.version if not info.build else f"{info.version} (build {info.build})"
                for name, info in self.frameworks.items()}

    def other_builds(self, other: "RunRecord") -> dict[str, tuple[str, str]]:
        """The frameworks whose code differs between this record and `other`: {name: (this
        record's, other's framework_builds entry)}. A different version differs; so does a
        different build of one version where both records name their builds. A build named
        on one side only cannot be told apart, so it does not count here (the gate's
        hygiene notes list it, gate/baseline.py)."""
        mine_all, theirs_all = self.framework_builds(), other.framework_builds()
        differing = {}
        for name in sorted(set(mine_all) | set(theirs_all)):
            mine, theirs = self.frameworks.get(name), other.frameworks.get(name)
            same = (mine is not None and theirs is not None and mine.version == theirs.version
                    and not (mine.build and theirs.build and mine.build != theirs.build))
            if not same:
                differing[name] = (mine_all.get(name, "absent"), theirs_all.get(name, "absent"))
        return differing


def as_plain(value: Any) -> Any:
    """A record, or frozen free-form JSON (an instance's params, ...), as the plain dicts
    and lists of JSON again."""
    return value.to_dict() if isinstance(value, _Record) else _thaw(value)


# -- reading and writing ---------------------------------------------------------------------

Migration = Callable[[dict[str, Any]], dict[str, Any]]

# How an older file becomes the current format: MIGRATIONS[n] turns a record of schema
# version n into version n + 1 (a dict in, a dict out; the caller sets schema_version), and
# load_results applies them in turn. Version 1 is the first format, so the table is empty;
# when version 2 comes, its change is one function here: MIGRATIONS[1] = _version_1_to_2.
MIGRATIONS: dict[int, Migration] = {}


def migrate(data: dict[str, Any], name: str, *, to_version: int = SCHEMA_VERSION,
            steps: Mapping[int, Migration] | None = None) -> dict[str, Any]:
    """`data` upgraded to `to_version` through `steps` (MIGRATIONS by default). Raises
    ResultsError naming `name` for a newer version or one no step leads from."""
    steps = MIGRATIONS if steps is None else steps
    version = data["schema_version"]
    if version > to_version or any(v not in steps for v in range(version, to_version)):
        raise ResultsError(f"{name}: results schema version {version} is not supported "
                           f"(this opbench reads version {to_version}"
                           + (f", and older ones from {min(steps)}" if steps else "") + ")")
    while version < to_version:
        data = dict(steps[version](data))
        version += 1
        data["schema_version"] = version
    return data


def load_results(path: str | os.PathLike) -> RunRecord:
    """Read, migrate, check against the JSON Schema and type a results file: the one way a
    results file is read. Raises ResultsError naming the file (and the key, when one is
    wrong)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such results file") from None
    except (OSError, ValueError) as exc:
        raise ResultsError(f"{path}: not a readable JSON results file ({exc})") from None
    if not isinstance(data, dict) or "schema_version" not in data:
        raise ResultsError(f"{path}: not an opbench results file (no schema_version)")
    version = data["schema_version"]
    if isinstance(version, bool) or not isinstance(version, int):
        raise ResultsError(f"{path}: schema_version must be an integer, got {version!r} "
                           f"({type(version).__name__})")
    data = migrate(data, str(path))
    import jsonschema   # local: only readers pay for the import

    try:
        validate_record(data)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise ResultsError(f"{path}: invalid results file at {where}: {exc.message}") from None
    try:
        return RunRecord.from_dict(data)
    except RecordError as exc:
        raise ResultsError(f"{path}: invalid results file at {exc}") from None


def write_results(path: str | os.PathLike, record: RunRecord) -> None:
    """Write a results file atomically (io.write_json_atomic): the one way one is written."""
    write_json_atomic(path, record.to_dict())


def write_run_dict(path: str | os.PathLike, data: Mapping[str, Any]) -> None:
    """Write the record a run is building as dicts, through the model: the file holds
    exactly what RunRecord reads back."""
    write_results(path, RunRecord.from_dict(data))

"""One case instance from numpy inputs to a verdict, and a run over many of them.

This is the wiring of the pure parts (inputs, check, measure, stats, verdict) with the
framework adapters. It never prints: progress goes to an optional callback, results to
the record (and, after every instance, atomically to the JSON file when one is given).
"""
from __future__ import annotations

import functools
import math
import os
import time
import traceback
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from . import inputs as inputs_mod
from .cases import FLOAT_DTYPES, CaseInstance, FrameworkCall, Ref
from .check import SHAPE, CheckResult, compare_outputs, select_outputs
from .explain import explain_measurement
from .gapmap.ceilings import measure_ceilings
from .gapmap.memory import peak_memory
from .frameworks import Adapter, get_adapter
from .frameworks.base import LAUNCH_BLOCKING, LAUNCH_MODES
from .measure import (ASYNC, MODES, SERIAL, Clock, MeasureSettings, MoreRounds, Side, measure,
                      measure_overhead, more_rounds)
from .quiesce import Quiescer, ThreadActivityProbe
from .records import (BACKWARD_SUFFIX, apply_between_process_prior, conclude,
                      instance_header, key_mode, measurement_statistics, new_measurement,
                      output_shapes, pool_rounds, protocol_notes, share_of_round)
from .placement import Placement
from .results import new_record, utc_now
from .safe_write import ResilientSaver
from .shard import ShardInfo
from .verdict import DEFAULT_THRESHOLD, Verdict

# Worker processes per run for the command line and pytest (RunConfig's own default, 1,
# measures in the calling process, for scripts and tests with fake frameworks). 3 puts a
# process's own speed (6-27% on a ratio here) inside the interval for ~7 s of start-up per
# run and a warm-up per process and instance (docs/measurement.md).
DEFAULT_PROCESSES = 3
# A share of a measurement (one pass in one process) takes at least this many rounds: one
# round would always run the sides in the same order within that process.
MIN_ROUNDS_PER_SHARE = 2


def default_threads(cores: int | None = None) -> int:
    """Both frameworks get one thread fewer than the cores (at least 1) unless told
    otherwise. MindSpore's CPU default (25) oversubscribes small machines and would be an
    unequal comparison; and threads = cores leaves no core for a framework's own dispatch
    threads: measured on 2 cores, 2 kernel threads put MindSpore's ops at ~4 ms (one
    scheduler tick) whatever their size and kept its ActorThread spinning for ~200 ms
    after its work, where 1 thread gave steady times and no tail (docs/measurement.md)."""
    cores = os.cpu_count() if cores is None else cores
    return max(1, (cores or 1) - 1)


@dataclass(frozen=True)
class RunConfig:
    reference: str = "torch"
    target: str = "mindspore"
    device: str = "cpu"
    threads: int = field(default_factory=default_threads)
    modes: tuple[str, ...] = (SERIAL,)
    # Default threshold for cases that set none; a case's own threshold wins because it
    # records knowledge about that operator.
    threshold: float = DEFAULT_THRESHOLD
    backward: bool = True        # also time forward+backward for cases marked backward
    timing: bool = True          # False: correctness only (`pytest cases/`, `opbench check`)
    # "queued": each framework launches as it does by default; "blocking": every operator
    # runs to completion in its call (frameworks/base.py LAUNCH_MODES says why it matters).
    launch: str = LAUNCH_BLOCKING
    # Spread each measurement's rounds over this many passes through the instance list. The
    # ratio of two frameworks drifts by ~10% over seconds to minutes on a shared machine
    # (measured: one instance's median moved as much between passes in one process as between
    # processes), so rounds taken back to back understate the noise and two runs disagree
    # by more than their intervals say. Passes sample that drift inside the run.
    passes: int = 1
    # Fresh worker processes each instance's rounds are spread over (workers.py). A process
    # keeps an offset of its own for its whole life (thread placement, allocator, kernel
    # choice); with several, that offset lands inside the interval instead of between runs.
    # 1 = the measuring happens in the process that holds the Session.
    processes: int = 1
    # Where the side changes, wait until the other threads of the worker processes are
    # idle (quiesce.py), so one side's leftover work does not land in the other's sample.
    quiesce: bool = True
    settings: MeasureSettings = field(default_factory=MeasureSettings)
    # `--shard K/N` (shard.py): which slice of the selection this run measures; recorded so
    # `opbench merge` can check its shards belong together. None: the whole selection.
    shard: ShardInfo | None = None
    # Under `pytest --benchmark -n N` (placement.py): the cores and device this pytest-xdist
    # worker owns; recorded in its part of the run. None: not an xdist worker.
    worker: Placement | None = None

    def __post_init__(self) -> None:
        unknown = [m for m in self.modes if m not in MODES]
        if unknown or not self.modes:
            raise ValueError(f"modes must be among {MODES}, not {self.modes}")
        for name in ("passes", "processes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")
        if not (isinstance(self.threshold, (int, float)) and math.isfinite(self.threshold)
                and self.threshold > 0):
            raise ValueError(f"threshold must be a positive finite ratio, not "
                             f"{self.threshold!r}")
        if self.launch not in LAUNCH_MODES:
            raise ValueError(f"launch must be one of {LAUNCH_MODES}, not {self.launch!r}")
        if self.reference == self.target:
            raise ValueError("reference and target must be different frameworks")

    @property
    def frameworks(self) -> tuple[str, str]:
        return (self.reference, self.target)

    @property
    def shares(self) -> int:
        """How many pieces each measurement's rounds are cut into: one per pass per
        process."""
        return self.passes * self.processes

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["modes"] = list(self.modes)
        d["settings"].pop("mode", None)
        # records of whole selections, measured outside xdist, stay as they were
        if d["shard"] is None:
            del d["shard"]
        if self.worker is None:
            del d["worker"]
        else:
            d["worker"] = self.worker.as_record()
        return d


class ApiError(Exception):
    """APIs in the cases that do not resolve in the installed frameworks (load-time)."""


@dataclass
class _Prepared:
    """One framework's side of an instance, ready to call."""

    adapter: Adapter
    call: FrameworkCall
    fn: Callable[..., Any]
    args: tuple
    kwargs: dict

    def invoke(self) -> Any:
        return self.fn(*self.args, **self.kwargs)

    def bound(self) -> Callable[[], Any]:
        """The call with its arguments bound in C (functools.partial): the timed loop then
        pays one call, not a method lookup plus argument unpacking in Python. With it (and the
        longer re-warm) torch's add of 16x64 read 1.05x torch.utils.benchmark's time in one
        process, against 1.15x before."""
        return functools.partial(self.fn, *self.args, **self.kwargs)


def substitute_refs(value: Any, tensors: Mapping[str, Any]) -> Any:
    """args/kwargs with every Ref(input) replaced by that input's framework tensor."""
    if isinstance(value, Ref):
        return tensors[value.name]
    if isinstance(value, list):
        return [substitute_refs(v, tensors) for v in value]
    if isinstance(value, tuple):
        return tuple(substitute_refs(v, tensors) for v in value)
    if isinstance(value, dict):
        return {k: substitute_refs(v, tensors) for k, v in value.items()}
    return value


def _grad_positions(instance: CaseInstance, call: FrameworkCall) -> tuple[int, ...]:
    """Positional args that are floating inputs wanting gradients."""
    specs = {s.name: s for s in instance.inputs}
    positions = []
    for i, arg in enumerate(call.args):
        if isinstance(arg, Ref) and arg.name in specs:
            spec = specs[arg.name]
            wants = spec.requires_grad if spec.requires_grad is not None else (
                spec.dtype in FLOAT_DTYPES)
            if wants and spec.dtype in FLOAT_DTYPES:
                positions.append(i)
    return tuple(positions)


def _error_text(exc: BaseException) -> str:
    """One readable line from a framework exception (MindSpore messages carry pages of C++
    stack; the first lines say what went wrong)."""
    text = str(exc).strip() or type(exc).__name__
    lines = [ln for ln in text.splitlines() if ln.strip()]
    head = " ".join(" ".join(ln.split()) for ln in lines[:3])  # fold indentation runs
    if len(head) > 400:
        head = head[:400] + "..."
    return f"{type(exc).__name__}: {head}"


class Session:
    """The frameworks of one run, set up once (device, equal thread counts) in this
    process. MindSpore honours its thread count only before its first op, so a process
    runs one Session."""

    def __init__(self, config: RunConfig, clock: Clock = time.perf_counter,
                 watch_pids: Sequence[int] = (), process_index: int = 1):
        self.config = config
        self.clock = clock
        self.adapters: dict[str, Adapter] = {}
        self.overhead: dict[str, dict[str, float]] = {}
        # Other processes whose threads must be idle before a sample (sibling workers).
        self.watch_pids = tuple(watch_pids)
        # Which worker process this is (1 in a run without workers): labels its rounds.
        self.process_index = process_index
        self.quiescer: Quiescer | None = None
        self._measured_here: set[str] = set()   # instance ids this process has timed

    def open(self) -> None:
        """Import and set up both frameworks. Raises FrameworkUnavailable/DeviceUnavailable."""
        for name in self.config.frameworks:
            adapter = get_adapter(name)
            adapter.setup(self.config.device, self.config.threads)
            if self.config.launch == LAUNCH_BLOCKING:
                adapter.block_launches()
            self.adapters[name] = adapter
        self.quiescer = self.make_quiescer()

    def make_quiescer(self) -> Quiescer | None:
        """The pre-sample wait, when asked for and the kernel shows per-thread CPU time."""
        if not self.config.quiesce or not ThreadActivityProbe.available():
            return None
        return Quiescer(ThreadActivityProbe(self.watch_pids))

    def _settle(self):
        return self.quiescer.settle if self.quiescer is not None else None

    def framework_info(self) -> dict[str, Any]:
        return {name: a.info() for name, a in self.adapters.items()}

    def measure_overheads(self) -> dict[str, dict[str, float]]:
        """Each side's sync cost and dispatch floor, the yardsticks the report uses."""
        for name, adapter in self.adapters.items():
            o = measure_overhead(name, adapter.trivial_op(), adapter.sync, self.clock)
            self.overhead[name] = {k: v for k, v in asdict(o).items() if k != "framework"}
        return self.overhead

    def measure_ceilings(self) -> dict[str, dict[str, Any]]:
        """Each framework's memory bandwidth and peak FLOP/s here, with the run's threads
        (gapmap/ceilings.py): the roofline each instance's achieved fraction is read off."""
        return {name: measure_ceilings(name, adapter, self.clock)
                for name, adapter in self.adapters.items()}

    def check_apis(self, instances: Iterable[CaseInstance]) -> list[str]:
        """Every API the instances name must resolve before anything is timed. Returns
        messages naming file:line, case and framework."""
        problems: dict[tuple[str, str], str] = {}
        for inst in instances:
            for name in self.config.frameworks:
                call = inst.calls.get(name)
                if call is None:
                    where = f"{inst.case.file}:{inst.case.line}"
                    problems.setdefault((inst.case.name, name), (
                        f"{where} case '{inst.case.name}': no '{name}' section "
                        f"(needed to compare {self.config.reference} with {self.config.target})"))
                    continue
                try:
                    self.adapters[name].resolve(call.api)
                except Exception as exc:  # UnknownAPI, or an import error inside the framework
                    where = call.location or f"{inst.case.file}:{inst.case.line}"
                    problems.setdefault((inst.case.name, name), (
                        f"{where} case '{inst.case.name}': key '{name}.api': {exc}"))
        return list(problems.values())

    # -- one instance ---------------------------------------------------------------------

    def _prepare(self, instance: CaseInstance, arrays: Mapping[str, np.ndarray],
                 name: str, grad: bool) -> _Prepared:
        adapter = self.adapters[name]
        call = instance.calls[name]
        specs = {s.name: s for s in instance.inputs}
        positions = _grad_positions(instance, call) if grad else ()
        wants_grad = {call.args[i].name for i in positions}
        tensors = {n: adapter.from_numpy(arrays[n], specs[n].dtype,
                                         requires_grad=n in wants_grad) for n in arrays}
        fn = adapter.resolve(call.api)
        return _Prepared(adapter, call, fn, substitute_refs(tuple(call.args), tensors),
                         substitute_refs(dict(call.kwargs), tensors))

    def run_instance(self, instance: CaseInstance) -> dict[str, Any]:
        """Inputs -> both frameworks -> outputs compared -> timed -> verdict. Never raises for
        an operator's failure: that becomes verdict ERROR with the message."""
        started = self.clock()
        record = instance_header(instance, self.config)
        try:
            self._run_into(instance, record)
        except Exception as exc:  # a failing operator is recorded; the run goes on
            record["verdict"] = Verdict.ERROR.value
            record["error"] = record.get("error") or _error_text(exc)
            record["traceback"] = traceback.format_exc(limit=8)
        record["duration_s"] = self.clock() - started
        return record

    def _run_into(self, instance: CaseInstance, record: dict[str, Any]) -> None:
        cfg = self.config
        checked = self._checked_sides(instance, record)
        if checked is None:
            return
        if not cfg.timing:
            record["verdict"] = Verdict.PASS.value
            return

        threshold = (instance.case.threshold if instance.case.threshold is not None
                     else cfg.threshold)
        record["threshold"] = threshold
        record["measurements"] = {key: self._measure(sides, key_mode(key), threshold)
                                  for key, sides in self._timed_sides(*checked).items()}
        record["peak_memory"] = self._peak_memory(checked[0])
        self._measured_here.add(instance.id)
        conclude(record, cfg)

    def _peak_memory(self, prepared: Mapping[str, _Prepared]) -> dict[str, Any]:
        """One untimed call per side under its memory probe (gapmap/memory.py), after the
        timing so the probe never shares a sample."""
        def call(p: _Prepared) -> Callable[[], None]:
            return lambda: (p.invoke(), p.adapter.sync())
        return peak_memory({n: call(prepared[n]) for n in self.config.frameworks},
                           self.config.device)

    def _timed_sides(self, prepared: Mapping[str, _Prepared],
                     grad_sides: Mapping[str, Callable[[], Any]]) -> dict[str, list[Side]]:
        """Measurement key (serial, async, serial+backward, ...) -> the sides to time."""
        cfg = self.config
        timed: dict[str, list[Side]] = {}
        for mode in cfg.modes:
            timed[mode] = [Side(n, prepared[n].bound(), prepared[n].adapter.sync)
                           for n in cfg.frameworks]
            if grad_sides:
                timed[mode + BACKWARD_SUFFIX] = [Side(n, grad_sides[n], self.adapters[n].sync)
                                                 for n in cfg.frameworks]
        return timed

    def extend_instance(self, instance: CaseInstance, record: dict[str, Any],
                        pass_index: int) -> dict[str, Any]:
        """Pass `pass_index` of a measured instance (2, 3, ... in the process that measured it
        first; any pass in another worker process): fresh inputs and callables,
        the outputs checked again, then as many rounds per measurement as the first pass took,
        at its loop count, pooled with the earlier rounds; statistics and verdict are redone.
        A failure is noted in the record and keeps what earlier passes measured."""
        measurements = record.get("measurements")
        if not measurements:
            return record
        started = self.clock()
        try:
            self._extend_measurements(instance, record, measurements, pass_index)
        finally:
            record["duration_s"] = record.get("duration_s", 0.0) + self.clock() - started
        return record

    def _extend_measurements(self, instance: CaseInstance, record: dict[str, Any],
                             measurements: dict[str, Any], pass_index: int) -> None:
        scratch = instance_header(instance, self.config)
        try:
            checked = self._checked_sides(instance, scratch)
            if checked is None:
                raise RuntimeError(scratch.get("error") or "outputs no longer agree")
            timed = self._timed_sides(*checked)
            for key, m in measurements.items():
                if key not in timed:
                    continue
                # The op was warmed up and calibrated in pass 1; the fresh tensors need only
                # a few calls, so the passes share one warm-up budget between them.
                # A later pass of this process warms up briefly (the op is warm); the
                # first visit of another worker process warms up in full.
                warmup_s = self.config.settings.warmup_time_s
                if instance.id in self._measured_here:
                    warmup_s /= self.config.passes
                extra = more_rounds(timed[key], m["mode"], m["loops"], m["rounds_per_pass"],
                                    self.clock, warmup_s,
                                    settle=self._settle(), first_round=len(m["order"]))
                self._pool_rounds(m, extra, pass_index)
            self._measured_here.add(instance.id)
        except Exception as exc:
            where = (f"process {self.process_index}, " if self.config.processes > 1 else "")
            record.setdefault("pass_errors", []).append(
                f"{where}pass {pass_index}: {scratch.get('error') or _error_text(exc)}")
            return
        conclude(record, self.config)

    def _pool_rounds(self, m: dict[str, Any], extra: MoreRounds, pass_index: int) -> None:
        pool_rounds(m, extra, pass_index, self.process_index)
        m.update(self._statistics(m))
        # Explanations are redone from this process's floors; the protocol's own notes stay.
        m["notes"] = list(m.get("protocol_notes", m["notes"])) + m.pop("_explain")

    def _checked_sides(self, instance: CaseInstance, record: dict[str, Any]
                       ) -> tuple[dict[str, _Prepared], dict[str, Callable[[], Any]]] | None:
        """Inputs -> both frameworks -> outputs (and gradients) compared. Returns the prepared
        forward calls and the forward+backward callables, or None when the outputs disagree
        unexpectedly (the record then says MISMATCH and why)."""
        cfg = self.config
        arrays = inputs_mod.generate_inputs(instance)
        rtol, atol = inputs_mod.tolerance_for(instance)
        prepared: dict[str, _Prepared] = {}
        outputs: dict[str, Any] = {}
        for name in cfg.frameworks:
            stage = "preparing inputs"
            try:
                prepared[name] = p = self._prepare(instance, arrays, name, grad=False)
                stage = f"calling {p.call.api}"
                value = p.invoke()
                p.adapter.sync()
                outputs[name] = p.adapter.to_numpy(select_outputs(value, p.call.output))
            except Exception as exc:
                record["error"] = f"{name} failed {stage}: {_error_text(exc)}"
                raise
        check = compare_outputs(outputs[cfg.reference], outputs[cfg.target], rtol, atol,
                                mode=SHAPE if instance.case.compare == SHAPE else "values")
        record["check"] = check.as_dict()
        record["output_shapes"] = output_shapes(outputs[cfg.reference])
        expected = instance.case.expect_mismatch
        if not check.ok and not expected:
            record["verdict"] = Verdict.MISMATCH.value
            return None
        if not check.ok:
            record["check"]["expected_mismatch"] = expected

        grad_sides: dict[str, Callable[[], Any]] = {}
        if cfg.backward and instance.case.backward:
            grad_sides = self._backward_sides(instance, arrays, outputs, rtol, atol, record)
            if record.get("verdict") == Verdict.MISMATCH.value:
                return None
        return prepared, grad_sides

    def _backward_sides(self, instance, arrays, outputs, rtol, atol, record):
        """Forward+backward callables for both sides, gradients compared like outputs."""
        cfg = self.config
        grads: dict[str, Any] = {}
        sides: dict[str, Callable[[], Any]] = {}
        for name in cfg.frameworks:
            try:
                p = self._prepare(instance, arrays, name, grad=True)
                positions = _grad_positions(instance, p.call)
                if not positions:
                    raise ValueError("backward: true but no floating input is a positional "
                                     "argument to differentiate")
                weights = self._grad_weights(instance, outputs[cfg.reference], p)
                output = p.call.output

                def selected(*a, _fn=p.fn, _out=output, **k):
                    return select_outputs(_fn(*a, **k), _out)

                fb = p.adapter.forward_backward(selected, p.args, p.kwargs, positions, weights)
                _, g = fb()
                p.adapter.sync()
                grads[name] = p.adapter.to_numpy(tuple(g))
                sides[name] = fb
            except Exception as exc:
                record["error"] = f"{name} failed forward+backward: {_error_text(exc)}"
                raise
        check = compare_outputs(grads[cfg.reference], grads[cfg.target], rtol, atol)
        record["grad_check"] = check.as_dict()
        if not check.ok and not instance.case.expect_mismatch:
            record["verdict"] = Verdict.MISMATCH.value
            record["error"] = f"gradients differ: {check.detail}"
        return sides

    def _grad_weights(self, instance: CaseInstance, reference_out: Any, p: _Prepared) -> Any:
        """Seeded weights shaped like the (selected) output, one per floating output."""
        def dtype_of(a: np.ndarray) -> str:
            # float16 outputs keep float16 weights; everything else weighs in float32
            return "float16" if a.dtype == np.float16 else (
                "float64" if a.dtype == np.float64 else "float32")

        if isinstance(reference_out, tuple):
            weights = []
            for i, out in enumerate(reference_out):
                if np.issubdtype(out.dtype, np.floating):
                    w = inputs_mod.grad_weight(instance.id, out.shape, dtype_of(out), index=i)
                    weights.append(p.adapter.from_numpy(w, dtype_of(out)))
                else:
                    weights.append(None)   # indices (topk, sort, max): no gradient
            return weights
        w = inputs_mod.grad_weight(instance.id, reference_out.shape, dtype_of(reference_out))
        return p.adapter.from_numpy(w, dtype_of(reference_out))

    def _pass_settings(self, mode: str) -> MeasureSettings:
        """The first pass's share of a measurement: its rounds, its time budget and its
        share of the round floor; later passes repeat the round count it ends up with."""
        cfg = self.config
        settings = replace(cfg.settings, mode=mode)
        if cfg.shares == 1:
            return settings
        # At least MIN_ROUNDS_PER_SHARE, so each share runs both orders (A B and B A).
        return replace(settings,
                       rounds=max(MIN_ROUNDS_PER_SHARE, math.ceil(settings.rounds / cfg.shares)),
                       max_time_s=settings.max_time_s / cfg.shares,
                       min_rounds=math.ceil(settings.min_rounds / cfg.shares))

    def _statistics(self, m: Mapping[str, Any]) -> dict[str, Any]:
        """Everything computed from a measurement's rounds (redone after each pass).
        '_explain' carries the explanation notes for the caller to place."""
        cfg = self.config
        fields = measurement_statistics({n: m["samples_s"][n] for n in cfg.frameworks},
                                        cfg.reference, cfg.target, m["threshold"],
                                        order=m["order"], groups=m.get("process_of_round"),
                                        shares=share_of_round(m))
        medians = {n: fields["summary"][n]["median_s"] for n in cfg.frameworks}
        fields["_explain"] = explain_measurement(m["mode"], medians, self.overhead)
        return fields

    def _measure(self, sides: Sequence[Side], mode: str, threshold: float) -> dict[str, Any]:
        m = measure(sides, self._pass_settings(mode), self.clock, settle=self._settle())
        record = new_measurement(m, mode, threshold, self.config.settings.rounds,
                                 self.process_index)
        record.update(self._statistics(record))
        record["protocol_notes"] = protocol_notes(m, self.config)
        record["notes"] = record["protocol_notes"] + record.pop("_explain")
        return record



# -- a whole run ----------------------------------------------------------------------------

InstanceCallback = Callable[[int, int, CaseInstance, "dict[str, Any] | None"], None]
PassCallback = Callable[[int, int], None]


def run(instances: Sequence[CaseInstance], config: RunConfig, *,
        json_path: str | os.PathLike | None = None,
        on_progress: InstanceCallback | None = None,
        session: Session | None = None,
        clock: Clock = time.perf_counter,
        on_pass: PassCallback | None = None) -> dict[str, Any]:
    """Run every instance and return the record. With json_path the record is rewritten
    atomically after every instance (and every pass), so an interrupt or crash keeps what
    was measured. on_progress(i, n, instance, record_or_None) is called before (None) and
    after each instance of the first pass; on_pass(pass_index, passes) before each later one.
    Raises ApiError before timing anything if an API does not resolve."""
    owned = session is None
    if session is None:
        session = open_session(config, clock)
    try:
        return _run_opened(session, instances, config, json_path, on_progress, on_pass)
    finally:
        if owned and hasattr(session, "close"):
            session.close()


def open_session(config: RunConfig, clock: Clock = time.perf_counter):
    """An opened Session in this process, or, with config.processes > 1, an opened pool of
    worker processes that behaves like one (workers.py). Its `setup_s` says how long the
    opening took (wall time: both frameworks imported in every process)."""
    if config.processes > 1:
        from .workers import WorkerPool   # imports this module: no top-level import

        session: Any = WorkerPool(config)
    else:
        session = Session(config, clock)
    started = time.perf_counter()
    session.open()
    session.setup_s = time.perf_counter() - started
    return session


def _run_opened(session, instances, config, json_path, on_progress, on_pass):
    problems = session.check_apis(instances)
    if problems:
        raise ApiError("\n".join(problems))
    started = time.perf_counter()
    overhead = session.measure_overheads() if config.timing else {}
    record = new_record(config.as_dict(), session.framework_info(), overhead)
    # A session without the step (a test's stand-in) records no ceilings.
    if config.timing and hasattr(session, "measure_ceilings"):
        record["ceilings"] = session.measure_ceilings()
    # Wall time before the first instance: it does not shrink with workers or shorter
    # selections, and the report says so (report.timing_notes).
    if getattr(session, "setup_s", None) is not None:
        record["setup_s"] = round(session.setup_s + time.perf_counter() - started, 3)
    # A failed write is retried at every save and does not stop the run (safe_write.py).
    saver = ResilientSaver(json_path, record) if json_path else None
    save = saver or (lambda: None)
    save()
    try:
        run_passes(session, instances, record["instances"], save=save,
                   on_progress=on_progress, on_pass=on_pass)
    except BaseException:
        # KeyboardInterrupt or a crash outside an instance: keep what was measured
        record["interrupted"] = True
        record["finished_utc"] = utc_now()
        save()
        raise
    prior = apply_between_process_prior(record["instances"], config)
    if prior is not None:
        record["between_process_prior"] = {"sd": prior.sd, "df": prior.df,
                                           "instances": prior.instances}
    record["complete"] = True
    record["finished_utc"] = utc_now()
    if saver:
        saver.finish()   # raises ResultsNotSaved (carrying the record) if it still fails
    return record


def run_passes(session: Session, instances: Sequence[CaseInstance],
               records: list[dict[str, Any]], *, save: Callable[[], None] = lambda: None,
               on_progress: InstanceCallback | None = None,
               on_pass: PassCallback | None = None) -> list[dict[str, Any]]:
    """Pass 1 runs each instance whole (check, calibration, its share of the rounds) and
    appends its record to `records`; passes 2..N visit the measured instances again in the
    same order and add rounds (Session.extend_instance). N is config.passes for a Session,
    passes x processes for a worker pool (its `total_passes`: every process makes its
    passes through the whole selection in turn, so an instance's shares lie minutes apart
    on a long run, across the machine's slow drift). save() runs after every instance of
    every pass."""
    first = len(records)
    for i, inst in enumerate(instances):
        if on_progress:
            on_progress(i, len(instances), inst, None)
        result = session.run_instance(inst)
        records.append(result)
        save()
        if on_progress:
            on_progress(i, len(instances), inst, result)
    passes = getattr(session, "total_passes", session.config.passes) \
        if session.config.timing else 1
    for pass_index in range(2, passes + 1):
        if on_pass:
            on_pass(pass_index, passes)
        for offset, inst in enumerate(instances):
            # a worker pool hands back a new record; a Session extends this one in place
            records[first + offset] = session.extend_instance(inst, records[first + offset],
                                                              pass_index)
            save()
    return records[first:]


def check_only(config: RunConfig) -> RunConfig:
    return replace(config, timing=False)


__all__ = ["RunConfig", "Session", "ApiError", "run", "run_passes", "open_session",
           "default_threads", "CheckResult", "ASYNC", "SERIAL"]

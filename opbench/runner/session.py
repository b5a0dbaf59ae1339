"""One case instance measured in this process: numpy inputs, both frameworks, outputs
compared, then timed.

The Session wires the protocol's parts (inputs, check, measure, quiesce) to the framework
adapters and records what happened: the check, the raw rounds, any error. It judges
nothing: statistics and verdicts are opbench/verdicts/conclusions.py's, applied by whoever
drives it (opbench/runloop/recorded_run.py). It never prints.
"""
from __future__ import annotations

import functools
import math
import time
import traceback
from dataclasses import asdict, dataclass, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from opbench.cases.case_files import FLOAT_DTYPES, CaseInstance, FrameworkCall, Ref
from opbench.config import LAUNCH_BLOCKING, MeasureSettings, RunConfig
from opbench.frameworks import Adapter, get_adapter
from opbench.runner import inputs as inputs_mod
from opbench.runner.exits import SideLost
from opbench.runner.ceilings import cache_sizes, level_copy_bytes, measure_ceilings
from opbench.runner.check import SHAPE, CheckResult, compare_outputs, select_outputs
from opbench.runner.measure import Clock, Side, measure, measure_overhead, more_rounds
from opbench.runner.memory import peak_memory
from opbench.runner.profiling import profile_side
from opbench.runner.pinning import current_cpus, pin_process, pin_run_cores
from opbench.runner.quiesce import Quiescer, ThreadActivityProbe
from opbench.runner.raw_records import (
                                        BACKWARD_SUFFIX,
                                        RawInstance,
                                        RawMeasurement,
                                        instance_header,
                                        key_mode,
                                        output_shapes,
                                        protocol_notes,
                                        )

@dataclass
class _Found:
    """What one instance's stages found so far, in this process (run_instance freezes it
    into a RawInstance): an exception keeps what the stages before it found."""

    check: CheckResult | None = None
    output_shapes: Any = None
    grad_check: CheckResult | None = None
    threshold: float | None = None
    measurements: dict[str, RawMeasurement] | None = None
    peak_memory: dict[str, Any] | None = None
    profile: dict[str, Any] | None = None
    error: str | None = None
    traceback: str | None = None


# A share of a measurement (one pass in one process) takes at least this many rounds: one
# round would always run the sides in the same order within that process.
MIN_ROUNDS_PER_SHARE = 2


class ApiError(Exception):
    """APIs in the cases that do not resolve in the installed frameworks (load-time)."""


class SideFailed(Exception):
    """One side could not prepare or call an instance; the message names the side and the
    stage (`torch failed calling torch.add: RuntimeError: ...`) and becomes the record's
    error."""


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
                 watch_pids: Sequence[int] = (), process_index: int = 1,
                 sides: Sequence[str] | None = None):
        self.config = config
        # The frameworks this process sets up: both, or one side's in a side worker
        # (side_server.py), which imports only its own framework.
        self.sides = tuple(sides) if sides is not None else config.frameworks
        self.clock = clock
        self.adapters: dict[str, Adapter] = {}
        self.overhead: dict[str, dict[str, float]] = {}
        # Other processes whose threads must be idle before a sample (sibling workers).
        self.watch_pids = tuple(watch_pids)
        # Which worker process this is (1 in a run without workers): labels its rounds.
        self.process_index = process_index
        self.quiescer: Quiescer | None = None
        self._measured_here: set[str] = set()   # instance ids this process has timed
        self.setup_s: float | None = None
        # The process's CPU clock (all threads), read around every sample to tell the cores
        # each side really used (pinning.py); set by open(), None on a fake clock.
        self.cpu_clock: Clock | None = None
        # The cores open() pinned this process to; None: left unpinned.
        self.pinned_cpus: tuple[int, ...] | None = None
        self._cpus_before: tuple[int, ...] = ()

    def close(self) -> None:
        """The process's cores as they were before open() (a Session in the caller's own
        process must not leave it pinned); the frameworks live as long as the process."""
        if self.pinned_cpus is not None and self._cpus_before:
            pin_process(self._cpus_before)
            self.pinned_cpus = None

    @property
    def total_passes(self) -> int:
        return self.config.passes

    # Pins this process to the run's cores (pinning.py); a test replaces it.
    pin_cores = staticmethod(pin_run_cores)

    def open(self) -> None:
        """Pin this process to the run's cores (CPU), then import and set up its
        frameworks (both, or one side's in a side worker), whose thread pools inherit the
        cores. Raises FrameworkUnavailable/DeviceUnavailable."""
        if self.config.device.startswith("cpu"):
            self._cpus_before = current_cpus()
            self.pinned_cpus = self.pin_cores(self.config.threads)
        self.cpu_clock = time.process_time
        try:
            for name in self.sides:
                adapter = get_adapter(self.config.framework_of(name))
                adapter.setup(self.config.device, self.config.threads)
                if self.config.launch == LAUNCH_BLOCKING:
                    adapter.block_launches()
                self.adapters[name] = adapter
        except BaseException:
            self.close()
            raise
        if self.pinned_cpus is not None:
            # threads a framework started at import, before the mask was set on its parent
            self.pinned_cpus = self.pin_cores(self.config.threads)
        self.quiescer = self.make_quiescer()
        self._first_kernel()

    def _first_kernel(self) -> None:
        """One trivial op per framework, so the process has launched a kernel before its
        first sample. MindSpore 2.10 on the CPU, until then, takes ~730 us per call of an op
        that launches none (reshape 8x16, a view: its sync), for seconds, and 4.4 us after a
        single 1-element add (measured here, 3 s of calls each way). The per-call floors,
        measured first in every process before the machine-facts cache, hid that; a run
        reading them from the cache measured reshape at 693 us."""
        for adapter in self.adapters.values():
            adapter.trivial_op()()
            adapter.sync()

    def make_quiescer(self) -> Quiescer | None:
        """The pre-sample wait, when asked for and the kernel shows per-thread CPU time."""
        if not self.config.quiesce or not ThreadActivityProbe.available():
            return None
        return Quiescer(ThreadActivityProbe(self.watch_pids))

    def _settle(self):
        return self.quiescer.settle if self.quiescer is not None else None

    def framework_info(self) -> dict[str, Any]:
        info = {name: a.info() for name, a in self.adapters.items()}
        if self.pinned_cpus is not None:
            for facts in info.values():
                facts["cpus"] = list(self.pinned_cpus)
        return info

    def measure_overheads(self) -> dict[str, dict[str, float]]:
        """Each side's sync cost and dispatch floor, the yardsticks the report uses."""
        for name, adapter in self.adapters.items():
            # Pinned, the sibling workers share these cores: their start-up threads (and the
            # other framework's) must be idle first. Without this wait MindSpore's serial
            # floor read 111 us instead of 32 us, torch's 4.3 us instead of 1.4 us.
            if self.quiescer is not None:
                self.quiescer.settle()
            o = measure_overhead(name, adapter.trivial_op(), adapter.sync, self.clock)
            self.overhead[name] = {k: v for k, v in asdict(o).items() if k != "framework"}
        return self.overhead

    def measure_ceilings(self) -> dict[str, dict[str, Any]]:
        """Each framework's memory bandwidth and peak FLOP/s here, with the run's threads
        (ceilings.py): the roofline each instance's achieved fraction is read off."""
        sizes = cache_sizes() if self.cpu_clock is not None else {}
        found = {}
        for name, adapter in self.adapters.items():
            if self.quiescer is not None:
                self.quiescer.settle()
            # by framework: a side's label (mindspore@ms29, mindspore#2) names no ops
            found[name] = measure_ceilings(self.config.framework_of(name), adapter, self.clock,
                                           cpu_clock=self.cpu_clock,
                                           level_bytes=level_copy_bytes(sizes))
        for facts in found.values():
            if sizes and "error" not in facts:
                facts["cache_bytes"] = sizes
        return found

    def check_apis(self, instances: Iterable[CaseInstance]) -> list[str]:
        """Every API the instances name must resolve before anything is timed. Returns
        messages naming file:line, case and framework."""
        problems: dict[tuple[str, str], str] = {}
        for inst in instances:
            for name in self.sides:
                framework = self.config.framework_of(name)
                call = inst.calls.get(framework)
                if call is None:
                    where = f"{inst.case.file}:{inst.case.line}"
                    problems.setdefault((inst.case.name, name), (
                        f"{where} case '{inst.case.name}': no '{framework}' section "
                        f"(needed to compare {self.config.reference_name} with "
                        f"{self.config.target_name})"))
                    continue
                try:
                    self.adapters[name].resolve(call.api)
                except Exception as exc:  # UnknownAPI, or an import error inside the framework
                    where = call.location or f"{inst.case.file}:{inst.case.line}"
                    problems.setdefault((inst.case.name, name), (
                        f"{where} case '{inst.case.name}': key '{framework}.api': {exc}"))
        return list(problems.values())

    # -- one instance ---------------------------------------------------------------------

    def _prepare(self, instance: CaseInstance, arrays: Mapping[str, np.ndarray],
                 name: str, grad: bool) -> _Prepared:
        adapter = self.adapters[name]
        call = instance.calls[self.config.framework_of(name)]
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
        found = _Found()
        try:
            self._run_into(instance, found)
        except SideLost:
            raise
        except Exception as exc:  # a failing operator is recorded; the run goes on
            found.error = found.error or _error_text(exc)
            found.traceback = traceback.format_exc(limit=8)
        return RawInstance(instance_header(instance, self.config),
                           duration_s=self.clock() - started, **vars(found)).as_dict()

    def _run_into(self, instance: CaseInstance, found: "_Found") -> None:
        cfg = self.config
        checked = self._checked_sides(instance, found)
        if checked is None:
            return
        if not cfg.timing:
            return

        threshold = (instance.case.threshold if instance.case.threshold is not None
                     else cfg.threshold)
        found.threshold = threshold
        found.measurements = {key: self._measure(sides, key_mode(key), threshold)
                              for key, sides in self._timed_sides(*checked).items()}
        found.peak_memory = self._peak_memory(checked[0])
        if cfg.profile:
            timed = self._timed_sides(*checked)
            found.profile = {key: {side.name: self.profile_side(side, key_mode(key), m.loops)
                                   for side in timed[key]}
                             for key, m in found.measurements.items()}
        self._measured_here.add(instance.id)

    def _timed_sides(self, prepared: Mapping[str, Any],
                     grad_sides: Mapping[str, Any]) -> dict[str, list[Any]]:
        """Measurement key (serial, async, serial+backward, ...) -> the sides to time."""
        cfg = self.config
        timed: dict[str, list[Any]] = {}
        for mode in cfg.modes:
            timed[mode] = [self.timed_side(n, prepared[n]) for n in cfg.frameworks]
            if grad_sides:
                timed[mode + BACKWARD_SUFFIX] = [self.timed_side(n, prepared[n], grad_sides[n])
                                                 for n in cfg.frameworks]
        return timed

    def extend_instance(self, instance: CaseInstance, record: dict[str, Any],
                        pass_index: int) -> dict[str, Any]:
        """Pass `pass_index` of a measured instance (2, 3, ... in the process that measured it
        first; any pass in another worker process): fresh inputs and callables,
        the outputs checked again, then as many rounds per measurement as the first pass took,
        at its loop count, pooled with the earlier rounds. Returns a new record (`record` is
        left as it was) for the judge to redo statistics and verdict. A failure is noted in
        it and keeps what earlier passes measured."""
        measurements = record.get("measurements")
        if not measurements:
            return record
        started = self.clock()
        pooled = dict(measurements)

        def extended() -> dict[str, Any]:
            return {**record, "measurements": pooled,
                    "duration_s": record.get("duration_s", 0.0) + self.clock() - started}

        try:
            failed = self._extend_measurements(instance, pooled, pass_index)
        except SideLost as lost:
            # the pool notes the loss on the record it hands back (workers.py): what this
            # pass pooled before it stays, as the rounds of the earlier passes do
            lost.record = extended()
            raise
        if failed is None:
            return extended()
        return {**extended(), "pass_errors": list(record.get("pass_errors", [])) + [failed]}

    def _extend_measurements(self, instance: CaseInstance, pooled: dict[str, Any],
                             pass_index: int) -> str | None:
        """A later share of each measurement's rounds, each pooled into `pooled` (this
        pass's working copy of the measurements) as it is measured; the failure's line, or
        None."""
        scratch = _Found()
        try:
            checked = self._checked_sides(instance, scratch)
            if checked is None:
                raise RuntimeError(scratch.error or "outputs no longer agree")
            timed = self._timed_sides(*checked)
            for key in list(pooled):
                if key not in timed:
                    continue
                raw = RawMeasurement.of(pooled[key])
                # The op was warmed up and calibrated in pass 1; the fresh tensors need only
                # a few calls, so the passes share one warm-up budget between them.
                # A later pass of this process warms up briefly (the op is warm); the
                # first visit of another worker process warms up in full.
                warmup_s = self.config.settings.warmup_time_s
                if instance.id in self._measured_here:
                    warmup_s /= self.config.passes
                extra = more_rounds(timed[key], raw.mode, raw.loops, raw.rounds_per_pass,
                                    self.clock, warmup_s,
                                    settle=self._settle(), first_round=raw.rounds,
                                    cpu_clock=self.cpu_clock)
                pooled[key] = raw.pooled(extra, pass_index, self.process_index,
                                         self.allowed_cores).as_dict()
            self._measured_here.add(instance.id)
        except SideLost:
            raise
        except Exception as exc:
            where = (f"process {self.process_index}, " if self.config.processes > 1 else "")
            return f"{where}pass {pass_index}: {scratch.error or _error_text(exc)}"
        return None

    @property
    def allowed_cores(self) -> int | None:
        """The cores a side may use: the run's thread count, when CPU time is measured."""
        return self.config.threads if self.cpu_clock is not None else None

    def _checked_sides(self, instance: CaseInstance, found: "_Found"
                       ) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """Inputs -> both frameworks -> outputs (and gradients) compared (into `found`).
        Returns the prepared forward calls and the forward+backward callables, or None when
        the outputs disagree unexpectedly (the judge then says MISMATCH and why)."""
        cfg = self.config
        arrays = inputs_mod.generate_inputs(instance)
        rtol, atol = inputs_mod.tolerance_for(instance)
        prepared: dict[str, Any] = {}
        outputs: dict[str, Any] = {}
        for name in cfg.frameworks:
            try:
                prepared[name], outputs[name] = self.forward_side(instance, arrays, name)
            except SideFailed as exc:
                found.error = str(exc)
                raise
        expected = instance.case.expect_mismatch
        check = compare_outputs(outputs[cfg.reference_name], outputs[cfg.target_name], rtol, atol,
                                mode=SHAPE if instance.case.compare == SHAPE else "values"
                                ).expected_by(expected)
        found.check = check
        found.output_shapes = output_shapes(outputs[cfg.reference_name])
        if not check.ok and not expected:
            return None         # MISMATCH (verdicts/conclusions.py): nothing to time

        grad_sides: dict[str, Any] = {}
        if cfg.backward and instance.case.backward:
            grad_sides, grad_check = self._backward_sides(instance, arrays, outputs, rtol,
                                                          atol, found)
            if not grad_check.ok and not expected:
                return None
        return prepared, grad_sides

    # -- one side's part of an instance: in this process here; a side worker's parent
    # (side_worker.RemoteSession) overrides these four to ask the side's process instead.

    def forward_side(self, instance: CaseInstance, arrays: Mapping[str, np.ndarray],
                      name: str) -> tuple[Any, Any]:
        """Side `name`'s call prepared and run once: (the prepared call, its selected output
        as numpy). Raises SideFailed naming the side and the stage."""
        stage = "preparing inputs"
        try:
            p = self._prepare(instance, arrays, name, grad=False)
            stage = f"calling {p.call.api}"
            value = p.invoke()
            p.adapter.sync()
            return p, p.adapter.to_numpy(select_outputs(value, p.call.output))
        except Exception as exc:
            raise SideFailed(f"{name} failed {stage}: {_error_text(exc)}") from exc

    def backward_side(self, instance: CaseInstance, arrays: Mapping[str, np.ndarray],
                       name: str, reference_out: Any) -> tuple[Any, Any]:
        """Side `name`'s forward+backward callable, run once: (it, its gradients as numpy).
        The loss weights are shaped like the reference's output. Raises SideFailed."""
        try:
            p = self._prepare(instance, arrays, name, grad=True)
            positions = _grad_positions(instance, p.call)
            if not positions:
                raise ValueError("backward: true but no floating input is a positional "
                                 "argument to differentiate")
            weights = self._grad_weights(instance, reference_out, p)
            output = p.call.output

            def selected(*a, _fn=p.fn, _out=output, **k):
                return select_outputs(_fn(*a, **k), _out)

            fb = p.adapter.forward_backward(selected, p.args, p.kwargs, positions, weights)
            _, g = fb()
            p.adapter.sync()
            return fb, p.adapter.to_numpy(tuple(g))
        except Exception as exc:
            raise SideFailed(f"{name} failed forward+backward: {_error_text(exc)}") from exc

    def timed_side(self, name: str, prepared: Any, backward: Any = None) -> Any:
        """The Side measure() times: the prepared forward call, or (given) the
        forward+backward callable."""
        if backward is not None:
            return Side(name, backward, self.adapters[name].sync)
        return Side(name, prepared.bound(), prepared.adapter.sync)

    def profile_side(self, side: Side, mode: str, loops: int) -> dict[str, Any]:
        """The side's call run again under its framework's profiler (profiling.py), after
        the timing: its profile entry. A side worker's parent asks the side's process."""
        if self.quiescer is not None:
            self.quiescer.settle()
        return profile_side(self.adapters[side.name], side.call, side.sync, mode, loops,
                            self.clock)

    def _peak_memory(self, prepared: Mapping[str, Any]) -> dict[str, Any]:
        """One untimed call per side under its memory probe (memory.py), after the
        timing so the probe never shares a sample."""
        def call(p: _Prepared) -> Callable[[], Any]:
            def synced() -> Any:
                value = p.invoke()
                p.adapter.sync()
                return value           # held by the probe while it reads what was allocated
            return synced
        return peak_memory({n: call(prepared[n]) for n in self.config.frameworks},
                           self.config.device)

    def _backward_sides(self, instance, arrays, outputs, rtol, atol, found):
        """Forward+backward callables for both sides, and their gradients compared like
        outputs (the comparison is also kept in `found`)."""
        cfg = self.config
        grads: dict[str, Any] = {}
        sides: dict[str, Any] = {}
        for name in cfg.frameworks:
            try:
                sides[name], grads[name] = self.backward_side(instance, arrays, name,
                                                               outputs[cfg.reference_name])
            except SideFailed as exc:
                found.error = str(exc)
                raise
        check = compare_outputs(grads[cfg.reference_name], grads[cfg.target_name], rtol, atol
                                ).expected_by(instance.case.expect_mismatch)
        found.grad_check = check
        if not check.ok and not instance.case.expect_mismatch:
            found.error = f"gradients differ: {check.detail}"
        return sides, check

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

    def _measure(self, sides: Sequence[Side], mode: str, threshold: float) -> RawMeasurement:
        m = measure(sides, self._pass_settings(mode), self.clock, settle=self._settle(),
                    cpu_clock=self.cpu_clock)
        return RawMeasurement.first(m, threshold, self.config.settings.rounds,
                                    self.process_index, self.allowed_cores,
                                    protocol_notes(m, self.config))


__all__ = ["Session", "ApiError", "SideFailed", "SideLost", "substitute_refs"]

"""Replay one step of a captured program in one framework, in this process.

The step's external tensors (weights, inputs) are drawn from a seed derived from their id,
shape and dtype, so every process and both frameworks get the same arrays; integer tensors
stay within their observed range. Each call runs through its route (routes.py); the first
run (probe) tries each route's fallbacks and keeps the first that works, and fingerprints
every output for the cross-framework check. A call that cannot run in this framework, or
that the parent leaves out because the other framework cannot run it, is not called: a
stand-in takes its outputs' place: the recorded shape and dtype, drawn values, plus a term
of value 0 that depends on each of the call's floating inputs (s - stop_gradient(s), s the
sum of their means), so the calls after it run AND a backward through it reaches the calls
before it (a stand-in for a loss still trains the forward's weights). Only a stand-in a loss
depends on carries that term; any other is its drawn values alone. A stand-in is a call of
the replay: timed like the others, so the record can say how much of a framework's step is
stand-ins. The traced framework stands in only for what it cannot run itself.

Timing (time_step, time_calls) is done in the framework's launch mode: a step sample runs
all calls back to back and syncs once at the end; the per-call pass syncs after each call
(each call's latency in context: after its real predecessors, with their caches). Both
let go of each call's result after its last reader, as the script's Python does (release.py;
the probe keeps them all), and set torch's grad mode where it changes, not around each call.
A step sample runs the step written out as straight-line Python (compiled_step.py), so the
replay's own cost per call is near the script's; the per-call pass keeps the plan's loop.
"""
from __future__ import annotations

import hashlib
import importlib
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from opbench.config.vocabulary import COMPLEX_DTYPES, FLOAT_DTYPES, LAUNCH_QUEUED
from opbench.frameworks.apimap import ApiMapping
from opbench.model.bound_args import bind
from opbench.model.program import (Call, Dtype, Ext, ExternalTensor, Lit, Opaque, Ref, Seq,
                                   SliceOf, exts_in, refs_in)
from opbench.model.recompute import recomputed_before
from opbench.model.replay.compiled_step import (CompiledStep, StepCall, compile_step,
                                                is_constant)
from opbench.model.replay.float_draw import drawn_interval
from opbench.model.replay.optimizer_fold import FOLDED_INTO, adam_folds, sgd_momentum_folds
from opbench.model.replay.release import (FORWARD, GRADIENTS, Block, per_call_order,
                                          read_before_written, refs_read, releases,
                                          step_order)
from opbench.model.replay.trainable import (AUTOGRAD_GRAD, accumulated_onto, block_calls,
                                            is_differentiation, loss_dependencies, loss_of,
                                            trainable_externals)
from opbench.model.replay.routes import (Route, Unmapped, fused_adam_route, fused_momentum_route,
                                         route_for)
from opbench.model.steady import StepProgram

__all__ = ["Replayer", "CallStatus", "fingerprint", "FINGERPRINT_POINTS"]

# Values compared per output across the frameworks: a few fixed positions and two moments
# catch a wrong transpose, a wrong axis or a wrong formula without shipping whole tensors.
FINGERPRINT_POINTS = 32


@dataclass(frozen=True)
class CallStatus:
    index: int
    api: str                  # what ran (the route's name) or was meant to
    ok: bool
    route: int = 0            # 0: the route itself; i > 0: fallback i
    problem: str | None = None     # why it did not run; for a call that ran on a fallback,
                                   # why the routes before it failed
    stand_in: bool = False    # not called: outputs stood in for


def external_array(ext: ExternalTensor) -> np.ndarray:
    """The external tensor's values: the same in every process and framework. A small bool
    or integer tensor's are the script's (ExternalTensor.values); the rest are drawn, of the
    shape it was expanded from where it was (then repeated along the expanded dims)."""
    base = _kept_values(ext)
    if base is None:
        base = _drawn_array(ext, ext.base_shape)
    if ext.expanded_from:
        return np.ascontiguousarray(np.broadcast_to(base, tuple(ext.shape)))
    return base


def _kept_values(ext: ExternalTensor) -> np.ndarray | None:
    """The script's values of a small bool or integer external, or of a float one the
    program holds them for (a tensor an affinity swap makes once before the step: affinity/
    swap.py); None where the program holds none (or not as many as the shape needs: drawn
    then, never a failed set-up)."""
    if ext.values is None or ext.dtype in COMPLEX_DTYPES:
        return None
    shape = ext.base_shape
    if len(ext.values) != int(np.prod(shape, dtype=np.int64)):
        return None
    if ext.dtype in FLOAT_DTYPES:
        return np.asarray(ext.values, dtype=np.float64).reshape(shape)
    values = np.asarray(ext.values, dtype=np.int64).reshape(shape)
    return values != 0 if ext.dtype == "bool" else values


def _drawn_array(ext: ExternalTensor, shape: tuple[int, ...]) -> np.ndarray:
    digest = hashlib.sha256(f"{ext.id}:{ext.shape}:{ext.dtype}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
    if ext.dtype in FLOAT_DTYPES:
        if len(shape) <= 1:
            # a norm's scale or shift, a running variance, a bias: positive and moderate, so
            # a variance's sqrt or a log stays finite
            low, high = 0.5, 1.5
        else:
            # a weight scaled by its fan-in, as initialisers do: activations keep their size
            # through many layers instead of overflowing (inf and NaN time differently)
            scale = (np.sqrt(max(1, int(np.prod(shape[1:])))) if ext.role == "parameter"
                     else 1.0)
            low, high = -1.0 / scale, 1.0 / scale
        # within the script's observed range where it is narrower (float_draw.py)
        narrowed = drawn_interval(low, high, ext.low, ext.high)
        if narrowed is not None:
            return rng.uniform(*narrowed, size=shape).astype(np.float32)
        if len(shape) <= 1:
            return rng.uniform(0.5, 1.5, size=shape).astype(np.float32)
        values = rng.uniform(-1.0, 1.0, size=shape)
        if ext.role == "parameter":
            values /= scale
        return values.astype(np.float32)
    if ext.dtype in COMPLEX_DTYPES:
        # a spectrum, a complex weight: real and imaginary parts drawn alike, one after the
        # other from the one seed, so both frameworks get the same complex values
        values = rng.uniform(-1.0, 1.0, size=shape) + 1j * rng.uniform(-1.0, 1.0, size=shape)
        if ext.role == "parameter" and len(shape) > 1:
            values /= np.sqrt(max(1, int(np.prod(shape[1:]))))
        return values.astype(np.complex64 if ext.dtype == "complex64" else np.complex128)
    if ext.dtype == "bool":
        # the script's share of true values where the capture recorded it (a padding mask
        # is mostly false), else half
        fraction = ext.true_fraction if ext.true_fraction is not None else 0.5
        return rng.random(size=shape) < fraction
    low = int(ext.low) if ext.low is not None else 0
    high = int(ext.high) if ext.high is not None else 0
    return rng.integers(low, high + 1, size=shape, dtype=np.int64)


def with_script_layout(tensor: Any, ext: ExternalTensor) -> Any:
    """The external's tensor (contiguous, of its full shape) in the layout the script's had:
    an expansion of its base (torch's expand, MindSpore 2.10's broadcast_to: both a stride-0
    view, checked on CPU), or a permuted dense view (a transposed weight). Both frameworks'
    tensors have the methods used here."""
    if ext.expanded_from:
        base = tensor[tuple(slice(0, 1) if b != s else slice(None)
                            for b, s in zip(ext.expanded_from, ext.shape))]
        return base.contiguous().broadcast_to(tuple(ext.shape))
    if ext.dim_order:
        order = tuple(ext.dim_order)
        back = tuple(int(i) for i in np.argsort(order))
        return tensor.permute(*order).contiguous().permute(*back)
    return tensor


def stand_in_arrays(outputs: Any, index: int) -> Any:
    """Values for a call that was not called, shaped like what it returned when traced."""
    if not outputs:
        return None
    if outputs[0] == "tensor":
        low = outputs[3] if len(outputs) >= 5 else None
        high = outputs[4] if len(outputs) >= 5 else None
        return external_array(ExternalTensor(10_000_000 + index, tuple(outputs[1]), outputs[2],
                                             "stand-in", "", low, high))
    if outputs[0] == "seq":
        return tuple(stand_in_arrays(o, index * 131 + i) for i, o in enumerate(outputs[1]))
    return None


def fingerprint(array: np.ndarray) -> dict[str, Any]:
    """A few fixed positions and two moments of an output. A complex output's imaginary
    parts (at the same positions, and of the mean) go beside the real ones, and its mean_abs
    is the mean magnitude: the output check compares complex values by the magnitude of
    their difference (impact/output_check.py)."""
    if np.iscomplexobj(array):
        flat = np.asarray(array, dtype=np.complex128).ravel()
    else:
        flat = np.asarray(array, dtype=np.float64).ravel()
    if flat.size == 0:
        return {"shape": list(array.shape), "n": 0}
    positions = np.linspace(0, flat.size - 1, num=min(FINGERPRINT_POINTS, flat.size)).astype(int)
    finite = flat[np.isfinite(flat)]
    mean = complex(finite.mean()) if finite.size else None
    found = {"shape": list(array.shape), "n": int(flat.size),
             "mean": mean.real if mean is not None else None,
             "mean_abs": float(np.abs(finite).mean()) if finite.size else None,
             "points": [float(v.real) for v in flat[positions]]}
    if np.iscomplexobj(flat):
        found["mean_imag"] = mean.imag if mean is not None else None
        found["imag_points"] = [float(v.imag) for v in flat[positions]]
    return found


class Replayer:
    """One step of `step` in `framework` (this process holds that framework)."""

    def __init__(self, step: StepProgram, framework: str, adapter: Any, mapping: ApiMapping,
                 skip: Sequence[int] = (), routes_chosen: dict[int, int] | None = None,
                 clock: Callable[[], float] = time.perf_counter):
        self.step = step
        self.framework = framework
        self.adapter = adapter
        self.mapping = mapping
        self.clock = clock
        self._skip = set(skip)
        self._chosen = dict(routes_chosen or {})
        self.training = any(is_differentiation(c) for c in step.calls)
        # weights held as plain leaf tensors (requires_grad_(), updated by hand): trainable.py
        self._trainable = (trainable_externals(
            step.calls, {e.id for e in step.externals if e.dtype in FLOAT_DTYPES})
            if self.training else frozenset())
        # gradient accumulation: per torch backward that adds to an earlier one's gradients,
        # that backward (trainable.py); torch's replay clears the weights' gradients only
        # before a backward that starts afresh, MindSpore's block sums them
        self._onto = accumulated_onto(step.calls, frozenset(
            e.id for e in step.externals if e.dtype in FLOAT_DTYPES
            and (e.role == "parameter" or e.id in self._trainable))) \
            if self.training else {}
        # the calls a loss depends on: a stand-in among them keeps the gradient chain; any
        # other stand-in is its drawn values alone (no gradient reaches it, and in
        # MindSpore's queued launch each extra op costs ~0.5-1 ms: on a clipped, masked
        # hand-written step, chained stand-ins for the optimizer's calls took 44% of its
        # replayed step)
        self._chained = frozenset(loss_dependencies(step.calls)) if self.training \
            else frozenset()
        # Adam's second-moment buffers hold sums of squares: random stand-in values would be
        # negative in half the places and their sqrt NaN (in both frameworks alike)
        adam = adam_folds(step.calls) if step.framework == "torch" else []
        self._squares = {f.v.id for f in adam if isinstance(f.v, Ext)}
        self._externals = {e.id: self._external(e) for e in step.externals}
        self._results: list[Any] = [None] * len(step.calls)
        self._plan: list[tuple[Callable[..., Any], Callable[[], tuple], Callable[[], dict]]
                         | None] = []
        # per plan entry, the results its getters read (None: no entry); after the probe,
        # per call, the results the timed runs drop once it has run (release.py)
        self._reads: list[frozenset[int] | None] = []
        self._drop_step: list[tuple[int, ...]] = []
        self._drop_calls: list[tuple[int, ...]] = []
        self._drop_block: dict[Any, tuple[int, ...]] = {}
        # torch's grad mode set before these calls in the timed runs (_plan_grad_modes)
        self._grad_at: dict[int, bool] = {}
        self._grad_restore = False
        self._set_grad: Callable[[bool], Any] | None = None
        # per plan entry, the program arguments its getters read (args, kwargs), so the
        # timed step can be written out as Python (compiled_step.py); the step so written,
        # made by _plan_releases (None: _run's loop replays it), and whether the probe's
        # values of the results it lets go of are still held (let go at its first run)
        self._arguments: dict[int, tuple[tuple[Any, ...], tuple[tuple[str, Any], ...]]] = {}
        self._compiled: CompiledStep | None = None
        self._holding_probe_values = False
        # A MindSpore training step: per backward, the forward calls its loss depends on run
        # inside one value_and_grad call (`differentiate`), in program order; the per-call
        # pass still times them one by one, and each backward call is its block's time less
        # theirs.
        self._blocks: list[Differentiated] = []
        # per backward, the checkpointed calls it runs again first (_plan_recompute)
        self._recomputed: dict[int, tuple[int, ...]] = {}
        self.status: list[CallStatus] = []
        # torch's SGD and Adam updates as a port's fused kernels (optimizer_fold.py): the other
        # framework only, so the traced one replays exactly what the script ran
        self._fused: dict[int, Route] = {}
        self._folded: dict[int, int] = {}
        if framework == "mindspore" and step.framework == "torch":
            folds = [(f, fused_momentum_route(f)) for f in sgd_momentum_folds(step.calls)]
            folds += [(f, fused_adam_route(f)) for f in adam]
            for fold, route in folds:
                self._fused[fold.update] = route
                self._folded.update((index, fold.update) for index in fold.folded)

    # -- values ------------------------------------------------------------------------------
    def _tensor(self, array: Any, dtype: str) -> Any:
        return self.adapter.from_numpy(np.asarray(array), dtype)

    def _external(self, ext: ExternalTensor) -> Any:
        array = external_array(ext)
        tensor = self._tensor(np.abs(array) if ext.id in self._squares else array, ext.dtype)
        if self.training and ext.dtype in FLOAT_DTYPES and (
                ext.role == "parameter" or ext.id in self._trainable):
            tensor = make_trainable(self.framework, tensor, f"w{ext.id}")
        elif ext.role == "state" and self.framework == "mindspore":
            # kernels that update state in place (BatchNorm's moving statistics) take it as
            # a Parameter, as the script's layer held it
            import mindspore
            tensor = mindspore.Parameter(tensor, name=f"s{ext.id}", requires_grad=False)
        else:
            tensor = with_script_layout(tensor, ext)
        return tensor

    def _stand_in(self, call: Call) -> Any:
        def convert(value: Any, node: Any) -> Any:
            if isinstance(value, np.ndarray):
                return self._tensor(value, node[2])
            if isinstance(value, tuple):
                return tuple(convert(v, n) for v, n in zip(value, node[1]))
            return value
        return convert(stand_in_arrays(call.outputs, call.index), call.outputs)

    def _stood_in(self, call: Call, status: CallStatus):
        """A stand-in as a call of the plan (module doc): run once here; where even that
        fails, the drawn values alone, not run again."""
        constant = self._stand_in(call)
        if call.index not in self._chained:
            self._arguments[call.index] = ((), ())
            return (lambda: constant, tuple, dict), status, constant, frozenset()
        self._arguments[call.index] = ((*refs_in(call), *exts_in(call)), ())
        inputs = [self._getter(a) for a in self._arguments[call.index][0]]
        fn = stand_in_function(constant, self.framework)
        entry = (fn, gathered(inputs), dict)
        try:
            value = self._probing(call, fn)(*entry[1]())
            self.adapter.sync()
        except Exception:         # a stand-in must not stop the replay
            return None, status, constant, None
        return entry, status, value, refs_read(refs_in(call))

    def _getter(self, arg: Any) -> Callable[[], Any]:
        results, externals = self._results, self._externals
        if isinstance(arg, Ref):
            i, path = arg.call, arg.path
            if not path:
                return lambda: results[i]
            if len(path) == 1:
                p = path[0]
                return lambda: results[i][p]

            def nested() -> Any:
                value = results[i]
                for p in path:
                    value = value[p]
                return value
            return nested
        if isinstance(arg, Ext):
            tensor = externals[arg.id]
            return lambda: tensor
        constant = self._constant(arg)
        if isinstance(arg, Seq) and not is_constant(arg):
            getters = [self._getter(a) for a in arg.items]
            kind = list if arg.kind == "list" else tuple
            return lambda: kind(g() for g in getters)
        return lambda: constant

    def _constant(self, arg: Any) -> Any:
        if isinstance(arg, Lit):
            return arg.value
        if isinstance(arg, Dtype):
            return getattr(importlib.import_module(self.framework), arg.name)
        if isinstance(arg, SliceOf):
            return slice(arg.start, arg.stop, arg.step)
        if isinstance(arg, Opaque) and arg.type_name == "ellipsis":
            return Ellipsis
        if isinstance(arg, Seq) and is_constant(arg):
            kind = list if arg.kind == "list" else tuple
            return kind(self._constant(a) for a in arg.items)
        return None

    def _binder(self, route: Route) -> tuple[Callable[[], tuple], Callable[[], dict]]:
        arg_getters = [self._getter(a) for a in route.args]
        kw_getters = [(k, self._getter(v)) for k, v in route.kwargs]
        if not kw_getters:
            return gathered(arg_getters), dict
        return (gathered(arg_getters), lambda: {k: g() for k, g in kw_getters})

    # -- the probe: routes chosen, outputs fingerprinted --------------------------------------
    def probe(self, fingerprints: bool = True) -> list[dict[str, Any] | None]:
        """Build the plan and run the step once. Returns each call's output fingerprints
        (None for a call that did not run, and for every call when not asked for: a timing
        process only needs the plan). self.status says how each call went."""
        resolve = self.adapter.resolve
        prints: list[dict[str, Any] | None] = []
        self._plan, self._reads, self.status, self._blocks = [], [], [], []
        for call in self.step.calls:
            if is_differentiation(call) and self.framework == "mindspore":
                self._plan.append(None)
                self._reads.append(None)
                self.status.append(CallStatus(call.index, DIFFERENTIATED, True))
                value = self._results[call.index] = self._differentiate(call)
                # torch.autograd.grad's gradients are its output, compared as any output's
                # (a backward's are read by the update after it, whose output is compared)
                prints.append(self._fingerprints(value) if fingerprints
                              and call.api == AUTOGRAD_GRAD
                              and self.status[call.index].ok else None)
                continue
            entry, status, value, reads = self._first_working(call, resolve)
            self._plan.append(entry)
            self._reads.append(reads if entry is not None else None)
            self.status.append(status)
            self._results[call.index] = value
            prints.append(self._fingerprints(value) if fingerprints and status.ok
                          and not status.stand_in and not call.backward
                          and call.index not in self._folded else None)
        self.adapter.sync()
        self._plan_recompute()
        self._plan_grad_modes()
        self._plan_releases()
        return prints

    def _plan_recompute(self) -> None:
        """Activation checkpointing's recompute (model/recompute.py), in the backward's
        window: each backward after checkpointed calls runs those that have a plan entry
        once more, then differentiates (torch: the backward call; MindSpore: its
        value_and_grad block). The backward reads what they read, so a timed run keeps it
        until then."""
        self._recomputed = {}
        if not self.training:
            return
        for backward, marked in recomputed_before(self.step.calls, is_differentiation).items():
            region = tuple(i for i in marked
                           if self._plan[i] is not None and self._plan[i][0] is not _identity)
            if not region:
                continue
            rerun = rerunning(region, self._plan, self._results)
            inside = frozenset(region)
            reads = frozenset().union(*(self._reads[i] for i in region)) - inside
            block = next((b for b in self._blocks if b.backward == backward), None)
            if block is not None:
                block.run = after(rerun, block.run)
                block.outside_reads = block.outside_reads | reads
            elif self._plan[backward] is not None:
                fn, get_args, get_kwargs = self._plan[backward]
                self._plan[backward] = (after(rerun, fn, first=True), get_args, get_kwargs)
                self._reads[backward] = (self._reads[backward] or frozenset()) | reads
            else:
                continue
            self._recomputed[backward] = region

    def _plan_grad_modes(self) -> None:
        """Where the timed runs switch torch's grad mode: before each call whose mode differs
        from the call run before it, back on at the step's end. A script enters
        `torch.no_grad()` once around its loop; entering it around each replayed call cost
        ~2.8 us a call more than the script's call (w.t() on 256x256, one thread, median of
        15 alternated rounds of 20,000: 3.65 us against 0.88; setting the mode once, 1.70),
        so a swap that removes calls claimed ~5 us each beyond what the script saves
        (torch/linear_composed: 0.131 ms claimed against 0.049 measured)."""
        self._grad_at = {}
        self._grad_restore = False
        if self.framework != "torch":
            return
        enabled = True
        for call, entry in zip(self.step.calls, self._plan):
            if entry is None or entry[0] is _identity or call.grad_enabled == enabled:
                continue
            enabled = call.grad_enabled
            self._grad_at[call.index] = enabled
        self._grad_restore = not enabled
        if self._grad_at:
            self._set_grad = grad_mode_setter()

    def _plan_releases(self) -> None:
        """What the timed runs drop after each call (release.py), from the plan the probe
        made. Kept through every run: the result time_step_to_host reads back; stand-ins,
        aliases and folded calls (set at the probe or passed through: time_calls does not
        rerun a pass-through, so its value must stay); calls with no plan entry (set once,
        never rerun; MindSpore's backward, whose gradients the per-call pass's updates read
        before its block rewrites them); and whatever a timed order reads before it sets
        it (the last step's value)."""
        blocks = [Block(b.inside, b.first, b.backward, b.outside_reads) for b in self._blocks]
        passed_through = {i for i, e in enumerate(self._plan)
                          if e is not None and e[0] is _identity}
        orders = (step_order(self._reads, blocks),
                  per_call_order(self._reads, passed_through, blocks))
        keep = set(passed_through)
        keep.update(i for i, e in enumerate(self._plan) if e is None)
        keep.update(s.index for s in self.status if s.stand_in)
        last = self._last_tensor_result()
        if last is not None:
            keep.add(last)
        keep.update(block.backward for block in blocks)
        for order in orders:
            keep |= read_before_written(order)
        step, calls = (releases(order, keep) for order in orders)
        n = len(self._plan)
        self._drop_step = [step.get(i, ()) for i in range(n)]
        self._drop_calls = [calls.get(i, ()) for i in range(n)]
        self._drop_block = {(part, block.backward): calls.get((part, block.backward), ())
                            for block in blocks for part in (FORWARD, GRADIENTS)}
        self._compile_step()

    def _compile_step(self) -> None:
        """The timed step written out as Python (compiled_step.py), from the plan, its
        releases and its grad modes; _run's loop stays for what it does not express. Left
        to the loop: MindSpore's differentiated blocks (each one's forward runs inside
        value_and_grad through the plan's getters, which read `self._results`: written out,
        every result it reads would have to be written back there first, and a block's
        ~ms cost dwarfs the loop's ~1 us a call); the loop runs every block of the step."""
        self._compiled = None
        if self._blocks or self._recomputed:
            # a recompute reruns plan entries through getters reading self._results
            return
        calls = []
        for i, entry in enumerate(self._plan):
            if entry is None:
                continue
            if i not in self._arguments:
                return              # an entry made elsewhere (no arguments known): the loop
            args, kwargs = self._arguments[i]
            calls.append(StepCall(i, None if entry[0] is _identity else entry[0], args,
                                  kwargs, self.status[i].api, self._grad_at.get(i),
                                  self._drop_step[i]))
        self._compiled = compile_step(calls, self._externals, self._constant, self._results,
                                      self._set_grad, self._grad_restore)
        self._holding_probe_values = self._compiled is not None

    def _differentiate(self, call: Call) -> Any:
        """A training step in MindSpore, which has no backward call to replay: value_and_grad
        over the forward calls the loss depends on since the step's previous backward, made
        and run once the plan reaches the backward (the calls after it read its gradients;
        a backward accumulating onto an earlier one's adds them). Returns (loss, grads), or
        a stand-in when it failed (the forward still runs; the backward is left out)."""
        try:
            block = differentiate(self, call)
            value = block.run()
            self.adapter.sync()
            self._blocks.append(block)
            return value
        except Exception as exc:
            self.status[call.index] = CallStatus(
                call.index, DIFFERENTIATED, False, stand_in=True,
                problem=f"value_and_grad over the replayed forward failed: "
                        f"{type(exc).__name__}: {str(exc).strip()[:200]}")
            return self._stand_in(call)

    def _first_working(self, call: Call, resolve: Callable[[str], Any]):
        if call.index in self._skip:
            return self._stood_in(call, CallStatus(
                call.index, call.replay_api or call.api, False, stand_in=True,
                problem="left out: it did not run in this framework's probe or in the "
                        "traced framework's"))
        if call.alias_of is not None:
            self._arguments[call.index] = ((call.alias_of,), ())
            getter = self._getter(call.alias_of)
            return ((_identity, lambda: (getter(),), dict),
                    CallStatus(call.index, "alias", True), getter(),
                    refs_read((call.alias_of,)))
        if call.index in self._folded:
            self._arguments[call.index] = ((call.args[0],), ())
            getter = self._getter(call.args[0])      # the receiver, passed through
            return ((_identity, lambda: (getter(),), dict),
                    CallStatus(call.index, FOLDED_INTO, True),
                    getter(), refs_read(call.args[:1]))
        route = self._fused.get(call.index) or route_for(call, self.framework, self.mapping)
        if isinstance(route, Unmapped):
            return self._stood_in(call, CallStatus(call.index, call.replay_api or call.api,
                                                   False, problem=route.reason,
                                                   stand_in=True))
        candidates = [route, *route.fallbacks]
        chosen = self._chosen.get(call.index)
        if chosen is not None:
            candidates = [candidates[chosen]] if chosen < len(candidates) else []
        errors = []
        for position, candidate in enumerate(candidates):
            try:
                fn = candidate.make(resolve)
                if call.backward and self.framework == call.framework == "torch" \
                        and call.index not in self._onto:
                    # a backward that accumulates onto an earlier one keeps its gradients
                    fn = clearing_grads(fn, self._weights())
                get_args, get_kwargs = self._binder(candidate)
                value = self._probing(call, fn)(*get_args(), **get_kwargs())
                self.adapter.sync()
            except Exception as exc:        # the next fallback, or a stand-in
                errors.append(f"{candidate.api}: {type(exc).__name__}: {error_line(exc)}")
                continue
            index = chosen if chosen is not None else position
            self._arguments[call.index] = (tuple(candidate.args), tuple(candidate.kwargs))
            return ((fn, get_args, get_kwargs),
                    CallStatus(call.index, candidate.api, True, route=index,
                               problem="; ".join(errors)[:400] or None), value,
                    refs_read((*candidate.args, *(v for _, v in candidate.kwargs))))
        return self._stood_in(call, CallStatus(call.index, route.api, False,
                                               problem="; ".join(errors)[:400] or "no route",
                                               stand_in=True))

    def _probing(self, call: Call, fn: Callable[..., Any]) -> Callable[..., Any]:
        """The probe's run of a call in its grad mode (a torch call the script made under
        no_grad); the plan keeps `fn` alone and the timed runs set the mode where it changes
        (_plan_grad_modes)."""
        if not call.grad_enabled and self.framework == "torch":
            return without_grad(fn)
        return fn

    def _weights(self) -> list[Any]:
        """The replay's trainable weights (torch: the tensors that require grad)."""
        return [t for t in self._externals.values() if getattr(t, "requires_grad", False)]

    def _fingerprints(self, value: Any) -> Any:
        try:
            arrays = self.adapter.to_numpy(value)
        except Exception:       # a non-tensor result (a shape, a Python number)
            return None
        if isinstance(arrays, tuple):
            return [fingerprint(np.asarray(a)) if isinstance(a, np.ndarray) else None
                    for a in arrays]
        return fingerprint(np.asarray(arrays)) if isinstance(arrays, np.ndarray) else None

    # -- timing ------------------------------------------------------------------------------
    def _run(self) -> None:
        """One step: each call's result dropped after its last reader (_plan_releases);
        written out as Python where it could be (_compile_step), else this loop."""
        compiled = self._compiled
        if compiled is not None:
            if self._holding_probe_values:
                # as the loop's first step does: the probe kept every result
                for j in compiled.dropped:
                    self._results[j] = None
                self._holding_probe_values = False
            compiled.run()
            return
        results, blocks, drops = self._results, self._blocks, self._drop_step
        if not blocks:
            modes, set_grad = self._grad_at, self._set_grad
            for i, entry in enumerate(self._plan):
                if entry is not None:
                    if i in modes:
                        set_grad(modes[i])
                    fn, get_args, get_kwargs = entry
                    results[i] = fn(*get_args(), **get_kwargs())
                    for j in drops[i]:
                        results[j] = None
            if self._grad_restore:
                set_grad(True)
            return
        starts = self._block_starts()
        inside = self._inside_blocks()
        for i, entry in enumerate(self._plan):
            block = starts.get(i)
            if block is not None:
                # the forward calls of the loss, and their gradients
                results[block.backward] = block.run()
            elif entry is not None and i not in inside:
                fn, get_args, get_kwargs = entry
                results[i] = fn(*get_args(), **get_kwargs())
            else:
                continue
            for j in drops[i]:
                results[j] = None

    def time_step(self, samples: int) -> list[float]:
        """`samples` step times: every call back to back, one sync at the end."""
        clock, sync, run = self.clock, self.adapter.sync, self._run
        out = []
        for _ in range(samples):
            sync()
            start = clock()
            run()
            sync()
            out.append(clock() - start)
        return out

    def time_script_steps(self, samples: int) -> list[float]:
        """`samples` step times ended as the script's step ends in its launch mode: a queued
        launch by reading the step's last result back (time_step_to_host), a blocking one by
        the sync (time_step). The projection and the suggestions' savings both time this."""
        if self.adapter.launch() == LAUNCH_QUEUED:
            return self.time_step_to_host(samples)
        return self.time_step(samples)

    def time_step_to_host(self, samples: int) -> list[float]:
        """`samples` step times in a queued launch, each ended as a script's step ends: its
        last result read back to the host (which waits for every call queued before it);
        the queue is drained before each sample, untimed. Ending with the framework's sync
        instead also waits for work the read does not. Measured on MindSpore 2.10's CPU
        queue, one process, 30 alternated rounds: a captured step of 8 x (transpose, matmul,
        relu) on 128x256 read 58.2 ms ended by the executor's sync, 36.0 ms ended by reading
        its result; the same step without the transposes 31.9 ms either way; in another
        process the script's own step read 32.1 ms where the sync-ended replay read 54.8.
        A suggestion's saving timed with the sync was mostly that wait (docs/model.md)."""
        clock, sync, run, read = self.clock, self.adapter.sync, self._run, self.adapter.to_numpy
        last = self._last_tensor_result()
        out = []
        for _ in range(samples):
            sync()
            start = clock()
            run()
            if last is None:
                sync()
            else:
                read(self._results[last])
            out.append(clock() - start)
        return out

    def _last_tensor_result(self) -> int | None:
        """The last call that ran (not a stand-in nor an alias) whose recorded output is a
        tensor: the step's result a script reads back."""
        inside = self._inside_blocks()
        for i in range(len(self._plan) - 1, -1, -1):
            entry, outputs = self._plan[i], self.step.calls[i].outputs
            if entry is not None and entry[0] is not _identity and i not in inside \
                    and outputs and outputs[0] == "tensor" and not self.status[i].stand_in:
                return i
        return None

    def time_calls(self, passes: int) -> list[list[float]]:
        """Per call, `passes` latencies in context (sync after each call); None-plan calls
        (stand-ins, aliases) read 0. Results are dropped after their last reader, as in a
        step; the drop is not timed."""
        clock, sync, results = self.clock, self.adapter.sync, self._results
        drops, block_drops = self._drop_calls, self._drop_block
        modes, set_grad = self._grad_at, self._set_grad
        times = [[0.0] * passes for _ in self._plan]
        for p in range(passes):
            sync()
            for i, entry in enumerate(self._plan):
                if entry is None or entry[0] is _identity:
                    continue
                if i in modes:
                    set_grad(modes[i])
                fn, get_args, get_kwargs = entry
                args, kwargs = get_args(), get_kwargs()
                start = clock()
                results[i] = fn(*args, **kwargs)
                sync()
                times[i][p] = clock() - start
                for j in drops[i]:
                    results[j] = None
            if self._grad_restore:
                set_grad(True)
            for block in self._blocks:
                # each backward: value_and_grad's call less the same forward calls run back
                # to back (both synced once at the end: each call synced alone would
                # overstate a queued forward and leave the backward nothing)
                start = clock()
                block.forward()
                sync()
                forward = clock() - start
                for j in block_drops[(FORWARD, block.backward)]:
                    results[j] = None
                start = clock()
                results[block.backward] = block.run()
                sync()
                times[block.backward][p] = max(0.0, clock() - start - forward)
                for j in block_drops[(GRADIENTS, block.backward)]:
                    results[j] = None
        return times

    def _block_starts(self) -> dict[int, "Differentiated"]:
        """Each differentiated block by the call where it runs in the step."""
        return {block.first: block for block in self._blocks}

    def _inside_blocks(self) -> frozenset[int]:
        """The calls the differentiated blocks run (not run alone in a step)."""
        return frozenset().union(*(block.inside for block in self._blocks))

    def warm_up(self, min_runs: int, min_time_s: float) -> int:
        runs, started = 0, self.clock()
        while runs < min_runs or self.clock() - started < min_time_s:
            self._run()
            self.adapter.sync()
            runs += 1
        return runs


# MindSpore's framework errors open with a frame of dashes and section headers
# ("- Framework Unexpected Exception Raised:", "- Kernel build failed: (For framework
# developers)") and a boilerplate sentence; the cause is the first line after them
# ("CPU kernel op [Default/Argmax-op0] resize failed."). A reason that read only the first
# line said "RuntimeError: ------" (hf_roberta_mlm_inference.py's argmax).
_BOILERPLATE = ("This exception is caused by framework's unexpected error",)


def error_line(exc: BaseException) -> str:
    """The first line of an exception's message that says something."""
    for line in str(exc).splitlines():
        line = line.strip()
        if not line or set(line) <= set("-=*") or line.startswith("- ") \
                or line.startswith(_BOILERPLATE):
            continue
        return line
    return ""


def gathered(getters: Sequence[Callable[[], Any]]) -> Callable[[], tuple]:
    """A call's arguments read afresh as one tuple. Up to three written out: a generator
    over the getters cost ~1.0 us a call more than the script's own call, the written-out
    tuple ~0.4 (Tensor.__add__ on 64x64, one thread, medians of 15 alternated rounds of
    20,000: script 1.44 us, generator 2.42, written out 1.86), and a swap that removes
    calls is credited that overhead for each."""
    if not getters:
        return tuple
    if len(getters) == 1:
        (g0,) = getters
        return lambda: (g0(),)
    if len(getters) == 2:
        g0, g1 = getters
        return lambda: (g0(), g1())
    if len(getters) == 3:
        g0, g1, g2 = getters
        return lambda: (g0(), g1(), g2())
    return lambda: tuple([g() for g in getters])


def _identity(x: Any) -> Any:
    return x


def stand_in_function(constant: Any, framework: str) -> Callable[..., Any]:
    """The stand-in's call: `constant` (a tensor or a tuple of them, None) plus, on each
    floating output, s - stop_gradient(s) with s the sum of the floating inputs' means: the
    values stay the drawn ones (equal in both frameworks), and the gradient reaches every
    input (d/dx = 1/x.size per element), so a backward through it runs the whole chain."""
    def stand_in(*inputs: Any) -> Any:
        total = None
        for x in inputs:
            if _floating(x):
                mean = x.mean()
                total = mean if total is None else total + mean
        if total is None:
            return constant
        return _shifted(constant, total - _stop_gradient(framework, total))
    return stand_in


def _stop_gradient(framework: str, value: Any) -> Any:
    if isinstance(value, (np.ndarray, np.generic)):    # the unit tests' numpy frameworks
        return value.copy()
    if framework == "mindspore":
        import mindspore
        return mindspore.ops.stop_gradient(value)
    return value.detach()


def _floating(value: Any) -> bool:
    dtype = getattr(value, "dtype", None)
    shape = getattr(value, "shape", None)
    return (dtype is not None and shape is not None and "float" in str(dtype).lower()
            and int(np.prod(tuple(shape))) > 0)


def _shifted(value: Any, shift: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(_shifted(v, shift) for v in value)
    if not _floating(value):
        return value
    if value.dtype != shift.dtype:
        shift = shift.astype(value.dtype) if hasattr(shift, "astype") else shift.to(value.dtype)
    return value + shift


def clearing_grads(fn: Callable[..., Any], weights: Sequence[Any]) -> Callable[..., Any]:
    """torch's `loss.backward()` as a step runs it: the weights' gradients cleared first
    (`zero_grad()`'s default, `p.grad = None`), so each replayed backward makes them anew
    instead of adding to the last step's."""
    def backward(*args: Any, **kwargs: Any) -> Any:
        for weight in weights:
            weight.grad = None
        return fn(*args, **kwargs)
    return backward


DIFFERENTIATED = "value_and_grad over the replayed forward, less the forward"


def rerunning(region: Sequence[int], plan: Sequence[Any],
              results: list[Any]) -> Callable[[], None]:
    """The checkpointed calls `region` run once more in program order (model/recompute.py),
    each reading its arguments as in the step (the region's own results as just remade);
    what the results held before is put back, so the rerun keeps nothing alive."""
    def rerun() -> None:
        saved = [results[i] for i in region]
        for i in region:
            fn, get_args, get_kwargs = plan[i]
            results[i] = fn(*get_args(), **get_kwargs())
        for i, value in zip(region, saved):
            results[i] = value
    return rerun


def after(rerun: Callable[[], None], fn: Callable[..., Any],
          first: bool = False) -> Callable[..., Any]:
    """`fn` with the recompute run in its window: before it (`first`: a torch backward,
    whose recompute precedes the gradients it feeds) or after it (a MindSpore
    value_and_grad block, whose forward wrote the results the rerun reads)."""
    if first:
        def recomputed_first(*args: Any, **kwargs: Any) -> Any:
            rerun()
            return fn(*args, **kwargs)
        return recomputed_first

    def recomputed_after(*args: Any, **kwargs: Any) -> Any:
        value = fn(*args, **kwargs)
        rerun()
        return value
    return recomputed_after


def make_trainable(framework: str, tensor: Any, name: str) -> Any:
    """A weight the step differentiates: torch tracks it (requires_grad), MindSpore takes
    it as a Parameter, the weights value_and_grad differentiates with respect to."""
    if framework == "torch":
        return tensor.requires_grad_(True)
    if framework == "mindspore":
        import mindspore
        return mindspore.Parameter(tensor, name=name)
    return tensor


def grad_mode_setter() -> Callable[[bool], Any]:
    """torch's grad mode, set as a function (`torch.set_grad_enabled(False)` turns it off
    until set again)."""
    import torch
    return torch.set_grad_enabled


def without_grad(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A call the script made with torch's grad mode off (an optimizer's update)."""
    import torch

    def call(*args: Any, **kwargs: Any) -> Any:
        with torch.no_grad():
            return fn(*args, **kwargs)
    return call


@dataclass
class Differentiated:
    inside: frozenset[int]       # the forward calls the loss depends on (since the step's
                                 # previous backward)
    first: int                   # where the differentiated call runs in the step
    backward: int                # the backward call it stands for
    run: Callable[[], Any]       # forward and gradients
    forward: Callable[[], Any]   # the same forward calls alone
    # results `run` reads besides the forward's (the written forward output's, the earlier
    # backward's gradients it adds to): a timed run keeps them until the block has run
    outside_reads: frozenset[int] = frozenset()
    # the external ids of the weights whose gradients `run` returns, in their order
    weights: tuple[int, ...] = ()


def differentiate(replayer: "Replayer", backward: Call) -> Differentiated:
    """value_and_grad(forward, None, weights) over the calls the loss depends on since the
    step's previous backward (trainable.block_calls), with the trainable weights they read;
    the forward writes every result it makes, so the calls after it read them as in the
    step. A torch backward that accumulates onto an earlier one (trainable.accumulated_onto)
    returns the sum of its gradients and that block's, weight by weight, as torch's `.grad`
    holds it after the second backward."""
    import mindspore

    loss_ref = loss_of(backward)
    if loss_ref is None:
        raise ValueError("the backward call's tensor is not made inside the step")
    gradients_only = backward.api == AUTOGRAD_GRAD
    if gradients_only:
        refused = unreplayable_autograd_grad(backward)
        if refused:
            raise ValueError(refused)
    order = block_calls(replayer.step.calls, backward)
    if not order:
        raise ValueError("the loss is made before the step's previous backward")
    plan, results = replayer._plan, replayer._results
    if any(plan[i] is None and replayer.step.calls[i].alias_of is None for i in order):
        raise ValueError("a call the loss depends on does not run in MindSpore")
    listed = bind(("loss", "inputs"), backward.args, backward.kwargs).inputs
    if isinstance(listed, Ext):
        listed = Seq("tuple", (listed,))  # autograd.grad(loss, w): one tensor, one gradient
    if isinstance(listed, Seq):
        # the weights the script's value_and_grad named, in its order (its grads' order)
        if not all(isinstance(w, Ext) for w in listed.items):
            raise ValueError("a weight value_and_grad differentiates is made inside the step")
        ids = [w.id for w in listed.items]
    else:
        # torch's backward names none: the trainable weights the loss's calls read
        read = {x.id for i in order for x in exts_in(replayer.step.calls[i])}
        ids = [e for e, t in replayer._externals.items()
               if isinstance(t, mindspore.Parameter) and t.requires_grad and e in read]
    weights = [replayer._externals[e] for e in ids]
    loss_index = loss_ref.call

    def forward() -> Any:
        for i in order:
            fn, get_args, get_kwargs = plan[i]
            results[i] = fn(*get_args(), **get_kwargs())
        return results[loss_index]

    grad_fn = mindspore.value_and_grad(forward, None, weights)
    if gradients_only:
        # torch.autograd.grad returns the gradients alone (a tuple, one per input)
        return Differentiated(frozenset(order), order[0], backward.index,
                              lambda: grad_fn()[1], forward, weights=tuple(ids))
    # the backward call's output as captured (capture/observer.py backward_result): the
    # forward's output (with has_aux the loss and its aux values), the weights' gradients,
    # and under a grad_position the inputs' gradients, zeros here (not computed)
    written = bind(("forward_out",), (), backward.kwargs).forward_out     # keyword only
    out = replayer._getter(written) if written is not None else None
    inputs_grads = inputs_gradients(backward.outputs, replayer._tensor)
    reads = refs_read((written,)) if written is not None else frozenset()
    onto = replayer._onto.get(backward.index)
    earlier = next((b for b in replayer._blocks if b.backward == onto), None)
    if earlier is not None:
        return _accumulating(earlier, grad_fn, tuple(ids), order, backward.index, forward,
                             results, reads)

    def run() -> Any:
        loss, grads = grad_fn()
        return (out() if out is not None else loss, grads, *inputs_grads)
    return Differentiated(frozenset(order), order[0], backward.index, run, forward, reads,
                          tuple(ids))


def _accumulating(earlier: Differentiated, grad_fn: Callable[[], Any], ids: tuple[int, ...],
                  order: Sequence[int], backward: int, forward: Callable[[], Any],
                  results: list[Any], reads: frozenset[int]) -> Differentiated:
    """A block whose gradients are added to `earlier`'s, weight by weight (a weight only
    one of them reads keeps its one gradient): (loss, summed grads), over the weights of
    both, `earlier`'s first. The sum is the work torch's second backward does on `.grad`.
    Only a torch `loss.backward()` accumulates (trainable.accumulated_onto): it writes no
    forward output and differentiates no inputs, so the loss and the gradients are all."""
    combined = earlier.weights + tuple(e for e in ids if e not in earlier.weights)
    mine = {e: k for k, e in enumerate(ids)}
    theirs = {e: k for k, e in enumerate(earlier.weights)}
    pairs = tuple((theirs.get(e), mine.get(e)) for e in combined)
    source = earlier.backward

    def run() -> Any:
        loss, grads = grad_fn()
        before = results[source][1]
        return (loss, tuple(grads[m] if t is None else before[t] if m is None
                            else before[t] + grads[m] for t, m in pairs))
    return Differentiated(frozenset(order), order[0], backward, run, forward,
                          reads | {source}, combined)


def inputs_gradients(outputs: Any, tensor: Callable[[Any, str], Any]) -> tuple[Any, ...]:
    """A MindSpore backward's inputs' gradients (the third item of its captured output,
    under a grad_position) as zeros of their recorded shapes and dtypes; () without one.
    The replay differentiates the weights only: the forward's calls read its inputs as
    external tensors, not as arguments a grad_position could name."""
    if not outputs or outputs[0] != "seq" or len(outputs[1]) != 3:
        return ()

    def zeros(node: Any) -> Any:
        if node and node[0] == "tensor":
            return tensor(np.zeros(tuple(node[1])), node[2])
        if node and node[0] == "seq":
            return tuple(zeros(n) for n in node[1])
        return None
    return (zeros(outputs[1][2]),)


# torch.autograd.grad's keywords that change what it computes: a graph of the gradients
# (a second derivative), a vector-Jacobian product's vector, a gradient left None for an
# unused input. retain_graph only keeps buffers alive and allow_unused is moot when every
# input is used (value_and_grad gives zeros where torch would have refused)
_AUTOGRAD_GRAD_CHANGES = ("create_graph", "grad_outputs", "is_grads_batched",
                          "materialize_grads")


def unreplayable_autograd_grad(call: Call) -> str | None:
    """Why MindSpore's value_and_grad cannot stand for this torch.autograd.grad call (None:
    it can): a written keyword that changes the work, or a third positional argument
    (grad_outputs)."""
    given = dict(call.kwargs)
    for name in _AUTOGRAD_GRAD_CHANGES:
        value = given.get(name)
        if value is not None and not (isinstance(value, Lit) and value.value in (None, False)):
            return (f"torch.autograd.grad({name}=...) is not replayed in MindSpore "
                    f"(value_and_grad over the replayed forward differentiates a scalar "
                    f"loss once)")
    if len(call.args) > 2:
        return ("torch.autograd.grad with grad_outputs is not replayed in MindSpore "
                "(value_and_grad over the replayed forward differentiates a scalar loss once)")
    return None

"""Capture a program while a script runs: the tracer's observer (trace/recorder.py
CallObserver) that turns every recorded top-level call into a program Call whose tensor
arguments say where they came from.

A tensor a recorded call returned is a Ref to that call (and the position in its result);
any other tensor (a parameter, a buffer, the script's data) becomes an external tensor,
described once however often it is used, with its observed range (token ids, labels, a
float target in [0, 1]: float_range.py), so a replay draws values that stay in bounds. A
framework layer's call is lowered to the function it performs (lowering.py). Tensors are
followed by identity with weak references: nothing the script drops is kept alive.
"""
from __future__ import annotations

import sys
import weakref
from dataclasses import replace
from typing import Any, Callable

from opbench.config.vocabulary import FLOAT_DTYPES, INTEGER_DTYPES, MODEL_DTYPES
from opbench.model.autograd_function import FUNCTION_APPLY
from opbench.model.capture.float_range import float_range
from opbench.model.capture.layout import ValueKeeper, dim_order, layout_of
from opbench.model.capture.lowering import (Lowered, lower, lower_pass_through,
                                            primitive_init)
from opbench.model.capture.ms_backward import BACKWARD_API
from opbench.model.capture.sites import SiteFinder
from opbench.model.capture.synced_float import SyncedFloats
from opbench.model.program import (Call, Dtype, Ext, ExternalTensor, FunctionForward, Lit,
                                   Marker, Opaque, Ref, Seq, SliceOf, output_at, walk_args)
from opbench.model.steady import call_key, repeated_tail
from opbench.trace.events import MODULE, PRIMITIVE, SCOPE, CallSite, CallEvent
from opbench.trace.recorder import without_defaults

__all__ = ["Capture", "DEFAULT_MAX_CALLS"]

# A training run can make millions of calls; the program keeps the first this many (a few
# hundred bytes each) and counts the rest. A steady state needs only a few steps of them.
DEFAULT_MAX_CALLS = 200_000
# A list longer than this is data, not an argument list: opaque (see trace/signature.py).
MAX_SEQUENCE_ITEMS = 64
# The automatic step count looks every this many calls (one look over 8,192 calls took
# 1.4 ms here at most: under 6 us a call).
TAIL_CHECK_EVERY = 256
_INTEGER_DTYPES = (*INTEGER_DTYPES, "bool")
# The dtypes a replay can make a tensor of: the case library's dtypes and the complex ones
# torch.fft hands over (the vocabulary's MODEL_DTYPES; frameworks/dtypes.py NUMPY_CARRIERS,
# checked equal by tests/unit/test_model_capture.py, is not imported: the capture runs in the
# script's interpreter with few imports, and config/vocabulary.py imports nothing). A tensor
# of another dtype (uint8, int16) is an argument no replay can rebuild, and the call returning
# it is not covered: before, the replay's set-up died on it ("KeyError: 'complex64'", when
# complex64 was such a dtype) and took the run along.
REPLAYABLE_DTYPES = MODEL_DTYPES


class _Tensors:
    """Which objects are framework tensors, and their shape, dtype and kind, for the
    frameworks this process imported (checked lazily: a script imports one or both)."""

    def __init__(self) -> None:
        self._types: tuple[type, ...] | None = None
        self._parameter_types: tuple[type, ...] = ()
        self._modules_seen = -1      # len(sys.modules) when the types were last looked up

    def _load(self) -> tuple[type, ...]:
        types, params = [], []
        torch = sys.modules.get("torch")
        if torch is not None:
            types.append(torch.Tensor)
            params.append(torch.nn.Parameter)
        ms = sys.modules.get("mindspore")
        if ms is not None and hasattr(ms, "Tensor"):
            types.append(ms.Tensor)
            if hasattr(ms, "Parameter"):
                params.append(ms.Parameter)
        self._parameter_types = tuple(params)
        return tuple(types)

    def is_tensor(self, value: Any) -> bool:
        # a framework imported later is looked up once an import happened: looking it up on
        # every argument was 14,000 calls of _load in a 3,600-call capture (cProfile,
        # tools/tracer_in_window.py's sequence), work between two traced calls
        if self._types is None or (len(self._types) < 2
                                   and len(sys.modules) != self._modules_seen):
            self._modules_seen = len(sys.modules)
            self._types = self._load()
        return isinstance(value, self._types)

    def is_parameter(self, value: Any) -> bool:
        return isinstance(value, self._parameter_types)

    @staticmethod
    def shape_dtype(value: Any) -> tuple[tuple[int, ...], str]:
        dtype = str(value.dtype)
        for prefix in ("torch.",):
            dtype = dtype.removeprefix(prefix)
        return tuple(int(d) for d in value.shape), _ms_dtype_name(dtype)

    @staticmethod
    def value_range(value: Any) -> tuple[float, float] | tuple[None, None]:
        try:
            if int(getattr(value, "numel", lambda: value.size)()) == 0:
                return None, None
            if hasattr(value, "asnumpy"):
                # MindSpore: read on the host. Its CPU Reduce has no Bool kernel, and
                # `mask.min()` failed only at the next sync, in the script's own call (the
                # capture of a has_aux training script crashed on `accuracy.mean()`, in CI).
                host = value.asnumpy()
                return float(host.min()), float(host.max())
            low, high = value.min(), value.max()
            return float(low.item()), float(high.item())
        except Exception:       # a tensor that cannot be read back (a device fault): no range
            return None, None


def _ms_dtype_name(name: str) -> str:
    """MindSpore prints dtypes as Float32, Int64, Bool: the case-file spelling is float32."""
    lowered = name.lower()
    return {"bool_": "bool"}.get(lowered, lowered)


def _dtype_object_name(value: Any) -> str | None:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.dtype):
        return str(value).removeprefix("torch.")
    ms = sys.modules.get("mindspore")
    if ms is not None and type(value).__module__.startswith("mindspore") \
            and type(value).__name__ in ("Float", "Int", "UInt", "Bool", "BFloat", "Complex"):
        return _ms_dtype_name(str(value))
    return None


def backward_result(result: Any, grad_position: Any, weights: bool) -> tuple[Any, Any]:
    """(the forward's output, the backward call's output as the replay makes it) from what
    value_and_grad's grad function returned: `(out, grads)`, where `out` is the loss or,
    with has_aux, `(loss, aux...)`, and `grads` the weights' gradients, or with weights and a
    grad_position `(inputs' gradients, weights' gradients)`. The call's output is kept as
    `(out, weights' gradients[, inputs' gradients])`: every tensor within two levels, where
    the captured call's paths can reach it (the weights' gradients under a grad_position sat
    a level deeper, and an update reading them read unseen tensors), and the same whatever
    the script's grad_position, so the replay needs one form."""
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        return result, result
    out, grads = result
    if weights and grad_position is not None and isinstance(grads, (tuple, list)) \
            and len(grads) == 2:
        inputs_grads, weight_grads = grads
        return out, (out, tuple(weight_grads) if isinstance(weight_grads, (tuple, list))
                     else (weight_grads,), inputs_grads)
    return out, (out, grads)


class Capture:
    """The observer. `calls()` and `externals()` give the program once the tracer stopped;
    the durations come from the tracer's events (joined by their index)."""

    def __init__(self, max_calls: int = DEFAULT_MAX_CALLS, steps: int | None = None,
                 on_enough: Callable[[], None] | None = None):
        """steps: steady steps to record (a warm-up step comes on top) before `on_enough` is
        called (it ends the script or stops the tracer); None: record until the script ends
        or max_calls."""
        self.max_calls = max_calls
        self.steps = steps
        self._on_enough = on_enough
        self.enough = False          # the steps are recorded: further calls are not
        self._codes: list[int] = []              # per call: its key's number (steady.py)
        self._code_of: dict[Any, int] = {}
        self._tensors = _Tensors()
        self._values = ValueKeeper()
        # > 0 while a MindSpore backward or compiled call is noted (ms_backward.py,
        # ms_jit.py): those run outside the tracer's guard for its own framework calls, so a
        # tensor method called then (stride(), asnumpy()) was traced as the script's call
        # (six `Tensor.stride` calls in each step of a value_and_grad script, and its replay
        # failed): no layout or values are read then
        self._outside_tracer = 0
        self._sites = SiteFinder()
        self._produced: dict[int, tuple[int, tuple[int, ...]]] = {}   # id -> (call, path)
        self._external_of: dict[int, int] = {}                        # id -> external id
        self._externals: list[ExternalTensor] = []
        self._keep: dict[int, Any] = {}      # weakrefs that clear the maps on collection
        # id -> (call, the float): what a host sync (`.item()`) returned, held so that its id
        # names it while a later call may read it (synced_float.py)
        self._synced = SyncedFloats()
        self._raw: list[tuple[int | None, Call]] = []    # (tracer event index, call)
        self.dropped = 0
        self.markers: list[Marker] = []
        # a MindSpore backward's position -> (its first forward call, its wall time in ns)
        self._backward_spans: dict[int, tuple[int, int]] = {}

    # -- markers --------------------------------------------------------------------------
    def mark(self, label: str = "") -> None:
        """A step boundary the script marked: before the next recorded call. The mark that
        closes the last step wanted (the warm-up step and `steps` steady ones) ends the
        capture."""
        if self.enough:
            self._enough()
            return
        self.markers.append(Marker(len(self._raw), label))
        if self.steps is not None and len(self.markers) >= self.steps + 2:
            self._enough()

    def _enough(self) -> None:
        self.enough = True
        if self._on_enough is not None:
            self._on_enough()

    def _count_steps(self, call: Call) -> None:
        """The automatic rule while the script runs (no marks): every TAIL_CHECK_EVERY calls,
        do the last calls repeat for the warm-up step and `steps` steady ones?"""
        key = call_key(call)
        code = self._code_of.get(key)
        if code is None:
            code = self._code_of[key] = len(self._code_of)
        self._codes.append(code)
        if len(self._codes) % TAIL_CHECK_EVERY == 0 and \
                repeated_tail(self._codes, self.steps) is not None:
            self._enough()

    # -- the observer -----------------------------------------------------------------------
    def on_call(self, index: int, site: CallSite, args: tuple, kwargs: dict,
                result: Any) -> None:
        if site.kind == SCOPE:
            return
        if self.enough:
            self._enough()        # the script caught the ending and went on: end it again
            return
        if len(self._raw) >= self.max_calls:
            self.dropped += 1
            return
        position = len(self._raw)
        torch = sys.modules.get("torch")
        # built into the call, not replaced after: dataclasses.replace on every call of a
        # script under no_grad was 17% of this observer's time (cProfile of
        # hf_bert_inference.py's capture: 2,259 of 2,407 calls), work between two traced calls
        grad_enabled = not (site.framework == "torch" and torch is not None
                            and not torch.is_grad_enabled())
        call = self._describe(position, site, args, kwargs, result, grad_enabled)
        self._raw.append((index, call))
        self._remember_outputs(position, call, result)
        if self.steps is not None and not self.markers:
            self._count_steps(call)

    def _describe(self, position: int, site: CallSite, args: tuple, kwargs: dict,
                  result: Any, grad_enabled: bool) -> Call:
        outputs = self._outputs(result)
        # the user's frame, found after the tracer took the call's time (not in it)
        common = dict(index=position, framework=site.framework, api=site.api,
                      kind=site.kind, outputs=outputs, duration_ns=0, start_ns=0,
                      site=self._sites.find(), grad_enabled=grad_enabled)
        if site.kind != MODULE:
            passed = lower_pass_through(site.api, args[site.skip:], kwargs)
            if passed is not None:
                return self._lowered_call(passed, common)
        if site.kind == MODULE:
            layer, rest = args[0], args[site.skip:]
            lowered = lower(site.api, layer, rest, kwargs)
            if isinstance(lowered, str):
                return Call(replay_api=None, args=self._args(rest), kwargs=self._kwargs(kwargs),
                            problem=lowered, **common)
            return self._lowered_call(lowered, common)
        if site.kind == PRIMITIVE:
            init, problem = _primitive_init(args[0])
            return Call(replay_api=None if problem else site.api,
                        args=self._args(args[site.skip:]), kwargs=self._kwargs(kwargs),
                        problem=problem, init=init, **common)
        call_args = self._args(args[site.skip:])
        # torch's Python functions forward every parameter by keyword to the tracer's function
        # mode (F.cross_entropy(logits, y) arrives with size_average=None, reduce=None,
        # ignore_index=-100, ...; F.softmax(x, dim=-1) with _stacklevel=3): the other
        # framework refused those the script never wrote ("unexpected keyword argument
        # 'size_average'"). A keyword equal to its signature's literal default does the same
        # work whether written or not, so the program keeps only the others, by the rule the
        # trace's signatures use.
        call_kwargs = self._kwargs(without_default_memory_format(
            site.api, args[site.skip:],
            without_defaults(kwargs, site.defaults) if site.defaults else kwargs))
        problem = _unrebuildable(call_args, call_kwargs) or _unreplayable_output(outputs)
        backward = site.api.endswith(".backward")
        return Call(replay_api=None if problem else site.api, args=call_args,
                    kwargs=call_kwargs, problem=problem, backward=backward, **common)

    def _lowered_call(self, lowered: Lowered, common: dict[str, Any]) -> Call:
        args = self._args(lowered.args)
        if lowered.api is None:
            # what it returns is its input, whatever the input is: a tensor, or a tuple or
            # list of them (the grad reducer's Identity on a TrainOneStepCell's gradients was
            # "an alias of a non-tensor", 12-69% of ms_train_one_step_cell.py's region)
            alias = args[0] if args and _all_tensors(args[0]) else None
            return Call(replay_api=None, args=args, kwargs=(), alias_of=alias,
                        problem=None if alias is not None else "an alias of a non-tensor",
                        **common)
        kwargs = tuple((k, self._arg(v)) for k, v in lowered.kwargs)
        problem = _unrebuildable(args, kwargs) or _unreplayable_output(common["outputs"])
        return Call(replay_api=None if problem else lowered.api, args=args, kwargs=kwargs,
                    init=lowered.init, pick=lowered.pick, problem=problem, **common)

    # -- a MindSpore backward (ms_backward.py) -----------------------------------------------
    def next_position(self) -> int:
        return len(self._raw)

    def backward(self, loss: Any, weights: Any, grad_position: Any, result: Any, first: int,
                 elapsed_ns: int, api: str = BACKWARD_API, problem: str | None = None) -> None:
        """value_and_grad's grad function (or GradOperation's, `api`: ms_grad_operation.py)
        returned `result` ((loss, grads)) after elapsed_ns; the calls captured from `first` on
        were its forward. `problem`: why the wrapper already knows it is not replayed."""
        self._outside_tracer += 1
        try:
            self._backward(loss, weights, grad_position, result, first, elapsed_ns, api,
                           problem)
        finally:
            self._outside_tracer -= 1

    def _backward(self, loss: Any, weights: Any, grad_position: Any, result: Any, first: int,
                  elapsed_ns: int, api: str, problem: str | None) -> None:
        if len(self._raw) >= self.max_calls:
            self.dropped += 1
            return
        position = len(self._raw)
        produced = self._made_by(loss) if loss is not None else None
        if produced is not None and id(loss) not in self._produced:
            # found by memory: the object handed back reads as the call that made it too
            # (the forward's output below, and the script's own reads of it)
            self._note(loss, *produced)
        # a list, a tuple or MindSpore's ParameterTuple (a tuple)
        listed = list(weights) if isinstance(weights, (list, tuple)) else None
        problem = problem or _backward_problem(api.rsplit(".", 1)[-1], produced, listed)
        args: tuple[Any, ...] = ()
        if produced is not None:
            args = (Ref(*produced),)
        if listed and problem is None:
            args += (Seq("list", tuple(self._arg(w) for w in listed)),)
        out, canonical = backward_result(result, grad_position, bool(listed))
        # the forward's whole output (the loss, or with has_aux the loss and its aux values)
        # as the calls that made it, read before the result is noted as this call's: the
        # replay returns these values where the script's grad function returned them
        kwargs = (("forward_out", self._arg(out)),) if problem is None else ()
        call = Call(index=position, framework="mindspore", api=api, kind="function",
                    replay_api=None if problem else BACKWARD_API, args=args, kwargs=kwargs,
                    outputs=self._outputs(canonical), duration_ns=0, start_ns=0,
                    problem=problem, backward=True, site=self._sites.find())
        self._raw.append((None, call))
        self._backward_spans[position] = (first, elapsed_ns)
        self._note_tree(canonical, position, ())

    def _made_by(self, tensor: Any) -> tuple[int, tuple[int, ...]] | None:
        """The captured call (and the path in its result) that made `tensor`: by identity,
        else by memory, for a forward output MindSpore hands back as a new tensor object
        over the same memory (GradOperation after the network already ran with grad on:
        ms_grad_operation.py). Only a tensor of the same shape and dtype made since the last
        backward or compiled call is compared (the loss: a few candidates)."""
        found = self._produced.get(id(tensor))
        if found is not None or not self._tensors.is_tensor(tensor):
            return found
        pointer = _memory_of(tensor)
        if pointer is None:
            return None
        since = max(self._backward_spans, default=-1)
        described = self._tensors.shape_dtype(tensor)
        for key, made in reversed(list(self._produced.items())):
            if made[0] <= since:
                continue
            kept = self._keep.get(key)
            other = kept.value if isinstance(kept, _Strong) else kept() if kept else None
            if other is not None and self._tensors.shape_dtype(other) == described \
                    and _memory_of(other) == pointer:
                return made
        return None

    def compiled(self, api: str, args: tuple, kwargs: dict, result: Any, problem: str,
                 first: int, elapsed_ns: int) -> None:
        """A compiled function (ms_jit.py) returned `result` after elapsed_ns, synced: one
        call that no replay runs (`problem` says why), whose outputs the script's later calls
        read; calls captured from `first` on ran inside it (none, as a rule)."""
        self._outside_tracer += 1
        try:
            self._compiled(api, args, kwargs, result, problem, first, elapsed_ns)
        finally:
            self._outside_tracer -= 1

    def _compiled(self, api: str, args: tuple, kwargs: dict, result: Any, problem: str,
                  first: int, elapsed_ns: int) -> None:
        if len(self._raw) >= self.max_calls:
            self.dropped += 1
            return
        position = len(self._raw)
        call = Call(index=position, framework="mindspore", api=api, kind="function",
                    replay_api=None, args=self._args(args), kwargs=self._kwargs(kwargs),
                    outputs=self._outputs(result), duration_ns=0, start_ns=0,
                    problem=problem, site=self._sites.find())
        self._raw.append((None, call))
        self._backward_spans[position] = (first, elapsed_ns)
        self._note_tree(result, position, ())

    # -- activation checkpointing (torch_checkpoint.py) ----------------------------------------
    def checkpointed(self, first: int) -> None:
        """torch.utils.checkpoint.checkpoint, entered with grad on, returned; the calls
        captured from `first` on ran inside it. Marks them `recompute` (model/recompute.py)
        and as made with grad on: the reentrant checkpoint runs its block under no_grad and
        they were recorded so, but its recompute runs them with grad and the gradient reaches
        the weights inside through them."""
        if self._outside_tracer:
            return
        for position in range(first, len(self._raw)):
            event, call = self._raw[position]
            if call.api == FUNCTION_APPLY or call.backward:
                continue
            self._raw[position] = (event, replace(call, recompute=True, grad_enabled=True))

    # -- a custom torch.autograd.Function (torch_function.py) ---------------------------------
    def function_applied(self, name: str, args: tuple, kwargs: dict, result: Any,
                         first: int) -> None:
        """`name`.apply(*args, **kwargs) returned `result`; the calls captured from `first`
        on ran in its forward. Adds the call standing for its output
        (model/autograd_function.py) where the replay can give it a gradient chain: the
        forward made captured calls, one of them made the result (a tensor), grad mode is on
        and some input of the result's shape and dtype requires grad. Otherwise nothing is
        added: the forward's calls replay as they ran (under no_grad), as before."""
        if self.enough or self._outside_tracer:
            return
        # this runs outside the tracer's guard for its own framework calls: a tensor method
        # called here (the output's stride()) was traced as the script's call, one per apply
        self._outside_tracer += 1
        try:
            self._function_applied(name, args, kwargs, result, first)
        finally:
            self._outside_tracer -= 1

    def _function_applied(self, name: str, args: tuple, kwargs: dict, result: Any,
                          first: int) -> None:
        position = len(self._raw)
        if position == first or position >= self.max_calls:
            return
        torch = sys.modules.get("torch")
        if torch is None or not torch.is_grad_enabled() or not self._tensors.is_tensor(result):
            return
        produced = self._produced.get(id(result))
        if produced is None or produced[0] < first:
            return
        shape_dtype = self._tensors.shape_dtype(result)
        inputs: dict[int, Any] = {}
        for value in (*args, *kwargs.values()):
            if self._tensors.is_tensor(value) and getattr(value, "requires_grad", False) \
                    and self._tensors.shape_dtype(value) == shape_dtype:
                inputs.setdefault(id(value), value)
        if not inputs:
            return
        call_args = (Ref(*produced), Seq("tuple", self._args(tuple(inputs.values()))))
        problem = _unrebuildable(call_args, ())
        call = Call(index=position, framework="torch", api=FUNCTION_APPLY, kind="function",
                    replay_api=None if problem else FUNCTION_APPLY, args=call_args, kwargs=(),
                    outputs=self._outputs(result), duration_ns=0, start_ns=0,
                    problem=problem, site=self._sites.find(),
                    function=FunctionForward(name, position - first))
        self._raw.append((None, call))
        # no time of its own (an empty span: calls() starts it where the call before ended):
        # apply's bookkeeping cannot be told apart from the capture's own work between the
        # forward's calls, which is larger (~20-30 us a call, light.py)
        self._backward_spans[position] = (position, 0)
        self._note_tree(result, position, ())

    def function_positions(self) -> frozenset[int]:
        """The calls that stand for a Function's output: no tracer sees them, and they have
        no time of their own (the light pass leaves them out of its matching)."""
        return frozenset(call.index for _, call in self._raw if call.function is not None)

    # -- arguments --------------------------------------------------------------------------
    def _args(self, values: tuple) -> tuple[Any, ...]:
        return tuple(self._arg(v) for v in values)

    def _kwargs(self, kwargs: dict) -> tuple[tuple[str, Any], ...]:
        return tuple((k, self._arg(v)) for k, v in kwargs.items())

    def _arg(self, value: Any, depth: int = 0) -> Any:
        if value is None or isinstance(value, (bool, int, float, str)):
            return self._synced.ref(value) or Lit(value)
        if self._tensors.is_tensor(value):
            found = self._produced.get(id(value))
            if found is not None:
                made = output_at(self._raw[found[0]][1].outputs, found[1])
                if made and made[0] == "other":        # a tensor of a dtype no replay makes
                    return Opaque(made[1])
                return Ref(found[0], found[1])
            ext = self._external(value)
            dtype = self._externals[ext].dtype
            if dtype not in REPLAYABLE_DTYPES:
                return Opaque(f"{dtype} tensor")
            return Ext(ext)
        if isinstance(value, slice):
            parts = (value.start, value.stop, value.step)
            if all(p is None or isinstance(p, int) for p in parts):
                return SliceOf(*parts)
            return Opaque("slice", "")
        if value is Ellipsis:
            return Opaque("ellipsis", "...")
        if isinstance(value, (list, tuple)):
            if len(value) > MAX_SEQUENCE_ITEMS or depth > 3:
                return Opaque(type(value).__name__, f"len={len(value)}")
            return Seq("list" if isinstance(value, list) else "tuple",
                       tuple(self._arg(v, depth + 1) for v in value))
        name = _dtype_object_name(value)
        if name is not None:
            return Dtype(name)
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(value, torch.Size):
            return Seq("tuple", tuple(Lit(int(v)) for v in value))
        if torch is not None and isinstance(value, torch.device):
            return Lit(str(value))      # "cpu": a replay on one device can take its name
        return Opaque(type(value).__name__, "")

    def _external(self, tensor: Any) -> int:
        key = id(tensor)
        found = self._external_of.get(key)
        if found is not None:
            return found
        shape, dtype = self._tensors.shape_dtype(tensor)
        low, high = self._range(tensor, shape, dtype)
        role = "input"
        if self._tensors.is_parameter(tensor):
            # a Parameter that takes no gradient (MindSpore's BatchNorm moving statistics,
            # a frozen weight) is state: a replay keeps it a Parameter, never trains it
            role = "parameter" if getattr(tensor, "requires_grad", True) else "state"
        ext = ExternalTensor(len(self._externals), shape, dtype, role, "", low, high,
                             **self._extras(tensor, shape, dtype))
        self._externals.append(ext)
        self._external_of[key] = ext.id
        self._watch(tensor, key)
        return ext.id

    def _range(self, tensor: Any, shape: tuple[int, ...], dtype: str
               ) -> tuple[float | None, float | None]:
        """An integer or bool tensor's min and max; a float one's (sampled where large:
        float_range.py), not read while outside the tracer's guard (see _outside_tracer)."""
        if dtype in _INTEGER_DTYPES:
            return self._tensors.value_range(tensor)
        if dtype in FLOAT_DTYPES and not self._outside_tracer:
            return float_range(tensor, shape)
        return None, None

    def _extras(self, tensor: Any, shape: tuple[int, ...], dtype: str) -> dict[str, Any]:
        """The layout and small values of a tensor (layout.py), as ExternalTensor's fields."""
        if self._outside_tracer:
            return {}
        extras: dict[str, Any] = layout_of(tensor, shape)
        if dtype in _INTEGER_DTYPES:
            extras.update(self._values.describe(tensor, shape, dtype, extras))
        return extras

    # -- outputs ---------------------------------------------------------------------------
    def _outputs(self, result: Any, depth: int = 0) -> Any:
        if self._tensors.is_tensor(result):
            shape, dtype = self._tensors.shape_dtype(result)
            if dtype not in REPLAYABLE_DTYPES:
                return ("other", f"{dtype} tensor")
            # a replay that starts after this call draws such a tensor from its range
            low, high = self._range(result, shape, dtype)
            extras = self._extras(result, shape, dtype)
            if extras:
                # a step reading this output from before the step reads it as an external
                # (steady.external_from_output) with the layout and values the script had
                # (pairs, not an object: a described output stays hashable)
                return ("tensor", shape, dtype, low, high, tuple(extras.items()))
            if dtype in _INTEGER_DTYPES or low is not None or high is not None:
                return ("tensor", shape, dtype, low, high)
            return ("tensor", shape, dtype)
        if isinstance(result, (tuple, list)) and depth < 2 and len(result) <= MAX_SEQUENCE_ITEMS:
            return ("seq", tuple(self._outputs(r, depth + 1) for r in result))
        if result is None:
            return ("none",)
        return ("other", type(result).__name__)

    def _remember_outputs(self, position: int, call: Call, result: Any) -> None:
        self._synced.note(call.api, position, result)
        if call.alias_of is not None:
            # the layer returned its input: later uses of the output are uses of the input
            self._note_alias(result, call.alias_of)
            return
        self._note_tree(result, position, ())

    def _note_alias(self, result: Any, alias: Ref | Ext | Seq) -> None:
        """Each tensor of an alias's result as the input it stands for, element by element
        where the input was a tuple or list."""
        if isinstance(alias, Seq):
            if isinstance(result, (tuple, list)) and len(result) == len(alias.items):
                for item, source in zip(result, alias.items):
                    self._note_alias(item, source)
            return
        if not self._tensors.is_tensor(result):
            return
        if isinstance(alias, Ref):
            self._note(result, alias.call, alias.path)
        else:
            self._external_of[id(result)] = alias.id
            self._watch(result, id(result))

    def _note_tree(self, value: Any, position: int, path: tuple[int, ...]) -> None:
        if self._tensors.is_tensor(value):
            self._note(value, position, path)
        elif isinstance(value, (tuple, list)) and len(path) < 2 \
                and len(value) <= MAX_SEQUENCE_ITEMS:
            for i, item in enumerate(value):
                self._note_tree(item, position, path + (i,))

    def _note(self, tensor: Any, position: int, path: tuple[int, ...]) -> None:
        if self._tensors.is_parameter(tensor):
            # an initialiser returns the parameter it filled in place: the parameter stays an
            # external tensor (a weight of the model), not that call's output
            return
        key = id(tensor)
        self._produced[key] = (position, path)
        self._external_of.pop(key, None)
        self._watch(tensor, key)

    def _watch(self, tensor: Any, key: int) -> None:
        """Forget a tensor's id when the script drops the tensor: ids are reused."""
        if key in self._keep:
            return

        def forget(_ref: Any, key: int = key) -> None:
            self._produced.pop(key, None)
            self._external_of.pop(key, None)
            self._keep.pop(key, None)

        try:
            self._keep[key] = weakref.ref(tensor, forget)
        except TypeError:        # a tensor type without weak references: keep it alive
            self._keep[key] = _Strong(tensor)

    # -- the program -----------------------------------------------------------------------
    def calls(self, events: list[CallEvent]) -> list[Call]:
        """The captured calls with their traced durations and start times."""
        by_index = {e.index: e for e in events}
        out: list[Call] = []
        for event_index, call in self._raw:
            span = self._backward_spans.get(call.index)
            if span is not None:
                # the grad function's (or a compiled function's) time less the calls captured
                # inside it; it ran after them
                first, elapsed = span
                inside = out[first:call.index]
                before = out[call.index - 1] if call.index else None
                start = before.start_ns + before.duration_ns if before else 0
                out.append(_with_time(call, max(elapsed - sum(c.duration_ns for c in inside),
                                                0), start))
                continue
            event = by_index.get(event_index)
            if event is None:          # past the tracer's event cap: no duration
                out.append(call)
                continue
            out.append(_with_time(call, event.duration_ns, event.start_ns))
        return out

    def traced_apis(self, events: list[CallEvent]) -> list[str | None]:
        """Per captured call, the API name its tracer event gave (what a timing-only run of
        the script sees: capture/light.py); None for a call the capture made up (a MindSpore
        backward, a compiled function) or one past the tracer's event cap."""
        by_index = {e.index: e.api for e in events}
        return [by_index.get(event_index) if event_index is not None else None
                for event_index, _ in self._raw]

    def externals(self) -> list[ExternalTensor]:
        return list(self._externals)


def _backward_problem(name: str, produced: Any, listed: list | None) -> str | None:
    """Why a backward (value_and_grad's or GradOperation's grad function: `name`) is not
    replayed: its loss made by no captured call, no weights, or too many of them."""
    if produced is None:
        return f"the loss {name} differentiated was not made by a captured call"
    if not listed:
        return f"{name} over the inputs (no weights): only gradients of Parameters are replayed"
    if len(listed) > MAX_SEQUENCE_ITEMS:
        return f"{name} over {len(listed)} weights: at most {MAX_SEQUENCE_ITEMS} are replayed"
    return None


def _memory_of(tensor: Any) -> int | None:
    """Where a MindSpore tensor's data lives (`_data_ptr`, private: the public `data_ptr` is
    a traced Tensor method, which would be recorded as the script's call); None where the
    tensor has no such method or no memory yet."""
    read = getattr(tensor, "_data_ptr", None)
    if read is None:
        return None
    try:
        return int(read())
    except Exception:
        return None


class _Strong:
    def __init__(self, value: Any):
        self.value = value


def _all_tensors(arg: Any) -> bool:
    """A tensor argument (Ref, Ext), or a non-empty tuple or list of them."""
    if isinstance(arg, Seq):
        return bool(arg.items) and all(_all_tensors(item) for item in arg.items)
    return isinstance(arg, (Ref, Ext))


# torch's calls that take a memory_format and default it to contiguous_format; every other
# (Tensor.clone, Tensor.to, the *_like creations, Tensor.float and the other conversions)
# defaults it to preserve_format (torch's docs, "torch.memory_format").
CONTIGUOUS_FORMAT_DEFAULT = frozenset({"torch.empty", "torch.Tensor.contiguous",
                                       "torch.Tensor.is_contiguous"})


def without_default_memory_format(api: str, args: tuple, kwargs: dict) -> dict:
    """The keywords without a `memory_format` that gives the layout the call's default
    gives, which is the same work written or not: the default itself, or contiguous_format
    where the default is preserve_format and the input is not a permuted dense view
    (preserve_format keeps a dense input's strides and makes any other input contiguous).
    transformers' generate writes `input_ids.clone(memory_format=torch.contiguous_format)`,
    and the memory format object, an argument no replay could rebuild, left the clone
    unreplayable in both frameworks (1.1% of hf_gpt2_generate.py's region; MindSpore has no
    memory formats). Tensor.clone is a builtin whose defaults the trace's signatures cannot
    read. Any other memory format (channels_last, a permuted input made contiguous: a
    layout change) stays, and the call is not covered."""
    torch = sys.modules.get("torch")
    value = kwargs.get("memory_format")
    if torch is None or value is None or not api.startswith("torch."):
        return kwargs
    preserve = getattr(torch, "preserve_format", None)
    contiguous = getattr(torch, "contiguous_format", None)
    default = contiguous if api in CONTIGUOUS_FORMAT_DEFAULT else preserve
    same = value is default or (default is preserve and value is contiguous
                                and _not_permuted_dense(args[0] if args else None))
    if default is None or not same:
        return kwargs
    return {k: v for k, v in kwargs.items() if k != "memory_format"}


def _not_permuted_dense(tensor: Any) -> bool:
    """Whether preserve_format lays a copy of this tensor out contiguously (layout.py)."""
    try:
        shape = tuple(int(d) for d in tensor.shape)
        strides = tuple(int(s) for s in tensor.stride())
    except Exception:       # not a tensor, or one without strides
        return False
    return len(strides) == len(shape) and dim_order(shape, strides) is None


def _unrebuildable(args: tuple, kwargs: tuple[tuple[str, Any], ...]) -> str | None:
    """Why a call's described arguments cannot be rebuilt by a replay (an opaque object or a
    list too long to describe), or None."""
    leaves = [*walk_args(args), *walk_args(tuple(v for _, v in kwargs))]
    opaque = [a for a in leaves if isinstance(a, Opaque) and a.type_name != "ellipsis"]
    return f"an argument a replay cannot rebuild ({opaque[0].type_name})" if opaque else None


def _unreplayable_output(outputs: Any) -> str | None:
    """Why a call's result cannot be stood in for or compared (a dtype no replay makes)."""
    if outputs[0] == "other" and outputs[1].endswith(" tensor"):
        return (f"it returns a {outputs[1]}: the replay makes "
                f"{', '.join(REPLAYABLE_DTYPES)} tensors only")
    if outputs[0] == "seq":
        for item in outputs[1]:
            found = _unreplayable_output(item)
            if found:
                return found
    return None


def _plain(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, str))


def _primitive_init(primitive: Any) -> tuple[tuple[tuple[str, Any], ...], str | None]:
    """A primitive instance's constructor arguments, or why a replay cannot rebuild it."""
    try:
        init = primitive_init(primitive)
    except ValueError as exc:
        return (), f"a MindSpore primitive instance whose constructor a replay cannot " \
                   f"rebuild: {exc}"
    unusable = [name for name, value in init if not _plain(value)]
    if unusable:
        return (), (f"a MindSpore primitive instance whose constructor argument "
                    f"{unusable[0]!r} a replay cannot rebuild")
    return init, None


def _with_time(call: Call, duration_ns: int, start_ns: int) -> Call:
    return replace(call, duration_ns=duration_ns, start_ns=start_ns)


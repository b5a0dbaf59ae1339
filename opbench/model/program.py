"""A captured program: the framework calls a user's script made, in order, with where each
tensor argument came from (the data flow), as plain frozen records that survive a JSON file
between the script's interpreter and opbench.

An argument is one of:
  Ref(call, path)      a tensor an earlier call of the program returned (path indexes into a
                       tuple/list result: () is the result itself)
  Ext(id)              a tensor no recorded call produced: a parameter, a buffer, the script's
                       input data (Program.externals[id] says its shape, dtype and range)
  Lit(value)           None, bool, int, float or str
  Dtype(name)          a dtype object (torch.float16 -> "float16"), translatable
  SliceOf(start, stop, step)   a basic slice (x[:, 0] indexes with (SliceOf, Lit))
  Seq(kind, items)     a list or tuple of arguments
  Opaque(type, text)   anything else: the call cannot be replayed, and says why
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Union

from opbench.model.json_records import (Codec, JsonRecordError, each, from_object, from_row,
                                        json_field, optional, row_of, to_object, to_row,
                                        tuple_of)

__all__ = ["Arg", "Call", "FunctionForward", "Site", "Dtype", "Ext", "ExternalTensor", "Lit",
           "Marker", "Opaque",
           "Program", "Ref", "Seq", "SliceOf", "args_from_json", "args_to_json", "refs_in",
           "exts_in", "opaque_in", "walk_args", "map_refs", "output_at", "TRACED_BASE_LIGHT",
           "TRACED_BASE_OBSERVED"]

# Bumped when the capture file's shape changes; the reader refuses other versions.
#   1  first format
#   2  each call's source site ("site": [file, first line, last line]) where it was found;
#      later, without a bump (an older file reads the defaults): an external's layout and
#      small values (ExternalTensor's last four fields; a described tensor output's sixth
#      item, (name, value) pairs of the same fields); a call standing for a custom
#      torch.autograd.Function's output (Call.function: absent, None, in an older file);
#      a float tensor's low and high (an external's, a described output's fourth and fifth
#      items: None, or absent, in an older file, which the replay draws as before them)
PROGRAM_FORMAT = 2

# Program.traced_base: which run's durations the traced times are
TRACED_BASE_LIGHT, TRACED_BASE_OBSERVED = "light", "observed"


@dataclass(frozen=True)
class Ref:
    call: int
    path: tuple[int, ...] = json_field(codec=tuple_of(), default=())


@dataclass(frozen=True)
class Ext:
    id: int


@dataclass(frozen=True)
class Lit:
    value: Any


@dataclass(frozen=True)
class Dtype:
    name: str


@dataclass(frozen=True)
class SliceOf:
    start: int | None
    stop: int | None
    step: int | None


# An argument's JSON: an object whose first key known here (its tag) says its kind
# (_ARG_FORMS); for a Seq or an Opaque, its other keys are the record's fields.
_ARGS = Codec(lambda value, where: args_from_json(value), lambda value: args_to_json(value))


@dataclass(frozen=True)
class Seq:
    kind: str = json_field(key="seq")          # "list" | "tuple"
    items: tuple[Any, ...] = json_field(codec=tuple_of(_ARGS))


@dataclass(frozen=True)
class Opaque:
    type_name: str = json_field(key="opaque")
    text: str = ""


Arg = Union[Ref, Ext, Lit, Dtype, SliceOf, Seq, Opaque]


@dataclass(frozen=True)
class ExternalTensor:
    """A tensor the program reads but did not make. It keeps its observed range, so a
    replay draws indices that stay in bounds (an embedding's token ids) and floats within
    the script's (a binary cross-entropy's target in [0, 1])."""
    id: int
    shape: tuple[int, ...] = json_field(codec=tuple_of())
    dtype: str
    role: str                      # "parameter" | "state" (a Parameter without gradient)
                                   # | "input"
    name: str = ""                 # a parameter's or buffer's name where known
    # observed min and max: an integer or bool tensor's; a float tensor's, sampled where
    # large (capture/float_range.py; None: an infinite bound, or a file before them)
    low: float | None = None
    high: float | None = None
    # The layout and values where they change the work (model/capture/layout.py; all None
    # in a file written before them: contiguous, values drawn). expanded_from: a view with
    # stride-0 dims (a padding column expanded over the hidden size) is the expansion of a
    # tensor of this shape, and the replay expands one as the script did. dim_order: a
    # permuted dense view (a transposed weight), its dims from the largest stride to the
    # smallest. values: a small bool or integer tensor's values (0/1 for bool), row-major,
    # of expanded_from's shape where set; a float tensor's only where an affinity swap made
    # it once before the step (model/affinity/swap.py: its creation call's values).
    # true_fraction: a larger bool tensor's share of true values, which the replay draws
    # with.
    expanded_from: tuple[int, ...] | None = json_field(codec=optional(tuple_of()),
                                                       default=None)
    dim_order: tuple[int, ...] | None = json_field(codec=optional(tuple_of()), default=None)
    values: tuple[int | float, ...] | None = json_field(codec=optional(tuple_of()),
                                                        default=None)
    true_fraction: float | None = None

    @property
    def base_shape(self) -> tuple[int, ...]:
        """The shape the values are of: the tensor's before its expansion."""
        return tuple(self.expanded_from) if self.expanded_from else tuple(self.shape)


# The fields every external's row holds (a file before the layout fields wrote these seven).
_EXTERNAL_ROW_FIELDS = 7


def _external_row(ext: ExternalTensor) -> list[Any]:
    """An external as an array of its fields, the layout fields left off where unset: a
    program without them is written as before them."""
    row = to_row(ext)
    while len(row) > _EXTERNAL_ROW_FIELDS and row[-1] is None:
        row.pop()
    return row


_EXTERNAL_ROW = Codec(lambda value, where: from_row(ExternalTensor, value, where), _external_row)


@dataclass(frozen=True)
class FunctionForward:
    """A custom torch.autograd.Function's forward (model/autograd_function.py): the calls
    captured inside its `apply` are the `calls` before the call that holds this record, which
    stands for the Function's output (its arguments: the forward's result and the inputs
    that took the gradient)."""
    name: str                      # the Function class's qualified name
    calls: int                     # how many captured calls its forward made


@dataclass(frozen=True)
class Site:
    """A call's place in the user's source: the lines of the call expression."""
    file: str
    first_line: int
    last_line: int


def _tuples(value: Any) -> Any:
    """JSON lists back to the tuples the described outputs were."""
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


# The capture file's codecs for a call's parts (keys short: a capture holds up to
# DEFAULT_MAX_CALLS calls).
_OUTPUTS = Codec(lambda value, where: _tuples(value), lambda value: value)
_KWARGS = tuple_of(Codec(lambda pair, where: (pair[0], args_from_json(pair[1])),
                         lambda pair: [pair[0], args_to_json(pair[1])]))
_INIT = tuple_of(Codec(lambda pair, where: (pair[0], _tuples(pair[1])),
                       lambda pair: [pair[0], pair[1]]))
# grad_enabled is written as its negation, and only when set ("no_grad": true)
_NEGATED = Codec(lambda value, where: not value, lambda value: not value)


@dataclass(frozen=True)
class Call:
    """One recorded top-level framework call, as the script made it and as it replays."""
    index: int = json_field(key="i")       # position in Program.calls
    framework: str = json_field(key="fw")
    api: str = json_field()                # as traced: torch.nn.Linear, torch.Tensor.__add__
    kind: str = json_field()               # function | tensor_method | module | primitive
    # the call that replays it (a module lowered to its function); None: cannot be
    # replayed (see `problem`)
    replay_api: str | None = json_field(key="replay")
    args: tuple[Any, ...] = json_field(codec=_ARGS)      # written as one tuple argument
    kwargs: tuple[tuple[str, Any], ...] = json_field(codec=_KWARGS)
    # described result: ("tensor", shape, dtype[, low, high[, extras]]) trees (extras:
    # (name, value) pairs of ExternalTensor's layout and value fields, where any is set)
    outputs: Any = json_field(key="out", codec=_OUTPUTS)
    duration_ns: int = json_field(key="ns")     # traced time of the call (serial: synced)
    start_ns: int = json_field(key="t")
    # why it cannot be replayed
    problem: str | None = json_field(omit_default=True, default=None)
    # a no-op call (eval dropout, Identity, ops.Depend): its output is this; a Seq of them
    # where the call passed a tuple or list of tensors through (the grad reducer's Identity
    # on a TrainOneStepCell's gradients)
    alias_of: Ref | Ext | Seq | None = json_field(key="alias", codec=optional(_ARGS),
                                            omit_default=True, default=None)
    # a Tensor.backward() call (training step)
    backward: bool = json_field(omit_default=True, default=False)
    # torch's grad mode when called (an optimizer step: off)
    grad_enabled: bool = json_field(key="no_grad", codec=_NEGATED, omit_default=True,
                                    default=True)
    # a MindSpore primitive instance's constructor arguments (plain values): the replay
    # builds the primitive from them
    init: tuple[tuple[str, Any], ...] = json_field(codec=_INIT, omit_default=True,
                                                   default=())
    # a layer returning one element of what the call returns
    pick: int | None = json_field(omit_default=True, default=None)
    # where the user's code made the call: the first frame outside torch, MindSpore and
    # opbench (file, first line, last line of the call expression); None: not found
    site: Site | None = json_field(codec=optional(row_of(Site)), omit_default=True,
                                   default=None)
    # a custom torch.autograd.Function's output (model/autograd_function.py): its forward's
    # calls are the ones before this call; None for every other call (and in a file written
    # before the field)
    function: FunctionForward | None = json_field(key="fn",
                                                  codec=optional(row_of(FunctionForward)),
                                                  omit_default=True, default=None)
    # made inside torch.utils.checkpoint.checkpoint: the backward after it runs this call
    # again (activation checkpointing's recompute; model/recompute.py)
    recompute: bool = json_field(key="rc", omit_default=True, default=False)

    @property
    def replayable(self) -> bool:
        return self.problem is None and (self.replay_api is not None
                                         or self.alias_of is not None)


@dataclass(frozen=True)
class Marker:
    """A step boundary the script marked (opbench.model.step()), before call `at`."""
    at: int
    label: str = ""


@dataclass(frozen=True)
class Program:
    framework: str                 # the framework the script ran (traced)
    version: str
    threads: int | None            # intra-op threads the script ran with
    launch: str                    # "queued" | "blocking" (MindSpore); torch CPU: "blocking"
    device: str
    timing: str                    # how durations were taken ("serial")
    calls: tuple[Call, ...] = json_field(codec=each(Call))
    # written as arrays of their fields: a capture holds thousands
    externals: tuple[ExternalTensor, ...] = json_field(codec=tuple_of(_EXTERNAL_ROW))
    markers: tuple[Marker, ...] = json_field(codec=tuple_of(row_of(Marker)), default=())
    wall_ns: int = 0               # first call's start to last call's end
    overhead_ns_per_call: float = 0.0   # tracer bookkeeping per recorded call
    # the part of it inside each call's duration (trace/overhead.py): steady.step_program
    # takes it out of the traced times
    in_window_ns_per_call: float = 0.0
    notes: tuple[str, ...] = json_field(codec=tuple_of(), default=())
    dropped_calls: int = 0         # calls past the capture cap (not in `calls`)
    script_status: int = 0         # the script's exit status
    script_error: str | None = None
    frameworks_imported: tuple[str, ...] = json_field(codec=tuple_of(), default=())
    # the cores the script could run on (its affinity)
    cpus: tuple[int, ...] = json_field(codec=tuple_of(), default=())
    # why the capture ended before the script did (the steps wanted were recorded), or None
    ended_early: str | None = None
    # MindSpore: the speed probe timed in the capture's process after the script
    # (model/speed_probe.py), seconds per synced probe call; None: not MindSpore, or older
    speed_probe_s: float | None = None
    # The light timing pass (model/capture/light.py; docs/model.md, "The self-check's
    # base"): the script run a second time in the capture's process under a timing-only
    # tracer. Per captured call, its duration there, where that run made the same calls in
    # the same order (empty: not used, and `light_note` says why; both absent in a file
    # written before the pass). steady.own_time_ns takes the traced times from these.
    light_ns: tuple[int, ...] = json_field(codec=tuple_of(), default=(), omit_default=True)
    light_note: str | None = json_field(default=None, omit_default=True)
    # the timing-only tracer's cost inside a call's duration, calibrated as
    # in_window_ns_per_call is, taken out of the light durations
    light_in_window_ns_per_call: float = json_field(default=0.0, omit_default=True)
    # the second run's wall time (what the pass cost the capture), seconds
    light_pass_s: float = json_field(default=0.0, omit_default=True)

    @property
    def traced_base(self) -> str:
        """Where the traced times come from: "light" (the light timing pass's durations) or
        "observed" (the captured run's own)."""
        return TRACED_BASE_LIGHT if self.light_ns else TRACED_BASE_OBSERVED

    # -- JSON: the capture file (format PROGRAM_FORMAT), by the fields above -------------
    def to_json(self) -> dict[str, Any]:
        data = to_object(self)
        if data.get("speed_probe_s") is None:
            # no probe (torch): the file as format 2 wrote it; an absent key reads None
            data.pop("speed_probe_s", None)
        return {"format": PROGRAM_FORMAT, **data}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Program:
        """The program of a capture file; ValueError when another opbench wrote it or a key
        is missing (the message names the key)."""
        written = data.get("format") if isinstance(data, dict) else None
        if written != PROGRAM_FORMAT:
            raise ValueError(f"capture format {written!r}, expected "
                             f"{PROGRAM_FORMAT}: written by another opbench version")
        try:
            return from_object(cls, data)
        except JsonRecordError as exc:
            raise ValueError(f"capture file: {exc}") from None


def _arg_form(tag: str, cls: type, *, row: bool = False, whole: bool = False
              ) -> tuple[str, type, Callable[[Any], Any], Callable[[Any, dict], Any]]:
    """(tag, kind, encode, decode(payload, whole object)) of one argument kind: its fields
    as an array under the tag (`row`), the whole object its fields (`whole`: Seq, Opaque),
    or its one field's value under the tag."""
    if row:
        return (tag, cls, lambda v: {tag: to_row(v)},
                lambda payload, obj: from_row(cls, payload, tag))
    if whole:
        return tag, cls, to_object, lambda payload, obj: from_object(cls, obj, tag)
    (only,) = dataclasses.fields(cls)
    return (tag, cls, lambda v: {tag: getattr(v, only.name)},
            lambda payload, obj: cls(payload))


# One row per argument kind: the tag its JSON object starts with, its class, how it is
# written and read. A tuple (a call's positional arguments nested) is {"t": [...]}.
_ARG_FORMS = (
    ("t", tuple, lambda v: {"t": [args_to_json(x) for x in v]},
     lambda payload, obj: tuple(args_from_json(x) for x in payload)),
    _arg_form("ref", Ref, row=True),
    _arg_form("ext", Ext),
    _arg_form("lit", Lit),
    _arg_form("dtype", Dtype),
    _arg_form("slice", SliceOf, row=True),
    _arg_form("seq", Seq, whole=True),
    _arg_form("opaque", Opaque, whole=True),
)
_ENCODE_ARG = {cls: encode for _, cls, encode, _ in _ARG_FORMS}
_DECODE_ARG = {tag: decode for tag, _, _, decode in _ARG_FORMS}


def args_to_json(value: Any) -> Any:
    encode = _ENCODE_ARG.get(tuple if isinstance(value, tuple) else type(value))
    if encode is None:
        raise TypeError(f"not a program argument: {value!r}")
    return encode(value)


def args_from_json(value: Any) -> Any:
    if isinstance(value, dict):
        for tag, payload in value.items():
            decode = _DECODE_ARG.get(tag)
            if decode is not None:
                return decode(payload, value)
    raise ValueError(f"not a program argument: {value!r}")


def walk_args(value: Any) -> Iterator[Any]:
    """Every leaf argument (Ref, Ext, Lit, ...) inside tuples, lists and Seqs."""
    if isinstance(value, (tuple, list)):
        for v in value:
            yield from walk_args(v)
    elif isinstance(value, Seq):
        for v in value.items:
            yield from walk_args(v)
    else:
        yield value


def _leaves(call: Call) -> Iterator[Any]:
    yield from walk_args(call.args)
    for _, v in call.kwargs:
        yield from walk_args(v)


def map_refs(value: Any, fn: Callable[[Ref], Any]) -> Any:
    """The argument with each Ref replaced by fn(ref), through tuples and Seqs."""
    if isinstance(value, tuple):
        return tuple(map_refs(v, fn) for v in value)
    if isinstance(value, Ref):
        return fn(value)
    if isinstance(value, Seq):
        return Seq(value.kind, tuple(map_refs(v, fn) for v in value.items))
    return value


def output_at(outputs: Any, path: tuple[int, ...]) -> Any:
    """The described output a Ref's path points at (None where the path does not lead
    through a sequence)."""
    node = outputs
    for p in path:
        if not node or node[0] != "seq" or p >= len(node[1]):
            return None
        node = node[1][p]
    return node


def refs_in(call: Call) -> list[Ref]:
    return [v for v in _leaves(call) if isinstance(v, Ref)]


def exts_in(call: Call) -> list[Ext]:
    return [v for v in _leaves(call) if isinstance(v, Ext)]


def opaque_in(call: Call) -> list[Opaque]:
    return [v for v in _leaves(call) if isinstance(v, Opaque)]

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

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Union

__all__ = ["Arg", "Call", "Site", "Dtype", "Ext", "ExternalTensor", "Lit", "Marker", "Opaque",
           "Program", "Ref", "Seq", "SliceOf", "args_from_json", "args_to_json", "refs_in",
           "exts_in", "opaque_in", "walk_args", "map_refs", "output_at"]

# Bumped when the capture file's shape changes; the reader refuses other versions.
#   1  first format
#   2  each call's source site ("site": [file, first line, last line]) where it was found
PROGRAM_FORMAT = 2


@dataclass(frozen=True)
class Ref:
    call: int
    path: tuple[int, ...] = ()


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


@dataclass(frozen=True)
class Seq:
    kind: str                 # "list" | "tuple"
    items: tuple[Any, ...]


@dataclass(frozen=True)
class Opaque:
    type_name: str
    text: str = ""


Arg = Union[Ref, Ext, Lit, Dtype, SliceOf, Seq, Opaque]


@dataclass(frozen=True)
class ExternalTensor:
    """A tensor the program reads but did not make. Integer tensors keep their observed
    range, so a replay draws indices that stay in bounds (an embedding's token ids)."""
    id: int
    shape: tuple[int, ...]
    dtype: str
    role: str                      # "parameter" | "state" (a Parameter without gradient)
                                   # | "input"
    name: str = ""                 # a parameter's or buffer's name where known
    low: float | None = None       # observed min and max (integer and bool tensors)
    high: float | None = None


@dataclass(frozen=True)
class Site:
    """A call's place in the user's source: the lines of the call expression."""
    file: str
    first_line: int
    last_line: int


@dataclass(frozen=True)
class Call:
    """One recorded top-level framework call, as the script made it and as it replays."""
    index: int                     # position in Program.calls
    framework: str
    api: str                       # as traced: torch.nn.Linear, torch.Tensor.__add__, ...
    kind: str                      # function | tensor_method | module | primitive
    replay_api: str | None         # the call that replays it (a module lowered to its
                                   # function); None: cannot be replayed (see `problem`)
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]
    outputs: Any                   # described result: ("tensor", shape, dtype) trees
    duration_ns: int               # traced time of the call (serial: synced)
    start_ns: int
    problem: str | None = None     # why it cannot be replayed
    alias_of: Ref | Ext | None = None   # a no-op call (eval dropout): its output is this
    backward: bool = False         # a Tensor.backward() call (training step)
    grad_enabled: bool = True      # torch's grad mode when called (an optimizer step: off)
    # a MindSpore primitive instance's constructor arguments (plain values): the replay
    # builds the primitive from them
    init: tuple[tuple[str, Any], ...] = ()
    pick: int | None = None        # a layer returning one element of what the call returns
    # where the user's code made the call: the first frame outside torch, MindSpore and
    # opbench (file, first line, last line of the call expression); None: not found
    site: Site | None = None

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
    calls: tuple[Call, ...]
    externals: tuple[ExternalTensor, ...]
    markers: tuple[Marker, ...] = ()
    wall_ns: int = 0               # first call's start to last call's end
    overhead_ns_per_call: float = 0.0   # tracer bookkeeping per recorded call
    # the part of it inside each call's duration (trace/overhead.py): steady.step_program
    # takes it out of the traced times
    in_window_ns_per_call: float = 0.0
    notes: tuple[str, ...] = ()
    dropped_calls: int = 0         # calls past the capture cap (not in `calls`)
    script_status: int = 0         # the script's exit status
    script_error: str | None = None
    frameworks_imported: tuple[str, ...] = field(default_factory=tuple)
    cpus: tuple[int, ...] = ()     # the cores the script could run on (its affinity)
    # why the capture ended before the script did (the steps wanted were recorded), or None
    ended_early: str | None = None

    # -- JSON ---------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "format": PROGRAM_FORMAT, "framework": self.framework, "version": self.version,
            "threads": self.threads, "launch": self.launch, "device": self.device,
            "timing": self.timing, "wall_ns": self.wall_ns,
            "overhead_ns_per_call": self.overhead_ns_per_call,
            "in_window_ns_per_call": self.in_window_ns_per_call, "notes": list(self.notes),
            "dropped_calls": self.dropped_calls, "script_status": self.script_status,
            "script_error": self.script_error,
            "frameworks_imported": list(self.frameworks_imported),
            "cpus": list(self.cpus), "ended_early": self.ended_early,
            "markers": [[m.at, m.label] for m in self.markers],
            "externals": [[e.id, list(e.shape), e.dtype, e.role, e.name, e.low, e.high]
                          for e in self.externals],
            "calls": [_call_to_json(c) for c in self.calls],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Program:
        if data.get("format") != PROGRAM_FORMAT:
            raise ValueError(f"capture format {data.get('format')!r}, expected "
                             f"{PROGRAM_FORMAT}: written by another opbench version")
        return cls(
            framework=data["framework"], version=data["version"], threads=data["threads"],
            launch=data["launch"], device=data["device"], timing=data["timing"],
            calls=tuple(_call_from_json(c) for c in data["calls"]),
            externals=tuple(ExternalTensor(e[0], tuple(e[1]), e[2], e[3], e[4], e[5], e[6])
                            for e in data["externals"]),
            markers=tuple(Marker(at, label) for at, label in data["markers"]),
            wall_ns=data["wall_ns"], overhead_ns_per_call=data["overhead_ns_per_call"],
            in_window_ns_per_call=data.get("in_window_ns_per_call", 0.0),
            notes=tuple(data["notes"]), dropped_calls=data["dropped_calls"],
            script_status=data["script_status"], script_error=data["script_error"],
            frameworks_imported=tuple(data["frameworks_imported"]),
            cpus=tuple(data.get("cpus", ())), ended_early=data.get("ended_early"))


def _call_to_json(c: Call) -> dict[str, Any]:
    out: dict[str, Any] = {"i": c.index, "fw": c.framework, "api": c.api, "kind": c.kind,
                           "replay": c.replay_api, "args": args_to_json(c.args),
                           "kwargs": [[k, args_to_json(v)] for k, v in c.kwargs],
                           "out": c.outputs, "ns": c.duration_ns, "t": c.start_ns}
    if c.problem:
        out["problem"] = c.problem
    if c.alias_of is not None:
        out["alias"] = args_to_json(c.alias_of)
    if c.backward:
        out["backward"] = True
    if not c.grad_enabled:
        out["no_grad"] = True
    if c.init:
        out["init"] = [[k, v] for k, v in c.init]
    if c.pick is not None:
        out["pick"] = c.pick
    if c.site is not None:
        out["site"] = [c.site.file, c.site.first_line, c.site.last_line]
    return out


def _call_from_json(d: dict[str, Any]) -> Call:
    return Call(index=d["i"], framework=d["fw"], api=d["api"], kind=d["kind"],
                replay_api=d["replay"], args=args_from_json(d["args"]),
                kwargs=tuple((k, args_from_json(v)) for k, v in d["kwargs"]),
                outputs=_tuples(d["out"]), duration_ns=d["ns"], start_ns=d["t"],
                problem=d.get("problem"),
                alias_of=args_from_json(d["alias"]) if "alias" in d else None,
                backward=d.get("backward", False), grad_enabled=not d.get("no_grad", False),
                init=tuple((k, _tuples(v)) for k, v in d.get("init", ())),
                pick=d.get("pick"),
                site=Site(*d["site"]) if "site" in d else None)


def _tuples(value: Any) -> Any:
    """JSON lists back to the tuples the described outputs were."""
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


def args_to_json(value: Any) -> Any:
    if isinstance(value, tuple):
        return {"t": [args_to_json(v) for v in value]}
    if isinstance(value, Ref):
        return {"ref": [value.call, list(value.path)]}
    if isinstance(value, Ext):
        return {"ext": value.id}
    if isinstance(value, Lit):
        return {"lit": value.value}
    if isinstance(value, Dtype):
        return {"dtype": value.name}
    if isinstance(value, SliceOf):
        return {"slice": [value.start, value.stop, value.step]}
    if isinstance(value, Seq):
        return {"seq": value.kind, "items": [args_to_json(v) for v in value.items]}
    if isinstance(value, Opaque):
        return {"opaque": value.type_name, "text": value.text}
    raise TypeError(f"not a program argument: {value!r}")


def args_from_json(value: Any) -> Any:
    if "t" in value:
        return tuple(args_from_json(v) for v in value["t"])
    if "ref" in value:
        return Ref(value["ref"][0], tuple(value["ref"][1]))
    if "ext" in value:
        return Ext(value["ext"])
    if "lit" in value:
        return Lit(value["lit"])
    if "dtype" in value:
        return Dtype(value["dtype"])
    if "slice" in value:
        return SliceOf(*value["slice"])
    if "seq" in value:
        return Seq(value["seq"], tuple(args_from_json(v) for v in value["items"]))
    if "opaque" in value:
        return Opaque(value["opaque"], value.get("text", ""))
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

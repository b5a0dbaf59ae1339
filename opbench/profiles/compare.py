"""Two profiles joined API by API, or one profile summarised: what `opbench profile compare A
B` and `opbench profile show A` print. Pure: no framework imported, no file read (the CLI
reads the profiles with read.py and hands the API mapping in as an `ApiLookup`).

A profile's APIs (`api_calls`):
  - torch, CPU: each top-level aten op (an OP event no other OP encloses on its thread) is
    one call, with the kernels kernels.py finds under it (its leaf ops);
  - torch, CUDA: each top-level op, with the device kernels its runtime launches
    (cudaLaunchKernel ...) started, joined by correlation id; a kernel no op launched is a
    call of its own, named by the kernel;
  - MindSpore (CPU or Ascend), torch_npu: the profile holds kernels only, so each kernel
    launch is a call of an API named by the kernel.
Join: every API name is reduced to a key (`api_key`: the last name part, lower case, no
underscores, then ALIASES: aten::_softmax and Softmax -> softmax, aten::mm and MatMul ->
matmul); rows left over are joined through the API mapping (torch.nn.functional.X ->
mindspore...Y) where it names a counterpart; the rest is unmatched, with a hint where a
known decomposition (MindSpore's gelu into Erf, Div, Mul, Sqrt, Add) may explain it.

The step split of each side, over the profile's span: kernel (the union of its kernel
intervals), host (top-level op time outside any kernel), idle (the rest). A profile without
host ops (MindSpore's) has host 0: its time outside kernels is idle, as far as it can tell.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Protocol, Sequence

from opbench.profiles.events import KERNEL, OP, RUNTIME, Profile, ProfileEvent
from opbench.profiles.kernels import Kernel, enclosing_ops, kernels_of
from opbench.profiles.kinds import KINDS

__all__ = ["ApiLookup", "ApiCall", "api_calls", "api_key", "ALIASES", "DECOMPOSITIONS",
           "ExtraWork", "KernelUse", "SideInfo", "ApiSide", "ApiRow", "UnmatchedApi",
           "ProfileComparison", "ProfileSummary", "compare_profiles", "summarise_profile",
           "COMPARE_FORMAT", "SHOW_FORMAT", "FORMAT_VERSION", "BY_NAME", "BY_MAPPING"]

COMPARE_FORMAT = "opbench-profile-compare"
SHOW_FORMAT = "opbench-profile-show"
# Format history: 1 - first version (sides, apis, unmatched, notes).
FORMAT_VERSION = 1
BY_NAME, BY_MAPPING = "name", "mapping"
US = 1e-6

# Names of one operation in the two frameworks' profiles that the key (lower case, no
# underscores) does not already make equal: each key on the left joins as the one on the
# right. From the profiles made here (torch 2.13 CPU, MindSpore 2.10 CPU) and the kernel
# names MindSpore's Ascend kernels and aclnn ops carry (MatMulV2, BatchMatMulV2, ...).
ALIASES = {
    # matrix products: torch's mm/addmm/linear are matmul's routes; MindSpore's MatMul
    # family names its versions
    "mm": "matmul", "addmm": "matmul", "linear": "matmul", "matmulext": "matmul",
    "matmulv2": "matmul", "matmulv3": "matmul", "dense": "matmul",
    "batchmatmul": "bmm", "batchmatmulv2": "bmm", "batchmatmulext": "bmm", "baddbmm": "bmm",
    # convolutions, whatever the rank and the backend
    "convolution": "conv", "convolutionoverrideable": "conv", "mkldnnconvolution": "conv",
    "cudnnconvolution": "conv", "conv1d": "conv", "conv2d": "conv", "conv3d": "conv",
    "conv2dext": "conv", "conv3dext": "conv", "convolutionext": "conv",
    # dtype conversions: torch's aten::to / _to_copy, MindSpore's Cast
    "to": "cast", "tocopy": "cast",
    # element-wise and reductions under their MindSpore primitive names
    "addext": "add", "addv2": "add", "subext": "sub", "realdiv": "div", "softmaxv2": "softmax",
    "reducesum": "sum", "sumext": "sum", "reducemean": "mean", "meanext": "mean",
    "reducemax": "amax", "reducemin": "amin", "concat": "cat", "concatd": "cat",
    "nativelayernorm": "layernorm", "layernormv3": "layernorm", "layernormext": "layernorm",
    "t": "transpose", "transposeext": "transpose", "geluext": "gelu",
}

# Operations one framework runs as a single kernel and the other as several (seen here:
# MindSpore 2.10's ops.gelu on the CPU as Erf, Div, Mul, Sqrt and AddExt kernels, torch's
# aten::gelu one kernel). A kernel-only profile cannot say which Mul belongs to the gelu,
# so these only explain an unmatched row; they never join one.
DECOMPOSITIONS = {
    "gelu": frozenset({"erf", "div", "mul", "sqrt", "add"}),
    "silu": frozenset({"sigmoid", "mul"}),
    "layernorm": frozenset({"mean", "sub", "mul", "sqrt", "div", "add", "pow"}),
    "softmax": frozenset({"exp", "sum", "div", "amax", "sub"}),
}

_SCOPE = re.compile(r"-op\d+$")


def api_key(name: str) -> str:
    """The key two frameworks' names of one operation share: 'aten::_softmax' and
    'Softmax' -> 'softmax'; 'aten::mm', 'MatMul', 'Default/dense/MatMul-op12' and
    'aclnnMatmul_MatMulV3' -> 'matmul'."""
    last = name.rsplit("::", 1)[-1].rsplit("/", 1)[-1]
    last = _SCOPE.sub("", last)
    if last.startswith("aclnn") and len(last) > 5:
        last = last[5:].split("_", 1)[0]
    key = last.lower().replace("_", "")
    return ALIASES.get(key, key)


class ApiLookup(Protocol):
    """The API mapping as compare_profiles uses it (frameworks/apimap.py ApiMapping is one):
    an entry with `torch`, `mindspore` and `alternatives`, or None."""

    def lookup(self, framework: str, name: str) -> Any: ...


@dataclass(frozen=True)
class ApiCall:
    """One call of an API in a profile: its host op (None in a kernel-only profile) and
    the kernels attributed to it."""

    name: str
    op: ProfileEvent | None
    kernels: tuple[Kernel, ...]


def _top_ops(events: tuple[ProfileEvent, ...]) -> list[int]:
    return [i for i, chain in enclosing_ops(events).items() if not chain]


def _launching_op(events: tuple[ProfileEvent, ...], top: list[int]) -> dict[int, int]:
    """Correlation id -> index of the top-level op whose time holds the runtime launch
    with that id (on the launch's thread)."""
    by_tid: dict[str, list[int]] = defaultdict(list)
    for i in top:
        by_tid[events[i].tid].append(i)
    starts = {tid: [events[i].start_us for i in ops] for tid, ops in by_tid.items()}
    found = {}
    for e in events:
        if e.category != RUNTIME or e.correlation is None or e.tid not in by_tid:
            continue
        ops = by_tid[e.tid]
        at = bisect_right(starts[e.tid], e.start_us) - 1
        if at >= 0 and events[ops[at]].end_us >= e.start_us:
            found[e.correlation] = ops[at]
    return found


def api_calls(profile: Profile) -> list[ApiCall]:
    """The API calls of a profile, in time order (see the module's docstring)."""
    events = profile.events
    kernels = kernels_of(profile)
    if not any(e.category == OP for e in events):
        return [ApiCall(k.event.name, None, (k,)) for k in kernels]
    top = _top_ops(events)
    index = {id(events[i]): i for i in top}
    attributed: dict[int, list[Kernel]] = defaultdict(list)
    alone: list[Kernel] = []
    # device kernels by their launch's correlation id; a CPU leaf by the op kernels.py
    # found above it
    launched_by = _launching_op(events, top) if any(e.category == KERNEL for e in events) \
        else None
    for k in kernels:
        if launched_by is not None:
            op = launched_by.get(k.event.correlation) if k.event.correlation is not None \
                else None
        else:
            op = index.get(id(k.op)) if k.op is not None else None
        if op is None:
            alone.append(k)
        else:
            attributed[op].append(k)
    calls = [ApiCall(events[i].name, events[i], tuple(attributed.get(i, ()))) for i in top]
    calls += [ApiCall(k.event.name, None, (k,)) for k in alone]
    return sorted(calls, key=lambda c: (c.op or c.kernels[0].event).start_us)


def _union_us(intervals: Iterable[tuple[float, float]]) -> float:
    total, end = 0.0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


@dataclass(frozen=True)
class ExtraWork:
    kind: str               # kinds.py: cast, layout, fallback
    launches: int
    time_s: float

    def as_dict(self) -> dict[str, Any]:
        return {"launches": self.launches, "time_s": self.time_s}


@dataclass(frozen=True)
class KernelUse:
    """One kernel name's launches and time in a row (or a whole profile)."""

    name: str
    launches: int
    time_s: float
    kind: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "launches": self.launches, "time_s": self.time_s,
                "kind": self.kind}


@dataclass(frozen=True)
class SideInfo:
    framework: str
    source: str
    path: str
    devices: tuple[str, ...]
    span_s: float
    kernel_s: float          # union of kernel intervals
    host_s: float            # top-level op time outside kernels
    idle_s: float            # the rest of the span
    launches: int
    extra: tuple[ExtraWork, ...]
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"framework": self.framework, "source": self.source, "path": self.path,
                "devices": list(self.devices), "span_s": self.span_s,
                "kernel_s": self.kernel_s, "host_s": self.host_s, "idle_s": self.idle_s,
                "launches": self.launches, "extra": {w.kind: w.as_dict() for w in self.extra},
                "notes": list(self.notes)}


@dataclass(frozen=True)
class ApiSide:
    """One side of an API row: the source names joined, calls, kernel time and kernels."""

    names: tuple[str, ...]
    calls: int
    kernel_s: float
    host_s: float | None     # its ops' time outside their kernels; None: no host ops
    kernels: tuple[KernelUse, ...]   # heaviest first

    def as_dict(self) -> dict[str, Any]:
        return {"names": list(self.names), "calls": self.calls, "kernel_s": self.kernel_s,
                "host_s": self.host_s, "kernels": [k.name for k in self.kernels],
                "kernel_detail": [k.as_dict() for k in self.kernels]}


@dataclass(frozen=True)
class ApiRow:
    api: str
    joined_by: str           # name | mapping
    sides: tuple[ApiSide, ApiSide]

    @property
    def lost_s(self) -> float:
        """Target kernel time less the reference's (reference: the first profile)."""
        return self.sides[1].kernel_s - self.sides[0].kernel_s

    def as_dict(self) -> dict[str, Any]:
        return {"api": self.api, "joined_by": self.joined_by, "lost_s": self.lost_s,
                "sides": [s.as_dict() for s in self.sides]}


@dataclass(frozen=True)
class UnmatchedApi:
    side: int                # 0 reference, 1 target
    api: str
    usage: ApiSide
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"side": self.side, "api": self.api, **self.usage.as_dict(),
                "reason": self.reason}


@dataclass(frozen=True)
class ProfileComparison:
    sides: tuple[SideInfo, SideInfo]
    apis: tuple[ApiRow, ...]           # by time lost, most first
    unmatched: tuple[UnmatchedApi, ...]
    notes: tuple[str, ...] = ()

    def unmatched_of(self, side: int) -> tuple[UnmatchedApi, ...]:
        return tuple(u for u in self.unmatched if u.side == side)

    def api_kernel_s(self, side: int) -> float:
        """Kernel time of one side over every row, joined and unmatched (the sum of its
        kernels' durations)."""
        return (sum(r.sides[side].kernel_s for r in self.apis)
                + sum(u.usage.kernel_s for u in self.unmatched_of(side)))

    def as_dict(self) -> dict[str, Any]:
        return {"format": COMPARE_FORMAT, "version": FORMAT_VERSION,
                "reference": 0, "lost_s": "target kernel_s - reference kernel_s (sides[1] - "
                                          "sides[0])",
                "sides": [s.as_dict() for s in self.sides],
                "apis": [r.as_dict() for r in self.apis],
                "unmatched": [u.as_dict() for u in self.unmatched],
                "notes": list(self.notes)}


@dataclass(frozen=True)
class ProfileSummary:
    side: SideInfo
    apis: tuple[tuple[str, ApiSide], ...]    # by kernel time, most first
    kernels: tuple[KernelUse, ...]           # heaviest first

    def as_dict(self) -> dict[str, Any]:
        return {"format": SHOW_FORMAT, "version": FORMAT_VERSION,
                "side": self.side.as_dict(),
                "apis": [{"api": key, **usage.as_dict()} for key, usage in self.apis],
                "kernels": [k.as_dict() for k in self.kernels]}


def _kernel_uses(kernels: Iterable[Kernel]) -> tuple[KernelUse, ...]:
    launches: dict[tuple[str, str | None], int] = defaultdict(int)
    time_us: dict[tuple[str, str | None], float] = defaultdict(float)
    for k in kernels:
        launches[(k.event.name, k.kind)] += 1
        time_us[(k.event.name, k.kind)] += k.event.dur_us
    return tuple(sorted((KernelUse(name, n, time_us[(name, kind)] * US, kind)
                         for (name, kind), n in launches.items()),
                        key=lambda k: (-k.time_s, k.name)))


def _overlap_us(op: ProfileEvent, kernels: Sequence[Kernel]) -> float:
    return _union_us((max(op.start_us, k.event.start_us), min(op.end_us, k.event.end_us))
                     for k in kernels if k.event.start_us < op.end_us
                     and k.event.end_us > op.start_us)


def _api_side(calls: Sequence[ApiCall]) -> ApiSide:
    kernels = [k for c in calls for k in c.kernels]
    hosted = [c for c in calls if c.op is not None]
    host_s = (sum(c.op.dur_us - _overlap_us(c.op, c.kernels) for c in hosted) * US
              if hosted else None)
    return ApiSide(tuple(sorted({c.name for c in calls})), len(calls),
                   sum(k.event.dur_us for k in kernels) * US, host_s, _kernel_uses(kernels))


def _side_info(profile: Profile, calls: Sequence[ApiCall]) -> SideInfo:
    kernels = [k for c in calls for k in c.kernels]
    kernel_iv = [(k.event.start_us, k.event.end_us) for k in kernels]
    op_iv = [(c.op.start_us, c.op.end_us) for c in calls if c.op is not None]
    kernel_us = _union_us(kernel_iv)
    busy_us = _union_us(kernel_iv + op_iv)
    span_us = max(profile.span_us, busy_us)
    extra = []
    for kind in KINDS:
        of_kind = [k for k in kernels if k.kind == kind]
        if of_kind:
            extra.append(ExtraWork(kind, len(of_kind),
                                   sum(k.event.dur_us for k in of_kind) * US))
    notes = list(profile.notes)
    if not op_iv:
        notes.append("the profile records no host ops: time outside kernels counts as idle")
    return SideInfo(profile.framework, profile.source, profile.path, profile.devices,
                    span_us * US, kernel_us * US, (busy_us - kernel_us) * US,
                    (span_us - busy_us) * US, len(kernels), tuple(extra), tuple(notes))


def _by_key(calls: Iterable[ApiCall]) -> dict[str, list[ApiCall]]:
    found: dict[str, list[ApiCall]] = defaultdict(list)
    for c in calls:
        found[api_key(c.name)].append(c)
    return dict(found)


def summarise_profile(profile: Profile) -> ProfileSummary:
    """One profile: its split, its APIs by kernel time, its kernels (`profile show`)."""
    calls = api_calls(profile)
    apis = sorted(((key, _api_side(group)) for key, group in _by_key(calls).items()),
                  key=lambda item: (-item[1].kernel_s, item[0]))
    return ProfileSummary(_side_info(profile, calls), tuple(apis),
                          _kernel_uses(k for c in calls for k in c.kernels))


_TORCH_PLACES = ("torch.{}", "torch.nn.functional.{}", "torch.Tensor.{}")
_MINDSPORE_PLACES = ("mindspore.ops.{}", "mindspore.nn.{}", "mindspore.mint.{}",
                     "mindspore.ops.{lower}", "mindspore.mint.{lower}")


def _mapped_keys(framework: str, names: Iterable[str], mapping: ApiLookup) -> set[str]:
    """The keys of the counterparts the mapping gives for these source names."""
    found = set()
    for name in names:
        bare = _SCOPE.sub("", name.rsplit("::", 1)[-1].rsplit("/", 1)[-1])
        if framework == "torch":
            bare = bare.lstrip("_")
            places = [p.format(bare) for p in _TORCH_PLACES]
        else:
            places = [p.format(bare, lower=bare.lower()) for p in _MINDSPORE_PLACES]
        for place in places:
            entry = mapping.lookup(framework, place)
            if entry is None:
                continue
            if framework == "torch":
                others = [entry.mindspore, *entry.alternatives] if entry.mindspore else []
            else:
                others = [entry.torch]
            found.update(api_key(o.rsplit(".", 1)[-1]) for o in others)
    return found


def _reason(key: str, side: int, other_keys: set[str], frameworks: tuple[str, str]) -> str:
    other = frameworks[1 - side]
    for whole, parts in DECOMPOSITIONS.items():
        if key in parts and whole in other_keys:
            return (f"no {other} API of this name; may be part of {other}'s {whole}, which "
                    f"{frameworks[side]} may run as several kernels "
                    f"({', '.join(sorted(parts))})")
        if key == whole and parts & other_keys:
            return (f"no {other} API of this name; {other} may run it as several kernels "
                    f"({', '.join(sorted(parts & other_keys))} are unmatched there)")
    return f"no {other} API with this name or a mapped counterpart"


def compare_profiles(reference: Profile, target: Profile,
                     mapping: ApiLookup | None = None) -> ProfileComparison:
    """Join two profiles API by API (the reference first: time lost = target - reference)."""
    calls = (api_calls(reference), api_calls(target))
    left = [_by_key(calls[0]), _by_key(calls[1])]
    joined: list[tuple[str, str, list[ApiCall], list[ApiCall]]] = []
    for key in sorted(set(left[0]) & set(left[1])):
        joined.append((key, BY_NAME, left[0].pop(key), left[1].pop(key)))
    frameworks = (reference.framework, target.framework)
    if mapping is not None and frameworks[0] != frameworks[1]:
        for key in sorted(left[0]):
            names = {c.name for c in left[0][key]}
            for other in sorted(_mapped_keys(frameworks[0], names, mapping) & set(left[1])):
                joined.append((key, BY_MAPPING, left[0].pop(key), left[1].pop(other)))
                break
        for key in sorted(left[1]):
            names = {c.name for c in left[1][key]}
            for other in sorted(_mapped_keys(frameworks[1], names, mapping) & set(left[0])):
                joined.append((other, BY_MAPPING, left[0].pop(other), left[1].pop(key)))
                break
    rows = [ApiRow(key, how, (_api_side(a), _api_side(b))) for key, how, a, b in joined]
    rows.sort(key=lambda r: (-r.lost_s, r.api))
    unmatched = [UnmatchedApi(side, key, _api_side(group),
                              _reason(key, side, set(left[1 - side]), frameworks))
                 for side in (0, 1) for key, group in left[side].items()]
    unmatched.sort(key=lambda u: (u.side, -u.usage.kernel_s, u.api))
    notes = []
    if reference.devices != target.devices:
        notes.append(f"the profiles ran on different devices ({'+'.join(reference.devices)} "
                     f"against {'+'.join(target.devices)}): kernel times are not comparable "
                     "as one device's")
    return ProfileComparison((_side_info(reference, calls[0]), _side_info(target, calls[1])),
                             tuple(rows), tuple(unmatched), tuple(notes))


"""Two trace records joined API by API: a torch script against its MindSpore port (or two
traces of one framework). `opbench trace compare A.json B.json` maps onto compare_traces.

Calls join in two passes:
1. by the API mapping (opbench/data/api_mapping.yaml): a MindSpore API takes the name of its
   torch counterpart (its primary name or one of its alternatives, such as ops.gelu for
   F.gelu); APIs of one framework join by name;
2. what is left joins by operation: the API's last name part, lower case, without
   underscores, so a Tensor method meets the function (x.permute and mint.permute), a layer
   its functional form (nn.LayerNorm and the ops.LayerNorm primitive: layernorm) and an
   operator the function (x + y and add). In-place (a trailing _) stays apart, and a norm
   layer's 1d/2d/3d is dropped (BatchNorm2d and batch_norm).
Within a joined API, calls join by input shapes and dtypes (the signature's tensors).
What is still left is unmatched: what the port added (casts, copies) or lost, each with its
share of its trace's API time.

A joined API whose call counts differ is flagged: with the same model and steps, that is
usually a port bug (a call done twice, a cast per step).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Iterable

from opbench.frameworks.apimap import ApiMapping, load_mapping
from opbench.trace.record_read import CallGroup, LoadedTrace, load_trace_record

__all__ = ["SideTotals", "SignatureRow", "JoinedRow", "UnmatchedRow", "TraceComparison",
           "compare_traces", "compare_loaded", "comparison_json", "operation_of",
           "SORT_KEYS", "COMPARE_FORMAT", "COMPARE_VERSION"]

COMPARE_FORMAT = "opbench-trace-compare"
# Format history (bump on any incompatible change):
#   1 - first version: traces, rows (with signatures), unmatched, notes.
COMPARE_VERSION = 1

BY_MAPPING, BY_NAME, BY_OPERATION = "mapping", "name", "operation"
SORT_KEYS = ("total", "delta", "calls", "name")
SIDES = ("a", "b")


@dataclass(frozen=True)
class SideTotals:
    apis: tuple[str, ...]        # the API names of this side in the row
    calls: int
    failed: int
    total_ns: int

    @property
    def per_call_ns(self) -> float | None:
        return self.total_ns / self.calls if self.calls else None


@dataclass(frozen=True)
class SignatureRow:
    inputs: str                  # tensor shapes and dtypes, 'f32[2,64,256], f32[256]'
    a_calls: int
    a_ns: int
    b_calls: int
    b_ns: int
    b_inputs: str | None = None  # B's, where they differ from A's (joined by the first input)


@dataclass(frozen=True)
class JoinedRow:
    operation: str               # what joined the two sides (a torch name, or an operation)
    joined_by: str               # mapping | name | operation
    a: SideTotals
    b: SideTotals
    signatures: tuple[SignatureRow, ...]

    @property
    def ratio(self) -> float | None:
        """A's per-call time over B's (the project's reference / target: below 1, B's calls
        are slower)."""
        a, b = self.a.per_call_ns, self.b.per_call_ns
        return a / b if a is not None and b else None

    @property
    def delta_ns(self) -> int:
        """B's total minus A's: the time B spends more in this API (counts included)."""
        return self.b.total_ns - self.a.total_ns

    @property
    def calls_differ(self) -> bool:
        return self.a.calls != self.b.calls

    @property
    def unjoined_signatures(self) -> int:
        return sum(1 for s in self.signatures if not (s.a_calls and s.b_calls))


@dataclass(frozen=True)
class UnmatchedRow:
    side: str                    # a | b
    framework: str
    api: str
    kind: str
    calls: int
    total_ns: int
    share: float                 # of its trace's compared API time (0..1)
    reason: str


@dataclass(frozen=True)
class TraceInfo:
    path: str
    frameworks: tuple[str, ...]
    versions: tuple[tuple[str, str], ...]
    timing: str
    region: str
    calls: int
    api_ns: int
    notes: tuple[str, ...]

    @property
    def label(self) -> str:
        return "+".join(self.frameworks) or "no framework"


@dataclass(frozen=True)
class TraceComparison:
    a: TraceInfo
    b: TraceInfo
    rows: tuple[JoinedRow, ...]
    unmatched: tuple[UnmatchedRow, ...]
    notes: tuple[str, ...]

    def unmatched_of(self, side: str) -> tuple[UnmatchedRow, ...]:
        return tuple(u for u in self.unmatched if u.side == side)

    @property
    def calls_differ(self) -> tuple[JoinedRow, ...]:
        return tuple(r for r in self.rows if r.calls_differ)

    def joined_ns(self, side: str) -> int:
        return sum(getattr(r, side).total_ns for r in self.rows)


def compare_traces(a_path: str | os.PathLike[str], b_path: str | os.PathLike[str], *,
                   mapping: ApiMapping | None = None, sort_by: str = "total"
                   ) -> TraceComparison:
    """Read two trace records and join them (raises TraceRecordError naming the file and
    key of a record that cannot be read)."""
    return compare_loaded(load_trace_record(a_path), load_trace_record(b_path),
                          mapping=mapping, sort_by=sort_by)


def compare_loaded(a: LoadedTrace, b: LoadedTrace, *, mapping: ApiMapping | None = None,
                   sort_by: str = "total") -> TraceComparison:
    if sort_by not in SORT_KEYS:
        raise ValueError(f"sort_by must be one of {', '.join(SORT_KEYS)}, not {sort_by!r}")
    mapping = mapping if mapping is not None else load_mapping()
    left = {"a": _by_api(a.groups), "b": _by_api(b.groups)}
    rows: list[JoinedRow] = []
    for how, key_of in ((None, lambda fw, api, kind: _mapped_name(fw, api, mapping)),
                        (BY_OPERATION, lambda fw, api, kind: operation_of(
                            _mapped_name(fw, api, mapping), kind))):
        keyed = {side: _keyed(left[side], key_of) for side in SIDES}
        for key in sorted(set(keyed["a"]) & set(keyed["b"])):
            apis_a, apis_b = keyed["a"][key], keyed["b"][key]
            joined_by = how or _exact_how(apis_a, apis_b)
            rows.append(_row(key, joined_by, [left["a"].pop(k) for k in apis_a],
                             [left["b"].pop(k) for k in apis_b]))
    unmatched = [_unmatched(side, groups, other, mapping, trace.api_ns)
                 for side, trace, other in (("a", a, b), ("b", b, a))
                 for groups in left[side].values()]
    unmatched.sort(key=lambda u: (SIDES.index(u.side), -u.total_ns, u.api))
    return TraceComparison(_info(a), _info(b), tuple(_sorted(rows, sort_by)), tuple(unmatched),
                           tuple(_notes(a, b)))


ApiKey = tuple[str, str, str]      # framework, api, kind


def _by_api(groups: Iterable[CallGroup]) -> dict[ApiKey, list[CallGroup]]:
    found: dict[ApiKey, list[CallGroup]] = {}
    for g in groups:
        found.setdefault((g.framework, g.api, g.kind), []).append(g)
    return found


def _keyed(apis: dict[ApiKey, list[CallGroup]], key_of: Any) -> dict[str, list[ApiKey]]:
    keyed: dict[str, list[ApiKey]] = {}
    for api_key in sorted(apis):
        keyed.setdefault(key_of(*api_key), []).append(api_key)
    return keyed


def _mapped_name(framework: str, api: str, mapping: ApiMapping) -> str:
    """The name a call joins by: a MindSpore API's torch counterpart where the mapping has
    one, else the API's own name."""
    if framework == "mindspore":
        entry = mapping.from_mindspore(api)
        if entry is not None:
            return entry.torch
    return api


def _exact_how(apis_a: list[ApiKey], apis_b: list[ApiKey]) -> str:
    same = {fw for fw, _, _ in apis_a} == {fw for fw, _, _ in apis_b}
    return BY_NAME if same and {a for _, a, _ in apis_a} == {b for _, b, _ in apis_b} \
        else BY_MAPPING


_NORM_DIMS = re.compile(r"(norm)[123]d$")


def operation_of(name: str, kind: str = "") -> str:
    """What an API does, without where it lives: 'torch.Tensor.permute' and
    'mindspore.mint.permute' -> 'permute'; 'torch.nn.LayerNorm' and
    'mindspore.ops.LayerNorm' -> 'layernorm'; 'torch.Tensor.__add__' -> 'add';
    'torch.Tensor.add_' -> 'add_' (in place stays apart)."""
    last = name.rsplit(".", 1)[-1]
    if last.startswith("__") and last.endswith("__") and len(last) > 4:
        last = last[2:-2]
        if last.startswith("i") and last[1:] in _IN_PLACE_OPERATORS:   # x += y
            return last[1:] + "_"
    in_place = last.endswith("_") and not last.endswith("__")
    core = _NORM_DIMS.sub(r"\1", last.lower().replace("_", ""))
    return core + ("_" if in_place else "")


# Python's in-place operator hooks (__iadd__ ...) whose plain name is an operation.
_IN_PLACE_OPERATORS = frozenset({"add", "sub", "mul", "truediv", "floordiv", "mod", "pow",
                                 "matmul", "and", "or", "xor", "lshift", "rshift"})


def _row(key: str, joined_by: str, a_groups: list[list[CallGroup]],
         b_groups: list[list[CallGroup]]) -> JoinedRow:
    a = [g for groups in a_groups for g in groups]
    b = [g for groups in b_groups for g in groups]
    return JoinedRow(key, joined_by, _totals(a), _totals(b), _signature_rows(a, b))


def _signature_rows(a: list[CallGroup], b: list[CallGroup]) -> tuple[SignatureRow, ...]:
    """Calls joined by input shapes and dtypes; then what is left by the first input alone
    (a layer holds its weights, its functional form takes them: nn.LayerNorm(x) against
    ops.LayerNorm(x, weight, bias)), when that leaves one signature on each side."""
    def totals(groups: list[CallGroup]) -> dict[str, list[int]]:
        found: dict[str, list[int]] = {}
        for g in groups:
            pair = found.setdefault(g.inputs, [0, 0])
            pair[0] += g.calls
            pair[1] += g.total_ns
        return found

    left_a, left_b = totals(a), totals(b)
    rows = [SignatureRow(inputs, *left_a.pop(inputs), *left_b.pop(inputs))
            for inputs in sorted(set(left_a) & set(left_b))]
    firsts_a = _by_first_input(left_a)
    firsts_b = _by_first_input(left_b)
    for first in sorted(set(firsts_a) & set(firsts_b)):
        if len(firsts_a[first]) == 1 and len(firsts_b[first]) == 1:
            inputs_a, inputs_b = firsts_a[first][0], firsts_b[first][0]
            rows.append(SignatureRow(inputs_a, *left_a.pop(inputs_a), *left_b.pop(inputs_b),
                                     b_inputs=inputs_b))
    rows += [SignatureRow(inputs, *t, 0, 0) for inputs, t in left_a.items()]
    rows += [SignatureRow(inputs, 0, 0, *t) for inputs, t in left_b.items()]
    return tuple(sorted(rows, key=lambda s: (-(s.a_ns + s.b_ns), s.inputs)))


def _by_first_input(signatures: dict[str, list[int]]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for inputs in signatures:
        found.setdefault(inputs.split(", ", 1)[0], []).append(inputs)
    return found


def _totals(groups: list[CallGroup]) -> SideTotals:
    apis = tuple(sorted({g.api for g in groups}))
    return SideTotals(apis, sum(g.calls for g in groups), sum(g.failed for g in groups),
                      sum(g.total_ns for g in groups))


def _unmatched(side: str, groups: list[CallGroup], other: LoadedTrace, mapping: ApiMapping,
               api_ns: int) -> UnmatchedRow:
    first = groups[0]
    total = sum(g.total_ns for g in groups)
    other_side = "B" if side == "a" else "A"
    cross = [fw for fw in other.frameworks if fw != first.framework]
    if cross and first.framework not in other.frameworks:
        entry = mapping.lookup(first.framework, first.api)
        if entry is None:
            reason = "not in the API mapping, and no call of the same operation in " + other_side
        elif entry.status == "none" and first.framework == "torch":
            reason = f"the mapping has no MindSpore equivalent ({entry.note})"
        else:
            counterpart = entry.mindspore if first.framework == "torch" else entry.torch
            reason = f"its counterpart {counterpart} is not called in {other_side}"
    else:
        reason = f"not called in {other_side}"
    return UnmatchedRow(side, first.framework, first.api, first.kind,
                        sum(g.calls for g in groups), total,
                        total / api_ns if api_ns else 0.0, reason)


def _sorted(rows: list[JoinedRow], sort_by: str) -> list[JoinedRow]:
    if sort_by == "name":
        return sorted(rows, key=lambda r: r.operation)
    value = {"total": lambda r: r.a.total_ns + r.b.total_ns, "delta": lambda r: r.delta_ns,
             "calls": lambda r: max(r.a.calls, r.b.calls)}[sort_by]
    return sorted(rows, key=lambda r: (-value(r), r.operation))


def _info(trace: LoadedTrace) -> TraceInfo:
    return TraceInfo(trace.path, trace.frameworks, trace.versions, trace.timing, trace.region,
                     trace.calls, trace.api_ns, trace.notes)


def _notes(a: LoadedTrace, b: LoadedTrace) -> list[str]:
    notes = []
    if a.timing != b.timing:
        notes.append(f"A was traced with {a.timing} timing and B with {b.timing}: their times "
                     f"are not comparable (calls are)")
    for side, trace in (("A", a), ("B", b)):
        if not trace.groups:
            notes.append(f"{side} ({trace.path}) holds no framework API call to compare")
        notes.extend(f"{side}: {note}" for note in trace.notes)
    return notes


def comparison_json(comparison: TraceComparison) -> dict[str, Any]:
    """The comparison as JSON (format opbench-trace-compare, version COMPARE_VERSION)."""
    def side(totals: SideTotals) -> dict[str, Any]:
        return {"apis": list(totals.apis), "calls": totals.calls, "failed": totals.failed,
                "total_ns": totals.total_ns,
                "per_call_ns": None if totals.per_call_ns is None else round(totals.per_call_ns,
                                                                             1)}

    def info(trace: TraceInfo) -> dict[str, Any]:
        return {"path": trace.path, "frameworks": list(trace.frameworks),
                "versions": dict(trace.versions), "timing": trace.timing,
                "region": trace.region, "calls": trace.calls, "api_ns": trace.api_ns,
                "joined_ns": comparison.joined_ns("a" if trace is comparison.a else "b"),
                "notes": list(trace.notes)}

    return {
        "format": COMPARE_FORMAT, "version": COMPARE_VERSION,
        "ratio": "a per-call time / b per-call time (below 1: b's calls are slower)",
        "a": info(comparison.a), "b": info(comparison.b),
        "rows": [{"operation": r.operation, "joined_by": r.joined_by, "a": side(r.a),
                  "b": side(r.b), "ratio": None if r.ratio is None else round(r.ratio, 6),
                  "delta_ns": r.delta_ns, "calls_differ": r.calls_differ,
                  "signatures": [{"inputs": s.inputs, "b_inputs": s.b_inputs or s.inputs,
                                  "a_calls": s.a_calls, "a_ns": s.a_ns,
                                  "b_calls": s.b_calls, "b_ns": s.b_ns}
                                 for s in r.signatures]}
                 for r in comparison.rows],
        "unmatched": [{"side": u.side, "framework": u.framework, "api": u.api, "kind": u.kind,
                       "calls": u.calls, "total_ns": u.total_ns, "share": round(u.share, 6),
                       "reason": u.reason} for u in comparison.unmatched],
        "calls_differ": [r.operation for r in comparison.calls_differ],
        "notes": list(comparison.notes),
    }

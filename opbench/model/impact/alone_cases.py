"""The model's heaviest call signatures measured alone, with opbench's own protocol
(interleaved rounds, blocking launches, equal threads, worker processes): the isolated
ratio and verdict, each framework's context factor (time in the model / time alone) and a
cause.

A signature becomes a case (docs/case-format.md) when both frameworks' calls are named
APIs with arguments a case can hold: its tensors become seeded inputs of the same shapes
(integer tensors within their traced range), its other arguments literals. A LayerNorm over
the last dimension is measured on rows [tokens, hidden], the MindSpore route of the case
library (cases/norm.yaml: group_norm with one group), the same work. Composed routes
(attention) and calls with slices or dtype arguments are not measured alone; the row says
so.

Cause of a row where the target is slower (in this order):
  context   most of the gap in the model is the target's context factor (time in the model
            / time alone) beyond the reference's: the launch queue, caches, the ops around
            it; the target's factor is at least CONTEXT_FACTOR_BOUND x the reference's
  overhead  otherwise, when the target's isolated call is within DISPATCH_BOUND_FACTOR of
            its per-call floor
  kernel    slower alone too, well above the per-call floor
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from opbench.config.vocabulary import CASE_DTYPES, INTEGER_DTYPES, SERIAL
from opbench.cases.case_files import expand, load_case_data
from opbench.config import DEFAULT_PROCESSES, RunConfig
from opbench.frameworks.apimap import load_mapping
from opbench.model.impact.alone_programs import replay_alone
from opbench.model.impact.processes import Interpreter
from opbench.model.program import Dtype, Ext, Lit, Opaque, Ref, Seq, SliceOf, output_at
from opbench.model.replay.routes import Route, Unmapped, case_spelling, route_for
from opbench.runloop.recorded_run import run
from opbench.results.records import RunRecord

__all__ = ["IsolatedFinding", "IsolatedRow", "measure_isolated", "case_for", "cause_of", "target_floor_s",
           "DISPATCH_BOUND_FACTOR", "CONTEXT_FACTOR_BOUND"]

# A call within this factor of its framework's per-call floor is dominated by dispatch (the
# gap map's rule, gapmap/attribute.py).
DISPATCH_BOUND_FACTOR = 3.0
# In-context time this many times the isolated time is the context's doing, not noise: the
# replay's per-call spread between processes here is 10-45% (docs/measurement.md).
CONTEXT_FACTOR_BOUND = 1.5
# Start-up of the measuring processes (both frameworks imported) and time per instance,
# measured on this machine class (docs/figures.md): ~13 s per worker, ~1.5 s per instance.
SETUP_ESTIMATE_S = 15.0
INSTANCE_ESTIMATE_S = 2.5
INT_DTYPES = INTEGER_DTYPES   # any integer width a model hands over
# A route a case file can name: a dotted path, not a composition or a primitive built from
# the call's arguments (those are measured alone through the replay: alone_replay.py).
_DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")
COMPOSED = "its route is composed, not one API"
# Processes of each framework for the calls measured alone through the replay, and the time
# one such process takes here (imports, warm-up, 8 passes of a few calls): ~10 s.
REPLAY_ALONE_PROCESSES = 3
REPLAY_ALONE_ESTIMATE_S = 10.0

# what a problem with the cases built here names (they are made in memory, never written)
ALONE_CASES_SOURCE = "<opbench model: calls measured alone>"


@dataclass(frozen=True)
class IsolatedRow:
    key: tuple[str, str, str]         # the signature row's (api, signature, mapped api)
    instance_id: str | None
    verdict: str | None
    ratio: float | None
    ratio_ci: tuple[float, float] | None
    reference_s: float | None          # alone, per call (median)
    target_s: float | None
    reason: str = ""                   # why it was not measured alone


@dataclass(frozen=True)
class IsolatedFinding:
    """A signature row measured alone, set against its in-context times (pipeline.py):
    what record.py writes for the row."""
    alone: IsolatedRow
    context: Mapping[str, float]       # per side: in-context time over the time alone
    cause: str                         # context | overhead | kernel | unknown ("": none lost)
    why: str                           # one line saying why


def _spec(node: Any) -> tuple[tuple[int, ...], str, Any, Any] | None:
    if node and node[0] == "tensor":
        low, high = (node[3], node[4]) if len(node) >= 5 else (None, None)
        return tuple(node[1]), node[2], low, high
    return None


def _one_signed(low: Any, high: Any) -> bool:
    """A float tensor's observed range (capture/float_range.py) is finite, not one value,
    and on one side of zero."""
    if low is None or high is None:
        return False
    low, high = float(low), float(high)
    return math.isfinite(low) and math.isfinite(high) and low < high \
        and (low >= 0.0 or high <= 0.0)


class _CaseBuilder:
    """Program arguments -> case-file arguments, with one input per tensor."""

    def __init__(self, step: Any):
        self.step = step
        self.inputs: dict[str, dict[str, Any]] = {}
        self._names: dict[Any, str] = {}

    def tensor_spec(self, arg: Any) -> tuple[tuple[int, ...], str, Any, Any] | None:
        if isinstance(arg, Ext):
            e = self.step.externals[arg.id]
            return tuple(e.shape), e.dtype, e.low, e.high
        return _spec(output_at(self.step.calls[arg.call].outputs, arg.path))

    def value(self, arg: Any) -> Any:
        if isinstance(arg, (Ref, Ext)):
            if arg not in self._names:
                spec = self.tensor_spec(arg)
                if spec is None:
                    raise ValueError("an argument is not a tensor of a known shape")
                shape, dtype, low, high = spec
                if dtype not in CASE_DTYPES:
                    # a uint8 mask, an int8 tensor: replayed in the model, but a case file's
                    # input is one of the case dtypes (it failed the whole alone pass)
                    raise ValueError(f"a {dtype} tensor, not a case file's dtype")
                name = f"x{len(self.inputs)}"
                entry: dict[str, Any] = {"shape": list(shape), "dtype": dtype}
                if dtype in INT_DTYPES:
                    entry.update(dist="randint", low=int(low or 0),
                                 high=int(high or 0) + 1)
                elif dtype == "bool":
                    entry["dist"] = "mask"
                elif _one_signed(low, high):
                    # a probability target, a variance: the case's normal draw would put
                    # half its values where the call refuses or NaNs them (a binary
                    # cross-entropy's target outside [0, 1]); drawn in the script's range
                    entry.update(dist="uniform", low=float(low), high=float(high))
                self.inputs[name] = entry
                self._names[arg] = name
            return f"${self._names[arg]}"
        if isinstance(arg, Lit):
            if isinstance(arg.value, str) and arg.value.startswith("$"):
                raise ValueError("a string argument that a case file would read as an input")
            return arg.value
        if isinstance(arg, Seq):
            return [self.value(v) for v in arg.items]
        if isinstance(arg, (Dtype, SliceOf, Opaque)):
            raise ValueError(f"a {type(arg).__name__} argument a case file cannot hold")
        raise ValueError(f"an argument a case file cannot hold: {arg!r}")

    def call(self, api: str, args: Sequence[Any], kwargs: Sequence[tuple[str, Any]]
             ) -> dict[str, Any]:
        out: dict[str, Any] = {"api": api, "args": [self.value(a) for a in args]}
        if kwargs:
            out["kwargs"] = {k: self.value(v) for k, v in kwargs}
        return out


def _layer_norm_rows(builder: _CaseBuilder, call: Any) -> dict[str, Any] | None:
    """layer_norm over the last dimension of x [..., H] as rows [tokens, H]."""
    args = list(call.args)
    if len(args) < 4 or not isinstance(args[1], Seq) or len(args[1].items) != 1:
        return None
    spec = builder.tensor_spec(args[0])
    if spec is None or len(spec[0]) < 2:
        return None
    shape, dtype = spec[0], spec[1]
    hidden = shape[-1]
    builder.inputs["x"] = {"shape": [int(math.prod(shape[:-1])), hidden], "dtype": dtype}
    builder.inputs["weight"] = {"shape": [hidden], "dtype": dtype}
    builder.inputs["bias"] = {"shape": [hidden], "dtype": dtype}
    eps = args[4].value if len(args) > 4 and isinstance(args[4], Lit) else 1e-5
    return {"torch": {"api": "torch.nn.functional.layer_norm",
                      "args": ["$x", [hidden], "$weight", "$bias", eps]},
            "mindspore": {"api": "mindspore.mint.nn.functional.group_norm",
                          "args": ["$x", 1, "$weight", "$bias", eps]}}


def case_for(impact: Any, key: tuple[str, str, str], members: Sequence[int],
             number: int) -> tuple[dict[str, Any] | None, str]:
    """A case for one signature row, or None and why not."""
    step = impact.step
    call = step.calls[members[0]]
    if call.framework != "torch" or call.replay_api is None:
        return None, "only calls traced in torch are measured alone"
    builder = _CaseBuilder(step)
    sections: dict[str, Any] | None = None
    if call.replay_api == "torch.nn.functional.layer_norm":
        sections = _layer_norm_rows(builder, call)
    if sections is None:
        mapping = load_mapping()
        route = route_for(call, impact.other, mapping)
        if isinstance(route, Unmapped):
            return None, route.reason
        chosen = impact.status[impact.other][members[0]].route
        candidates: list[Route] = [route, *route.fallbacks]
        route = candidates[chosen] if chosen < len(candidates) else route
        try:
            spelled = case_spelling(impact.other, route.api)
            if not _DOTTED.match(spelled):
                return None, f"{COMPOSED}: {route.api}"
            sections = {"torch": builder.call(case_spelling("torch", call.replay_api),
                                              call.args, call.kwargs),
                        impact.other: builder.call(spelled, route.args, route.kwargs)}
        except ValueError as exc:
            return None, str(exc)
    op = call.replay_api.rsplit(".", 1)[-1].strip("_") or "op"
    return ({"name": f"model_{number}_{op}", "op": op, "tags": ["model"],
             "description": f"{key[0]}({key[1]}) from a model step",
             "inputs": builder.inputs, **sections}, "")


def _measured(record: RunRecord, instance_id: str, reference: str, target: str
              ) -> tuple[str | None, float | None, tuple[float, float] | None,
                         float | None, float | None, str]:
    """(verdict, ratio, interval, reference median, target median, why there is no ratio)."""
    for inst in record.instances:
        if inst.id != instance_id:
            continue
        verdict = inst.verdict.value if inst.verdict is not None else None
        m = inst.measurements.get(SERIAL)
        if m is None:
            return verdict, None, None, None, None, failure_reason(inst)
        return (verdict, m.ratio, (m.ci_low, m.ci_high), m.summary[reference].median_s,
                m.summary[target].median_s, "")
    return None, None, None, None, None, "the case flow did not run it (no instance recorded)"


# A traceback's last line says what failed; the whole error can run to a screenful.
REASON_CHARS = 200


def failure_reason(inst: Any) -> str:
    """Why an instance of the case flow has no timing: its error, the comparison that
    failed, or its verdict (the row names it in "not measured alone (...)")."""
    verdict = inst.verdict.value if inst.verdict is not None else "no verdict"
    error = (inst.error or "").strip()
    if error:
        last = error.splitlines()[-1].strip()
        return f"{verdict}: {last[:REASON_CHARS]}"
    check = inst.failed_check()
    if check is not None:
        detail = check.detail or (f"max abs error {check.max_abs_err:.3g}"
                                  if check.max_abs_err is not None else "outputs differ")
        return f"{verdict}: the frameworks' outputs differ alone ({detail[:REASON_CHARS]})"
    return f"{verdict}: no serial timing recorded"


def target_floor_s(record: RunRecord | None, target: str) -> float | None:
    """The target's per-call floor (serial) in the isolated run."""
    if record is None or target not in record.overhead:
        return None
    return record.overhead[target].dispatch_floor_serial_s


# The rows a report leads with (by time lost) are measured first, whatever their traced time:
# a reshape that costs MindSpore 150x its time alone in the model has little traced time.
LEAD_ROWS = 5


def measuring_order(signatures: Sequence[Any]) -> list[Any]:
    """The signature rows in the order they are measured alone: for each of the LEAD_ROWS
    APIs that lose the most time (the rows a report leads with), its signature that loses
    the most; then the rest by traced time."""
    by_api: dict[tuple[str, str], list[Any]] = {}
    for row in signatures:
        by_api.setdefault((row.api, row.mapped_api), []).append(row)
    ranked = sorted(by_api.values(), key=lambda rows: sum(r.lost_s for r in rows),
                    reverse=True)
    lead = [max(rows, key=lambda r: r.lost_s) for rows in ranked[:LEAD_ROWS]]
    chosen = {id(r) for r in lead}
    rest = sorted((r for r in signatures if id(r) not in chosen), key=lambda r: r.traced_s,
                  reverse=True)
    return lead + rest


def measure_isolated(impact: Any, budget_s: float, workdir: Path,
                     processes: int = DEFAULT_PROCESSES,
                     on_progress: Any = lambda message: None
                     ) -> tuple[list[IsolatedRow], RunRecord | None, float]:
    """Measure the signature rows alone (measuring_order) within budget_s.
    Returns the rows, the run record, and the share of the region's traced time measured."""
    rows = measuring_order(impact.signatures)
    cases: list[dict[str, Any]] = []
    out: list[IsolatedRow] = []
    planned: list[tuple[tuple[str, str, str], str]] = []
    composed: list[Any] = []
    estimate = SETUP_ESTIMATE_S
    replay_cost = 2 * REPLAY_ALONE_PROCESSES * REPLAY_ALONE_ESTIMATE_S
    for row in rows:
        key = (row.api, row.signature, row.mapped_api)
        if estimate + INSTANCE_ESTIMATE_S * processes > budget_s:
            out.append(IsolatedRow(key, None, None, None, None, None, None,
                                   "left out: over the --budget"))
            continue
        case, reason = case_for(impact, key, row.members, len(cases) + 1)
        if case is None and reason.startswith(COMPOSED) and (
                composed or estimate + replay_cost <= budget_s):
            if not composed:
                estimate += replay_cost
            composed.append(row)
            continue
        if case is None:
            out.append(IsolatedRow(key, None, None, None, None, None, None, reason))
            continue
        cases.append(case)
        planned.append((key, case["name"]))
        estimate += INSTANCE_ESTIMATE_S * processes
    measured_s = 0.0
    if composed:
        found = replay_alone(Interpreter(impact.interpreter, True), impact.sides, impact.step,
                             [r.members[0] for r in composed], impact.reference,
                             impact.target, impact.threads, impact.program.device,
                             impact.program.cpus, REPLAY_ALONE_PROCESSES, workdir, on_progress)
        for row in composed:
            got = found.get(row.members[0], {})
            key = (row.api, row.signature, row.mapped_api)
            out.append(IsolatedRow(key, None, got.get("verdict"), got.get("ratio"),
                                   got.get("ratio_ci"), got.get("reference_s"),
                                   got.get("target_s"),
                                   got.get("reason", "") or "alone through the replay"))
            if got.get("ratio") is not None:
                measured_s += row.traced_s
    if not cases:
        share = measured_s / impact.traced_s if impact.traced_s else 0.0
        return out, None, share
    instances = [i for c in load_case_data({"cases": cases}, ALONE_CASES_SOURCE)
                 for i in expand(c)]
    config = RunConfig(reference=impact.sides.get(impact.reference, impact.reference),
                       target=impact.sides.get(impact.target, impact.target),
                       threads=impact.threads or 1, processes=processes, backward=False)
    on_progress(f"measuring {len(instances)} call signatures alone "
                f"({processes} worker processes)")
    record = run(instances, config, json_path=workdir / "isolated_run.json")
    by_case = {i.case.name: i.id for i in instances}
    traced = {(r.api, r.signature, r.mapped_api): r.traced_s for r in impact.signatures}
    for key, name in planned:
        iid = by_case[name]
        verdict, ratio, ci, ref_s, tgt_s, why = _measured(record, iid, impact.reference,
                                                           impact.target)
        out.append(IsolatedRow(key, iid, verdict, ratio, ci, ref_s, tgt_s, why))
        if ratio is not None:
            measured_s += traced.get(key, 0.0)
    share = measured_s / impact.traced_s if impact.traced_s else 0.0
    return out, record, share


def cause_of(row: Any, isolated: IsolatedRow | None,
             floor_s: float | None) -> tuple[str, str]:
    """(cause, one line why) for a signature row the target loses time on."""
    if isolated is None or isolated.target_s is None or not isolated.reference_s:
        reason = isolated.reason if isolated is not None else "not measured alone"
        return "unknown", f"not measured alone ({reason or 'no result'})"
    ctx_target = row.target_s / isolated.target_s
    ctx_reference = row.reference_s / isolated.reference_s
    alone = (f"alone {isolated.ratio:.3g} ({isolated.verdict})"
             if isolated.ratio is not None else "alone: no ratio")
    factors = (f"in the model {ctx_target:.3g}x its time alone ({row.api.split('.')[0]} "
               f"{ctx_reference:.3g}x)")
    gap = row.target_s - row.reference_s
    from_context = (ctx_target - ctx_reference) * isolated.target_s
    if (ctx_target >= CONTEXT_FACTOR_BOUND * max(ctx_reference, 1e-12) and gap > 0
            and from_context >= 0.5 * gap):
        return "context", f"{factors}; {alone}"
    if floor_s and isolated.target_s < DISPATCH_BOUND_FACTOR * floor_s:
        return "overhead", (f"alone it takes {isolated.target_s * 1e6:.3g} us, within "
                            f"{DISPATCH_BOUND_FACTOR:g}x of the per-call floor; {factors}")
    return "kernel", f"{alone}, above the per-call floor; {factors}"

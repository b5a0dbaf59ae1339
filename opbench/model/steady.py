"""The steady state of a captured program: which calls are the repeated steps, not the
set-up (building the model, initialising weights, the first, cold step).

Three rules, in this order:
- markers: the script called opbench.model.step() before each step; the steps are the
  stretches between marks (the last one cut to the length of the one before it when it
  starts with the same calls: what follows is the script's work after its loop), and the
  first is left out as the warm-up when there are several (opbench/trace/steps.py, the
  rule `opbench trace compare` uses too);
- --skip-first-calls N: the calls from N on, as one step each period found in them (or as
  one step when none repeats);
- automatic: the longest stretch in which the calls repeat with one period (same API, same
  argument shapes and dtypes, call by call); its first period is the warm-up step, the rest
  are the steady steps. A script that never repeats itself has no steady state.

A replay needs one step: the last steady step's calls (StepProgram), with every tensor
that comes from outside the step (parameters, the step's input, the previous step's state)
made an external tensor, and with each call's traced time as the median over the steady
steps.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

import numpy as np

from opbench.model.program import (Call, Ext, ExternalTensor, Lit, Program, Ref, Seq, map_refs,
                                   output_at)
from opbench.trace.steps import marked_steps

__all__ = ["Region", "RegionError", "StepProgram", "find_region", "step_program", "call_key",
           "repeated_tail", "DEFAULT_CAPTURE_STEPS"]

# Automatic detection looks at the last this many calls (a longer capture keeps its set-up
# at the front); the period may be up to half of them.
MAX_AUTO_CALLS = 50_000
RULE_MARKERS, RULE_SKIP, RULE_AUTO = "markers", "skip-first-calls", "automatic"

# Steady steps the capture records before it ends the script (torch.profiler's
# schedule(wait, warmup, active) with active = this; the warm-up step comes on top). The
# replay takes one step; the steps give each call's traced time as a median.
DEFAULT_CAPTURE_STEPS = 20
# The automatic rule, run while the script runs: the last calls must repeat with one
# period for the warm-up and the steps, and over at least TAIL_MIN_WINDOW calls, so that
# a deep model's repeating layers (24 layers of ~15 calls: 360) do not pass for its step at
# the end of a forward; steps of a few calls are then recorded a few hundred times, which
# costs milliseconds. It looks at the last TAIL_MAX_WINDOW calls: a step longer than
# TAIL_MAX_WINDOW / (steps + 2) calls is recorded to the end of the script (or the cap),
# or marked. One look over 8,192 calls without a period took 1.4 ms here (median of 20).
TAIL_MIN_WINDOW = 2048
TAIL_MAX_WINDOW = 8192


class RegionError(Exception):
    """No steady state can be found; the message says why and what the user can do."""


@dataclass(frozen=True)
class Region:
    rule: str
    steps: tuple[tuple[int, int], ...]     # [start, end) of each steady step
    warmup: tuple[int, int] | None          # the step left out as warm-up
    excluded_calls: int                     # captured calls outside the steady steps
    excluded_ns: int                        # their traced time
    note: str = ""

    @property
    def calls(self) -> int:
        return sum(end - start for start, end in self.steps)


def _key(call: Call) -> tuple[Any, ...]:
    """What must be equal for two calls to be the same call of two steps: the API, the
    arguments but for where their tensors came from, and the outputs' shapes and dtypes
    (not an integer output's observed range, which differs from batch to batch)."""
    return (call.api, _shape_key(call, counts_ints=call.api not in INDEXING_APIS),
            _without_ranges(call.outputs))


# Indexing with an integer picks an element, the same work whichever it picks (the output's
# shape is in the key): a DataLoader over a TensorDataset indexes each tensor with the
# shuffled sample numbers, a new order every epoch, and with those values in the key its steps
# never repeated (dataloader_shuffle_training.py: "5 steps of 1 call", a Tensor.size call,
# where each batch is 223 calls).
INDEXING_APIS = frozenset({"torch.Tensor.__getitem__", "mindspore.Tensor.__getitem__"})


def _without_ranges(outputs: Any) -> Any:
    if isinstance(outputs, tuple) and outputs[:1] == ("tensor",):
        return outputs[:3]
    if isinstance(outputs, tuple) and outputs[:1] == ("seq",):
        return ("seq", tuple(_without_ranges(o) for o in outputs[1]))
    return outputs


def _shape_key(call: Call, counts_ints: bool = True) -> str:
    """The arguments without where tensors came from (a Ref's call index differs from step
    to step): literals and kinds only; tensor shapes are in the outputs of their makers.
    A float literal counts by its kind, not its value: a learning rate or a scale that a
    schedule changes every step changes no shape, and with its value in the key the steps
    never repeat (the period found is then a layer's). Without `counts_ints` an integer
    literal counts by its kind too (INDEXING_APIS)."""
    def strip(value: Any) -> Any:
        if isinstance(value, tuple):
            return tuple(strip(v) for v in value)
        if isinstance(value, (Ref, Ext)):
            return "tensor"
        if isinstance(value, Seq):
            return (value.kind, tuple(strip(v) for v in value.items))
        if isinstance(value, Lit):
            if isinstance(value.value, float):
                return ("float",)
            if not counts_ints and type(value.value) is int:
                return ("int",)
            return ("lit", value.value)
        return value
    return repr((strip(call.args), tuple((k, strip(v)) for k, v in call.kwargs)))


def call_key(call: Call) -> tuple[Any, ...]:
    """What makes two calls the same call of two steps (the automatic rule's key)."""
    return _key(call)


def repeated_tail(codes: Sequence[int], steps: int, min_window: int = TAIL_MIN_WINDOW,
                  max_window: int = TAIL_MAX_WINDOW) -> int | None:
    """The smallest period p with which the last calls repeat for a warm-up step and
    `steps` steady ones (steps + 2 periods, or min_window calls if more), or None. `codes`
    holds one integer per call, equal for equal call keys."""
    tail = np.asarray(codes[-max_window:], dtype=np.int64)
    n = len(tail)
    for period in range(1, n // (steps + 2) + 1):
        window = max((steps + 1) * period, min_window)
        if window + period > n:
            break
        if np.array_equal(tail[n - window:], tail[n - window - period:n - period]):
            return period
    return None


def _codes(calls: Sequence[Call]) -> np.ndarray:
    table: dict[Any, int] = {}
    return np.array([table.setdefault(_key(c), len(table)) for c in calls], dtype=np.int64)


def _longest_periodic_run(codes: np.ndarray) -> tuple[int, int, int] | None:
    """(start, period, length) of the longest stretch where codes[i] == codes[i + period],
    at least two periods long; the smallest period wins ties."""
    n = len(codes)
    best: tuple[int, int, int] | None = None
    for period in range(1, n // 2 + 1):
        equal = codes[:-period] == codes[period:]
        if not equal.any():
            continue
        padded = np.concatenate(([0], equal.astype(np.int8), [0]))
        edges = np.flatnonzero(np.diff(padded))
        starts, ends = edges[::2], edges[1::2]
        runs = ends - starts
        i = int(np.argmax(runs))
        covered = int(runs[i]) + period
        if covered >= 2 * period and (best is None or covered > best[2]):
            best = (int(starts[i]), period, covered)
        if best is not None and best[2] >= n - period:     # cannot be beaten any more
            break
    return best


def _excluded(program: Program, steps: Sequence[tuple[int, int]]) -> tuple[int, int]:
    inside = set()
    for start, end in steps:
        inside.update(range(start, end))
    outside = [c for c in program.calls if c.index not in inside]
    own = own_time_ns(program)
    return len(outside), sum(own(c) for c in outside)


def _periods(start: int, period: int, covered: int) -> list[tuple[int, int]]:
    return [(start + k * period, start + (k + 1) * period) for k in range(covered // period)]


def find_region(program: Program, skip_first_calls: int | None = None) -> Region:
    calls = program.calls
    if not calls:
        raise RegionError("the script made no framework call that was recorded")
    if program.markers and skip_first_calls is None:
        marked = marked_steps([m.at for m in program.markers], len(calls),
                              lambda i: _key(calls[i]))
        if marked is None:
            raise RegionError("the step markers enclose no framework call")
        count, ns = _excluded(program, marked.steady)
        return Region(RULE_MARKERS, marked.steady, marked.warmup, count, ns,
                      "; ".join(marked.notes))
    first = skip_first_calls or 0
    if first >= len(calls):
        raise RegionError(f"--skip-first-calls {first} skips all {len(calls)} calls")
    tail_start = max(first, len(calls) - MAX_AUTO_CALLS)
    codes = _codes(calls[tail_start:])
    found = _longest_periodic_run(codes)
    rule = RULE_SKIP if skip_first_calls is not None else RULE_AUTO
    if found is None:
        if skip_first_calls is None:
            raise RegionError(
                "no repeated step found: the script's calls never repeat with one period. "
                "Run several steps, mark them with opbench.model.step(), or give "
                "--skip-first-calls N")
        steps = [(first, len(calls))]
        count, ns = _excluded(program, steps)
        return Region(rule, tuple(steps), None, count, ns,
                      "no repeated step in the calls kept: they are replayed as one step")
    start, period, covered = found
    periods = _periods(tail_start + start, period, covered)
    warmup = periods[0] if rule == RULE_AUTO else None
    steady = periods[1:] if rule == RULE_AUTO else periods
    count, ns = _excluded(program, steady)
    return Region(rule, tuple(steady), warmup, count, ns)


@dataclass(frozen=True)
class StepProgram:
    """One steady step, ready to replay: calls renumbered from 0, refs inside the step,
    everything else external."""
    framework: str
    calls: tuple[Call, ...]
    externals: tuple[ExternalTensor, ...]
    steps: int                         # steady steps the region holds
    traced_ns: tuple[int, ...]         # per call: median traced time over the steady steps
    step_traced_ns: tuple[int, ...]    # per steady step: its calls' traced time, summed
    source_index: tuple[int, ...]      # per call: its index in the captured program

    @property
    def traced_step_ns(self) -> float:
        return float(statistics.median(self.step_traced_ns))


def step_program(program: Program, region: Region) -> StepProgram:
    start, end = region.steps[-1]
    inside = {old: new for new, old in enumerate(range(start, end))}
    externals = list(program.externals)
    made: dict[tuple[int, tuple[int, ...]], int] = {}

    def external_for(ref: Ref) -> Ext:
        key = (ref.call, ref.path)
        if key not in made:
            made[key] = len(externals)
            externals.append(external_from_output(len(externals),
                                                   program.calls[ref.call].outputs, ref.path,
                                                   program.calls[ref.call].api))
        return Ext(made[key])

    def renumber(ref: Ref) -> Any:
        return Ref(inside[ref.call], ref.path) if ref.call in inside else external_for(ref)

    def remap(value: Any) -> Any:
        return map_refs(value, renumber)

    calls = []
    for old in range(start, end):
        c = program.calls[old]
        calls.append(replace(c, index=inside[old], args=remap(c.args),
                             kwargs=tuple((k, remap(v)) for k, v in c.kwargs),
                             alias_of=remap(c.alias_of) if c.alias_of is not None else None))
    own = own_time_ns(program)
    per_call = []
    for offset in range(end - start):
        times = [own(program.calls[s + offset]) for s, e in region.steps if s + offset < e]
        per_call.append(int(statistics.median(times)))
    step_totals = tuple(sum(own(c) for c in program.calls[s:e]) for s, e in region.steps)
    return StepProgram(program.framework, tuple(calls), tuple(externals), len(region.steps),
                       tuple(per_call), step_totals, tuple(range(start, end)))


def own_time_ns(program: Program) -> Callable[[Call], int]:
    """A call's own time: its duration in the light timing pass where the program has one
    (Program.light_ns: the script's second run under a timing-only tracer, whose calls pay
    no capture work between them; a call that run did not make reads -1 there), else its
    traced duration; less the tracer's calibrated
    cost inside it (Program.light_in_window_ns_per_call / in_window_ns_per_call;
    docs/model.md, "The self-check's base"), never below 0."""
    light = program.light_ns
    in_window = program.in_window_ns_per_call

    def own(call: Call) -> int:
        return max(0, int(round(call.duration_ns - in_window)))
    if not light:
        return own
    light_in_window = program.light_in_window_ns_per_call

    def own_light(call: Call) -> int:
        ns = light[call.index]
        if ns < 0:       # a set-up call the second run did not make: its observed time
            return own(call)
        return max(0, int(round(ns - light_in_window)))
    return own_light


def external_from_output(new_id: int, outputs: Any, path: tuple[int, ...],
                          api: str) -> ExternalTensor:
    node = output_at(outputs, path)
    if not node or node[0] != "tensor":
        raise RegionError(f"a step uses a non-tensor output of {api} from before the step")
    shape, dtype = tuple(node[1]), node[2]
    low, high = (node[3], node[4]) if len(node) >= 5 else (None, None)
    # the layout and small values the capture described (capture/layout.py), where any
    extras = dict(node[5]) if len(node) >= 6 and isinstance(node[5], (tuple, list)) else {}
    return ExternalTensor(new_id, shape, dtype, "input", f"from {api}", low, high,
                          **_external_extras(extras))


def _external_extras(extras: dict[str, Any]) -> dict[str, Any]:
    """ExternalTensor's layout and value fields from a described output's sixth item, its
    (key, value) pairs (a key this version does not know is left out)."""
    out: dict[str, Any] = {}
    for key in ("expanded_from", "dim_order", "values"):
        if extras.get(key) is not None:
            out[key] = tuple(int(v) for v in extras[key])
    if extras.get("true_fraction") is not None:
        out["true_fraction"] = float(extras["true_fraction"])
    return out

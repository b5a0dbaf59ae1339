"""A candidate applied to the step: a new program with the swapped calls removed and the
replacement calls put where the pattern's output call was; every later read of that
output reads the replacement's (Refs rewired), every other call renumbered. A tensor made
once (Swap.made_once: a creation from constants hoisted out of the step) becomes an
external of the swapped program holding the values the removed call made; every read of
its output reads that external (one per distinct tensor: the fixed script makes it once)."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from opbench.model.affinity.patterns import Candidate, MadeOnce, New, NewCall, Swap
from opbench.model.program import Call, Ext, ExternalTensor, Ref, map_refs
from opbench.model.steady import StepProgram

__all__ = ["swapped_step", "SwappedStep"]


class SwappedStep:
    """The swapped program, and where each swap's output call went (for the output
    check: the original's root and the swapped program's call that stands for it)."""

    def __init__(self, step: StepProgram, roots: dict[int, int | None],
                 kept: dict[int, int], picks: dict[int, tuple[int, ...]] | None = None):
        self.step = step
        # original root index -> new index (None: removed); in a whole-results program also
        # each removed call that stands for an element of a new call's result
        self.roots = roots
        self.kept = kept          # original call -> new index, for every call not removed
        # original root -> the element of its new call's result that stands for it (a
        # primitive's (y, mean, variance): (0,)); absent: the whole result
        self.picks = dict(picks or {})


def _new_call(template: NewCall, index: int, root: Call, outputs: Any) -> Call:
    return Call(index=index, framework=root.framework, api=template.api, kind=template.kind,
                replay_api=template.api, args=template.args, kwargs=template.kwargs,
                outputs=outputs, duration_ns=0, start_ns=0, grad_enabled=root.grad_enabled,
                init=template.init, site=root.site, pick=template.returns)


def _whole_result(swap: Swap, step: StepProgram) -> Any:
    """The described whole result of a new call whose removed calls each stand for one of
    its elements (Swap.stands_for): their outputs, by element."""
    by_element = dict((k, call) for call, k in swap.stands_for)
    return ("seq", tuple(step.calls[by_element[k]].outputs for k in sorted(by_element)))


def swapped_step(step: StepProgram, candidate: Candidate,
                 whole_results: bool = False) -> SwappedStep:
    """The step with the candidate's swaps. `whole_results`: the program for the output
    check, where a new call whose removed calls each stand for one element of its result
    (an nn.SGD for a loop of write-backs) returns the whole result and every such removed
    call is compared with its element (roots, picks); otherwise (timed) it returns the
    root's element alone, as the call it replaces did, and a queued step's sample ends
    reading that one tensor back as the original's does (replay/executor.py)."""
    by_root: dict[int, Swap] = {s.root: s for s in candidate.swaps}
    removed = {i for s in candidate.swaps for i in s.removed}
    renumber: dict[int, int] = {}             # old call -> new call standing for its output
    picks: dict[int, tuple[int, ...]] = {}    # old root -> element of that new call's result
    calls: list[Call] = []
    traced: list[int] = []
    source: list[int] = []
    roots: dict[int, int | None] = {}
    externals = list(step.externals)
    hoisted: dict[int, Ext] = {}              # old call -> the external made once for it
    made_once: dict[MadeOnce, Ext] = {}
    for swap in candidate.swaps:
        if swap.made_once is not None:
            if swap.made_once not in made_once:
                made_once[swap.made_once] = _made_once_external(swap.made_once, externals)
            hoisted[swap.root] = made_once[swap.made_once]

    instead = {s.root: s.reads_instead for s in candidate.swaps
               if s.reads_instead is not None}

    def remap(value: Any, made: list[int]) -> Any:
        def one(ref: Ref) -> Ref | Ext:
            if ref.call in hoisted:
                return hoisted[ref.call]
            if ref.call in instead:
                read = instead[ref.call]
                return read if isinstance(read, Ext) else one(read)
            return Ref(renumber[ref.call], picks.get(ref.call, ()) + ref.path)
        if isinstance(value, New):
            return Ref(made[value.k])
        if isinstance(value, tuple):
            return tuple(remap(v, made) for v in value)
        return map_refs(value, one)

    for old, call in enumerate(step.calls):
        swap = by_root.get(old)
        if swap is not None:
            made: list[int] = []
            for k, template in enumerate(swap.new_calls):
                last = k == len(swap.new_calls) - 1
                outputs = call.outputs if last else ("tensor", template.shape,
                                                     template.dtype or _dtype(call))
                if last and template.pick:
                    outputs = ("seq", (outputs, *template.extra_outputs))
                    picks[old] = template.pick
                whole = last and whole_results and bool(swap.stands_for)
                if whole:
                    template = replace(template, returns=None, args=template.args
                                       if template.checked_args is None
                                       else template.checked_args)
                    outputs = _whole_result(swap, step)
                new = _new_call(template, len(calls), call, outputs)
                new = replace(new, args=remap(new.args, made),
                              kwargs=tuple((key, remap(v, made)) for key, v in new.kwargs))
                made.append(len(calls))
                calls.append(new)
                traced.append(0)
                source.append(step.source_index[old])
            roots[old] = made[-1] if made else None
            if made:
                renumber[old] = made[-1]
            if made and whole_results:
                for stood_for, element in swap.stands_for:
                    roots[stood_for] = made[-1]
                    picks[stood_for] = (element,)
            continue
        if old in removed:
            continue
        renumber[old] = len(calls)
        calls.append(replace(call, index=len(calls), args=remap(call.args, []),
                             kwargs=tuple((k, remap(v, [])) for k, v in call.kwargs),
                             alias_of=remap(call.alias_of, []) if call.alias_of is not None
                             else None))
        traced.append(step.traced_ns[old])
        source.append(step.source_index[old])
    new_step = StepProgram(step.framework, tuple(calls), tuple(externals), step.steps,
                           tuple(traced), step.step_traced_ns, tuple(source))
    kept = {old: new for old, new in renumber.items() if old not in removed}
    return SwappedStep(new_step, roots, kept, picks)


def _made_once_external(made: MadeOnce, externals: list[ExternalTensor]) -> Ext:
    """A new external of the swapped program holding a hoisted tensor's values (the replay
    makes it once, with them: replay/executor.external_array)."""
    ext = ExternalTensor(len(externals), tuple(made.shape), made.dtype, "input",
                         "made once before the step", values=tuple(made.values))
    externals.append(ext)
    return Ext(ext.id)


def _dtype(call: Call) -> str:
    out = call.outputs
    return out[2] if out and out[0] == "tensor" else "float32"

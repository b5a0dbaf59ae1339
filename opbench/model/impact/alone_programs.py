"""Calls whose other-framework route a case cannot hold (a composed attention, a primitive
built from the call's arguments, running statistics held as Parameters) measured alone
through the replay instead: each such call with its own external tensors of the recorded
shapes, in a program of independent calls, replayed in processes of one framework each,
interleaved A B B A ..., in blocking launch (the isolated protocol's), each call timed
alone with a sync after it. Each side's processes run in its own interpreter when it names
one (`--target mindspore@envs/ms29/bin/python`), else in the script's: where the in-context
replay ran it (pipeline.py), so the alone and in-context times are of one build. Its
isolated ratio is the per-call medians' ratio with the intervals' ends against each other;
the verdict follows the threshold as opbench's does.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from opbench.config import DEFAULT_THRESHOLD
from opbench.config.sides import Side
from opbench.model.impact.processes import (Interpreter, ReplayFailed, run_replay,
                                            side_interpreter)
from opbench.model.program import Ext, Ref, map_refs
from opbench.model.impact.project import estimate_time
from opbench.model.steady import StepProgram, external_from_output
from opbench.runner import ipc

__all__ = ["lone_calls", "replay_alone"]

# Per-call passes in each process: each a sample of every call.
PASSES = 8


def lone_calls(step: StepProgram, indices: Sequence[int]) -> StepProgram:
    """A program of the calls at `indices`, each reading only external tensors: the
    tensors the step made for it become externals of their recorded shape and range."""
    externals = list(step.externals)
    calls = []

    def as_external(ref: Ref) -> Ext:
        source = step.calls[ref.call]
        made = external_from_output(len(externals), source.outputs, ref.path, source.api)
        externals.append(made)
        return Ext(made.id)

    def remap(value: Any) -> Any:
        return map_refs(value, as_external)

    for new, old in enumerate(indices):
        c = step.calls[old]
        calls.append(replace(c, index=new, args=remap(c.args),
                             kwargs=tuple((k, remap(v)) for k, v in c.kwargs),
                             alias_of=None))
    return StepProgram(step.framework, tuple(calls), tuple(externals), 1,
                       tuple(step.traced_ns[i] for i in indices), (0,), tuple(indices))


def replay_alone(script: Interpreter, sides: Mapping[str, Side], step: StepProgram,
                 indices: Sequence[int], reference: str, target: str, threads: int | None,
                 device: str, cpus: Sequence[int], processes: int, work: Path,
                 on_progress: Callable[[str], None]) -> dict[int, dict[str, Any]]:
    """For each step call index: reference_s, target_s (medians alone), ratio, ratio_ci,
    verdict; or reason when it could not be measured. `reference` and `target` are the
    sides' names (their frameworks: the two differ here); `sides` maps a name to its Side
    (a name missing from it is that framework in the script's interpreter)."""
    program = lone_calls(step, indices)
    side_of = {name: sides.get(name) or Side(name) for name in (reference, target)}
    python = {name: side_interpreter(side, script).path for name, side in side_of.items()}
    base = ipc.ReplayStep(framework=side_of[reference].framework, program=program,
                          kind=ipc.REPLAY_TIME, device=device, threads=threads, cpus=tuple(cpus),
                          launch="blocking", samples=1, passes=PASSES, rounds=1,
                          warmup_runs=3, warmup_s=0.1)
    order: list[str] = []
    for p in range(processes):
        order += [reference, target] if p % 2 == 0 else [target, reference]
    timings: dict[str, list[list[list[float]]]] = {reference: [], target: []}
    status: dict[str, list[Any]] = {}
    for n, name in enumerate(order, 1):
        on_progress(f"measuring {len(indices)} composed calls alone: process {n} of "
                    f"{len(order)} ({name}, {python[name]})")
        try:
            result = run_replay(python[name],
                                replace(base, framework=side_of[name].framework), work,
                                index=n)
        except ReplayFailed:
            continue
        status[name] = result.status
        timings[name].append(result.per_call_s)
    out: dict[int, dict[str, Any]] = {}
    for position, index in enumerate(indices):
        ran = all(fw in status and status[fw][position].ok for fw in (reference, target))
        if not ran or not timings[reference] or not timings[target]:
            out[index] = {"reason": "it did not run alone in both frameworks"}
            continue
        ref = estimate_time([p[position] for p in timings[reference]])
        tgt = estimate_time([p[position] for p in timings[target]])
        if ref.value <= 0 or tgt.value <= 0 or tgt.low <= 0:
            out[index] = {"reason": "no time measured alone"}
            continue
        low, high = ref.low / tgt.high, ref.high / tgt.low
        verdict = ("SLOW" if high < DEFAULT_THRESHOLD else
                   "PASS" if low >= DEFAULT_THRESHOLD else "INCONCLUSIVE")
        out[index] = {"reference_s": ref.value, "target_s": tgt.value,
                      "ratio": ref.value / tgt.value, "ratio_ci": (low, high),
                      "verdict": verdict}
    return out

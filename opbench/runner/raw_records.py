"""The raw records a session writes for each instance and each of its measurements, before
anything is judged.

The session (session.py) measures; this module turns what was measured into record fields:
the instance header, a measurement's raw rounds with where each came from (pass, process,
the wait before each sample), the protocol's own notes, and the rounds of a later pass
pooled in. Statistics and verdicts are added by opbench/verdicts/conclusions.py. Pure:
dicts and measure()'s results in, dicts out; shared with the worker processes (workers.py
builds headers for failed instances).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from opbench.cases.case_files import CaseInstance
from opbench.runner.measure import ROUNDS_CUT_NOTE, MeasuredRounds, MoreRounds
from opbench.runner.core_use import effective_cores, samples_over

if TYPE_CHECKING:   # runner imports this module
    from opbench.config import RunConfig

__all__ = ["BACKWARD_SUFFIX", "add_core_use", "add_settled", "instance_header", "jsonable",
           "key_mode",
           "new_measurement", "output_shapes", "pool_rounds", "protocol_notes"]

BACKWARD_SUFFIX = "+backward"


def new_measurement(m: MeasuredRounds, mode: str, threshold: float, rounds_requested: int,
                    process_index: int, allowed_cores: int | None = None) -> dict[str, Any]:
    """A measurement's record from its first share (pass 1 in one process): raw rounds and
    where they came from; statistics are added by the caller (measurement_statistics plus
    its own explanations)."""
    record = {
        "mode": mode,
        "loops": m.loops,
        "rounds": m.rounds,
        "rounds_requested": rounds_requested,
        "passes": 1,
        "rounds_per_pass": m.rounds,
        "pass_of_round": [1] * m.rounds,
        "processes": 1,
        "process_of_round": [process_index] * m.rounds,
        "samples_s": {n: list(v) for n, v in m.per_call_s.items()},
        "order": [list(o) for o in m.order],
        "warmup_calls": m.warmup_calls,
        "calibration": {"target_sample_time_s": m.calibration.target_sample_time_s,
                        "clock_resolution_s": m.calibration.clock_resolution_s,
                        "sync_cost_s": m.calibration.sync_cost_s,
                        "probes": [{"loops": lp, "sample_s": t}
                                   for lp, t in m.calibration.probes]},
        "threshold": threshold,
    }
    add_settled(record, m.settled)
    add_core_use(record, m.cpu_s, allowed_cores)
    return record


def pool_rounds(m: dict[str, Any], extra: MoreRounds, pass_index: int,
                process_index: int, allowed_cores: int | None = None) -> None:
    """A later share's rounds appended to a measurement's record, with their pass, process
    and waits; the caller redoes the statistics."""
    for name, values in extra.per_call_s.items():
        m["samples_s"][name].extend(values)
    m["order"].extend(list(o) for o in extra.order)
    m["pass_of_round"].extend([pass_index] * len(extra.order))
    m.setdefault("process_of_round", [1] * (len(m["order"]) - len(extra.order)))
    m["process_of_round"].extend([process_index] * len(extra.order))
    add_settled(m, extra.settled)
    add_core_use(m, extra.cpu_s, allowed_cores)
    m["passes"] = max(m.get("passes", 1), pass_index)
    m["processes"] = len(set(m["process_of_round"]))
    m["rounds"] = len(m["order"])


def protocol_notes(m: MeasuredRounds, config: "RunConfig") -> list[str]:
    """measure()'s notes speak of the first pass's share; restate a cut in totals."""
    if config.shares == 1:
        return list(m.notes)
    notes = [n for n in m.notes if not n.startswith(ROUNDS_CUT_NOTE)]
    if len(notes) < len(m.notes):
        pieces = " x ".join(f"{n} {what}" for n, what in
                            ((config.passes, "passes"), (config.processes, "processes"))
                            if n > 1)
        notes.insert(0, f"{ROUNDS_CUT_NOTE} {config.settings.rounds} to "
                        f"{m.rounds * config.shares} ({m.rounds} in each of {pieces}) to "
                        f"stay within {config.settings.max_time_s:g} s")
    return notes


def add_settled(m: dict[str, Any], settled: Mapping[str, Sequence[Any]]) -> None:
    """Keep each sample's pre-sample wait (seconds) and whether it timed out, aligned with
    samples_s, so a reader can see how long the other side's leftovers lasted."""
    waits = m.setdefault("settle_s", {})
    timed_out = m.setdefault("settle_timed_out", {})
    for name, results in settled.items():
        waits.setdefault(name, []).extend(
            [None if r is None else round(r.waited_s, 6) for r in results])
        timed_out[name] = timed_out.get(name, 0) + sum(
            1 for r in results if r is not None and r.timed_out)


def add_core_use(m: dict[str, Any], cpu_s: Mapping[str, Sequence[float]],
                 allowed_cores: int | None) -> None:
    """Each sample's process CPU seconds (aligned with samples_s; null where a share had no
    CPU clock), each side's effective cores over all its samples (CPU time over wall time)
    and how many of its samples used more cores than the run allows (pinning.py)."""
    if not cpu_s and "cpu_s" not in m:
        return
    rounds_before = len(m["order"]) - len(next(iter(cpu_s.values()), ()))
    kept = m.setdefault("cpu_s", {})
    for name in m["samples_s"]:
        values = kept.setdefault(name, [])
        values.extend([None] * (rounds_before - len(values)))   # shares without a CPU clock
        values.extend(cpu_s.get(name, [None] * (len(m["order"]) - len(values))))
    walls = {name: [t * m["loops"] for t in samples] for name, samples in m["samples_s"].items()}
    m["effective_cores"] = {name: (None if (c := effective_cores(kept[name], walls[name]))
                                   is None else round(c, 3)) for name in kept}
    if allowed_cores is not None:
        m["allowed_cores"] = allowed_cores
    allowed = m.get("allowed_cores")
    if allowed is not None:
        m["samples_over_cores"] = {name: samples_over(kept[name], walls[name], allowed)
                                   for name in kept}


def key_mode(key: str) -> str:
    """The timing mode of a measurement key ("serial+backward" -> "serial")."""
    return key[:-len(BACKWARD_SUFFIX)] if key.endswith(BACKWARD_SUFFIX) else key


def output_shapes(value: Any) -> Any:
    if isinstance(value, tuple):
        return [output_shapes(v) for v in value]
    return list(np.shape(value))


def instance_header(instance: CaseInstance, config: "RunConfig") -> dict[str, Any]:
    """What identifies an instance in the record, before anything ran, and the case's own
    gate minimum effect: `opbench gate` decides from the records alone (gate/evaluate.py is
    pure). Written as null when the case sets none, so the gate can tell "this case sets
    none now" from "written before the key existed" (absent), which falls back to the
    baseline's."""
    case = instance.case
    return {
        "id": instance.id,
        "case": case.name,
        "op": case.op,
        "file": case.file,
        "line": case.line,
        "tags": list(case.tags),
        "params": jsonable(dict(instance.params)),
        "inputs": [{"name": s.name, "shape": list(s.shape), "dtype": s.dtype, "dist": s.dist}
                   for s in instance.inputs],
        "apis": {n: c.api for n, c in instance.calls.items()},
        "backward": case.backward,
        "min_effect": case.min_effect,
        # the case's declared work (gapmap/work.py counts it from the shapes without)
        "work": dict(case.work) if case.work else None,
        "verdict": None,
        "error": None,
    }


def jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        # JSON has no inf/nan (the file is written with allow_nan=False); the id spells
        # them the same way
        return repr(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)

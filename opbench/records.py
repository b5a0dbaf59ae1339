"""The records a run writes for each instance and each of its measurements: their shape,
and everything computed from their rounds.

A run (runner.py) measures; this module turns what was measured into the record fields -
the instance header, a measurement's raw rounds with where each came from (pass, process,
the wait before each sample), its statistics and verdict, the rounds of a later pass pooled
in, and the run-wide between-process prior applied at the end. Pure: dicts and measure()'s
results in, dicts out; shared with the gate (gate/pool.py redoes statistics on pooled
baselines) and the worker processes (workers.py builds headers for failed instances).
"""
from __future__ import annotations

import math
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from .cases import CaseInstance
from .explain import explain_modes
from .interference import detect_interference
from .measure import ROUNDS_CUT_NOTE, Measurement, MoreRounds
from .stats import (BetweenProcessPrior, between_process_prior, between_process_sd,
                    ratio_estimate, summarize)
from .verdict import Verdict, ratio_verdict, worst

if TYPE_CHECKING:   # runner imports this module
    from .runner import RunConfig

__all__ = ["BACKWARD_SUFFIX", "add_settled", "apply_between_process_prior", "conclude",
           "instance_header", "jsonable", "key_mode", "measurement_statistics",
           "new_measurement", "output_shapes", "pool_rounds", "protocol_notes",
           "share_of_round"]

BACKWARD_SUFFIX = "+backward"


def new_measurement(m: Measurement, mode: str, threshold: float, rounds_requested: int,
                    process_index: int) -> dict[str, Any]:
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
    return record


def pool_rounds(m: dict[str, Any], extra: MoreRounds, pass_index: int,
                process_index: int) -> None:
    """A later share's rounds appended to a measurement's record, with their pass, process
    and waits; the caller redoes the statistics."""
    for name, values in extra.per_call_s.items():
        m["samples_s"][name].extend(values)
    m["order"].extend(list(o) for o in extra.order)
    m["pass_of_round"].extend([pass_index] * len(extra.order))
    m.setdefault("process_of_round", [1] * (len(m["order"]) - len(extra.order)))
    m["process_of_round"].extend([process_index] * len(extra.order))
    add_settled(m, extra.settled)
    m["passes"] = max(m.get("passes", 1), pass_index)
    m["processes"] = len(set(m["process_of_round"]))
    m["rounds"] = len(m["order"])


def protocol_notes(m: Measurement, config: "RunConfig") -> list[str]:
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


def measurement_statistics(per_call: Mapping[str, Sequence[float]], reference: str,
                           target: str, threshold: float,
                           order: Sequence[Sequence[str]] | None = None,
                           groups: Sequence[int] | None = None,
                           prior: BetweenProcessPrior | None = None,
                           shares: Sequence[Any] | None = None) -> dict[str, Any]:
    """A measurement record's statistics from its rounds (per-call seconds by framework,
    round i of each side paired): per-side summaries, the reference/target ratio with its
    interval (the process as the unit when `groups` names several processes, see
    stats.ratio_estimate), interference found in the samples (`order` is each round's
    side order), and the verdict against threshold, which interference turns from PASS or
    SLOW into INCONCLUSIVE. Pure; shared by a run (redone after every pass) and by
    baselines pooled for the gate (gate/pool.py)."""
    est = ratio_estimate(per_call[reference], per_call[target], groups=groups, prior=prior)
    verdict = ratio_verdict(est, threshold)
    findings = (detect_interference({n: per_call[n] for n in (reference, target)}, order,
                                    groups, shares) if order else [])
    fields: dict[str, Any] = {
        "summary": {n: asdict(summarize(v)) for n, v in per_call.items()},
        "ratio": est.ratio,
        "ci_low": est.ci_low,
        "ci_high": est.ci_high,
        "confidence": est.confidence,
        "coverage": est.coverage,
        "method": est.method,
        "too_few_rounds": est.too_few_rounds,
        "n_processes": est.n_processes,
        "between_process_sd": est.between_sd,
        "interference": [f.as_dict() for f in findings],
        "inconclusive_reason": None,
    }
    if est.too_few_rounds:
        fields["inconclusive_reason"] = "too few rounds for a 95% interval"
    elif findings and verdict in (Verdict.PASS, Verdict.SLOW):
        fields["inconclusive_reason"] = (f"would be {verdict.value}, but " +
                                         "; ".join(f.detail for f in findings))
        verdict = Verdict.INCONCLUSIVE
    elif verdict is Verdict.INCONCLUSIVE:
        fields["inconclusive_reason"] = (f"the interval [{est.ci_low:.3g}, {est.ci_high:.3g}] "
                                         f"straddles the threshold {threshold:g}")
    fields["verdict"] = verdict.value
    return fields


def share_of_round(m: Mapping[str, Any]) -> list[tuple[Any, Any]] | None:
    """Each round's (process, pass): the alternation of sides restarts at every share."""
    processes, passes = m.get("process_of_round"), m.get("pass_of_round")
    if not processes and not passes:
        return None
    n = len(m["order"])
    return list(zip(processes or [1] * n, passes or [1] * n))


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


def apply_between_process_prior(records: Sequence[dict[str, Any]], config: "RunConfig"
                                ) -> BetweenProcessPrior | None:
    """Recompute every measurement's statistics with the run's typical between-process
    spread (stats.between_process_prior) once all processes have measured: an instance's
    own 2-3 processes say little about that spread, the whole run says a lot. Returns the
    prior used (None when too few instances ran in several processes)."""
    spreads = []
    for inst in records:
        for m in (inst.get("measurements") or {}).values():
            groups = m.get("process_of_round")
            if groups and len(set(groups)) > 1:
                found = between_process_sd(m["samples_s"][config.reference],
                                           m["samples_s"][config.target], groups)
                if found is not None:
                    spreads.append(found)
    prior = between_process_prior(spreads)
    if prior is None:
        return None
    for inst in records:
        measurements = inst.get("measurements") or {}
        for m in measurements.values():
            if len(set(m.get("process_of_round") or [1])) < 2:
                continue
            m.update(measurement_statistics(
                {n: m["samples_s"][n] for n in config.frameworks}, config.reference,
                config.target, m["threshold"], order=m["order"], groups=m["process_of_round"],
                prior=prior, shares=share_of_round(m)))
        if measurements and inst.get("verdict") not in (Verdict.MISMATCH.value,
                                                        Verdict.ERROR.value):
            inst["verdict"] = worst(Verdict(m["verdict"]) for m in measurements.values()).value
    return prior


def key_mode(key: str) -> str:
    """The timing mode of a measurement key ("serial+backward" -> "serial")."""
    return key[:-len(BACKWARD_SUFFIX)] if key.endswith(BACKWARD_SUFFIX) else key


def conclude(record: dict[str, Any], config: "RunConfig") -> None:
    """An instance's explanation and verdict from its measurements (redone after a pass)."""
    measurements = record["measurements"]
    per_mode = {k: {n: m["summary"][n]["median_s"] for n in config.frameworks}
                for k, m in measurements.items()}
    record["explanation"] = explain_modes(per_mode, config.launch, config.device)
    record["verdict"] = worst(Verdict(m["verdict"]) for m in measurements.values()).value


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

"""What a measured instance concludes: each measurement's statistics, interference and
verdict from its raw rounds, the instance's explanation and verdict, and the run-wide
between-process prior applied once every process has measured.

The runner records what happened (outputs checked, raw rounds, errors); this module judges
it. Pure: records (dicts) in, the same records completed in place. Shared by every path
that measures (opbench/runloop/recorded_run.py, the pytest front door, the gate's pooled
baselines).
"""
from __future__ import annotations

import functools
from dataclasses import asdict
from typing import Any, Mapping, Sequence

from opbench.config import RunConfig
from opbench.verdicts.explain import explain_measurement, explain_modes
from opbench.verdicts.interference import contaminated_versions, detect_interference
from opbench.verdicts.rules import Verdict, ratio_verdict, worst
from opbench.verdicts.stats import (
                                    BetweenProcessPrior,
                                    Look,
                                    RatioEstimate,
                                    between_process_excess,
                                    look_estimate,
                                    ratio_estimate,
                                    run_spread_prior,
                                    summarize,
                                    )

__all__ = ["apply_between_process_prior", "conclude", "judge_instance", "judge_measurement",
           "measurement_statistics", "run_between_process_prior", "share_of_round"]

def measurement_statistics(per_call: Mapping[str, Sequence[float]], reference: str,
                           target: str, threshold: float,
                           order: Sequence[Sequence[str]] | None = None,
                           groups: Sequence[int] | None = None,
                           prior: BetweenProcessPrior | None = None,
                           shares: Sequence[Any] | None = None,
                           look_confidence: float | None = None) -> dict[str, Any]:
    """A measurement record's statistics from its rounds (per-call seconds by framework,
    round i of each side paired): per-side summaries, the reference/target ratio with its
    interval (the process as the unit when `groups` names several processes, see
    stats.ratio_estimate), interference found in the samples (`order` is each round's
    side order), and the verdict against threshold. Interference turns PASS or SLOW into
    INCONCLUSIVE only when it can change the verdict: the verdict is kept, with a line
    saying so, when the samples with the contaminated ones at their worst and without them
    give it too. look_confidence: a sequential run's look (verdicts/sequential.py): the
    interval at that look's spent confidence, the prior standing in for the processes not
    yet run. Pure; shared by a run (redone after every pass) and by baselines pooled for
    the gate (gate/pool.py)."""
    def estimate(samples: Mapping[str, Sequence[float]]) -> RatioEstimate:
        if look_confidence is None:
            return ratio_estimate(samples[reference], samples[target], groups=groups,
                                  prior=prior)
        return look_estimate(samples[reference], samples[target],
                             groups or [1] * len(samples[reference]), look_confidence, prior)

    est = estimate(per_call)
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
        versions = {label: estimate(samples) for label, samples in contaminated_versions(
            {n: per_call[n] for n in (reference, target)}, order, findings).items()}
        differing = {label: v for label, v in versions.items()
                     if ratio_verdict(v, threshold) is not verdict}
        if differing:
            fields["inconclusive_reason"] = (
                f"would be {verdict.value}, but " + "; ".join(f.detail for f in findings) +
                "; " + _versions_text(differing, threshold))
            verdict = Verdict.INCONCLUSIVE
        else:
            fields[_RULED_OUT] = (
                f"{verdict.value} whatever the interference: " +
                _versions_text(versions, threshold))
    elif verdict is Verdict.INCONCLUSIVE:
        fields["inconclusive_reason"] = (f"the interval [{est.ci_low:.3g}, {est.ci_high:.3g}] "
                                         f"straddles the threshold {threshold:g}")
    fields["verdict"] = verdict.value
    return fields


def _versions_text(versions: Mapping[str, RatioEstimate], threshold: float) -> str:
    """`with torch's clusters at its worst [0.066, 0.074] (SLOW), ...`: each recomputed
    version's interval and what it concludes."""
    return ", ".join(f"with {label} [{v.ci_low:.3g}, {v.ci_high:.3g}] "
                     f"({ratio_verdict(v, threshold).value})"
                     if not label.startswith("without") else
                     f"{label} [{v.ci_low:.3g}, {v.ci_high:.3g}] "
                     f"({ratio_verdict(v, threshold).value})"
                     for label, v in versions.items())


def apply_between_process_prior(records: Sequence[dict[str, Any]], config: RunConfig
                                ) -> BetweenProcessPrior | None:
    """Recompute every measurement's statistics with the run's typical between-process
    spread (run_between_process_prior: stats.run_spread_prior) once all processes have
    measured: an instance's own 2-3 processes say little about that spread, the whole run
    says a lot. Returns the prior used (None when too few instances ran in several
    processes)."""
    prior = run_between_process_prior(records, config)
    if prior is None:
        return None
    for inst in records:
        if inst.get("sequential"):
            continue     # judged at the look that stopped it, with the run's prior so far
        measurements = inst.get("measurements") or {}
        for m in measurements.values():
            if len(set(m.get("process_of_round") or [1])) < 2:
                continue
            m.pop(_RULED_OUT, None)    # a line of the statistics replaced here
            m.update(measurement_statistics(
                {n: m["samples_s"][n] for n in config.frameworks}, config.reference_name,
                config.target_name, m["threshold"], order=m["order"], groups=m["process_of_round"],
                prior=prior, shares=share_of_round(m)))
        if measurements and inst.get("verdict") not in (Verdict.MISMATCH.value,
                                                        Verdict.ERROR.value):
            inst["verdict"] = worst(Verdict(m["verdict"]) for m in measurements.values()).value
    return prior


def run_between_process_prior(records: Sequence[dict[str, Any]], config: RunConfig
                              ) -> BetweenProcessPrior | None:
    """The run's typical between-process spread from every measurement made in several
    processes so far (stats.run_spread_prior); None with too few. A sequential run asks
    for it at every instance it judges (runloop/sequential_run.py), over every record so
    far: each measurement's excess is remembered by its rounds (_excess_of), so only the
    measurements that gained rounds since the last call are computed again."""
    excesses = []
    for inst in records:
        for m in (inst.get("measurements") or {}).values():
            groups = m.get("process_of_round")
            if groups and len(set(groups)) > 1:
                found = _excess_of(tuple(m["samples_s"][config.reference_name]),
                                   tuple(m["samples_s"][config.target_name]), tuple(groups))
                if found is not None:
                    excesses.append(found)
    return run_spread_prior(excesses)


# Enough for every measurement of a large sequential run (the shipped library is ~600
# measurements); a measurement that gains rounds is a new key, its old entry ages out.
_EXCESS_CACHE_SIZE = 8192


@functools.lru_cache(maxsize=_EXCESS_CACHE_SIZE)
def _excess_of(ref_s: tuple[float, ...], target_s: tuple[float, ...],
               groups: tuple[Any, ...]) -> tuple[float, int] | None:
    """stats.between_process_excess, remembered by the rounds it is computed from (a pure
    function of them, so a remembered value is the value). Without it, a sequential run's
    prior recomputed every measurement's per-process medians for every instance judged,
    quadratic in the run: 100 instances x 2 measurements of 4 processes x 10 rounds, the
    prior once per instance, took 2.46 s here, 0.14 s with it."""
    return between_process_excess(ref_s, target_s, groups)


def conclude(record: dict[str, Any], config: RunConfig) -> None:
    """An instance's explanation and verdict from its measurements (redone after a pass)."""
    measurements = record["measurements"]
    per_mode = {k: {n: m["summary"][n]["median_s"] for n in config.frameworks}
                for k, m in measurements.items()}
    record["explanation"] = explain_modes(per_mode, config.launch, config.device,
                                          config.framework_of)
    record["verdict"] = worst(Verdict(m["verdict"]) for m in measurements.values()).value


def share_of_round(m: Mapping[str, Any]) -> list[tuple[Any, Any]] | None:
    """Each round's (process, pass): the alternation of sides restarts at every share."""
    processes, passes = m.get("process_of_round"), m.get("pass_of_round")
    if not processes and not passes:
        return None
    n = len(m["order"])
    return list(zip(processes or [1] * n, passes or [1] * n))


# Set by measurement_statistics only when interference was found and could not change the
# verdict: a recomputation drops the previous one.
_RULED_OUT = "interference_ruled_out"
# Written last in a measurement's record, after its raw rounds and statistics.
_NOTE_KEYS = ("protocol_notes", "notes")


def judge_measurement(m: dict[str, Any], config: RunConfig,
                      overhead: Mapping[str, Mapping[str, float]],
                      look: Look | None = None) -> None:
    """A measurement's statistics and verdict from its rounds, and its notes: the protocol's
    own, then what the per-call floors (`overhead`) explain. Redone after every share of
    rounds; the record keeps one key order (raw rounds, statistics, notes) however often.
    look: a sequential run's look (verdicts/sequential.py), whose confidence and prior the
    interval takes."""
    fields = measurement_statistics({n: m["samples_s"][n] for n in config.frameworks},
                                    config.reference_name, config.target_name, m["threshold"],
                                    order=m["order"], groups=m.get("process_of_round"),
                                    shares=share_of_round(m),
                                    prior=look.prior if look else None,
                                    look_confidence=look.confidence if look else None)
    medians = {n: fields["summary"][n]["median_s"] for n in config.frameworks}
    notes = list(m.get("protocol_notes", [])) + explain_measurement(m["mode"], medians,
                                                                    overhead)
    judged = {k: v for k, v in m.items()
              if k not in fields and k not in _NOTE_KEYS and k != _RULED_OUT}
    judged.update(fields)
    judged["protocol_notes"] = list(m.get("protocol_notes", []))
    judged["notes"] = notes
    m.clear()
    m.update(judged)


def _failed_check(check: Mapping[str, Any] | None) -> bool:
    return bool(check) and not check.get("ok") and not check.get("expected_mismatch")


def judge_instance(record: dict[str, Any], config: RunConfig,
                   overhead: Mapping[str, Mapping[str, float]],
                   look: Look | None = None) -> dict[str, Any]:
    """An instance's verdict from what the runner recorded: MISMATCH when outputs or
    gradients disagree (and the case does not expect it), ERROR when a step failed, else
    the worst of its measurements' verdicts (PASS for a correctness-only run); at a
    sequential run's `look`, with that look's interval. Returns the record, completed in
    place."""
    if _failed_check(record.get("check")) or _failed_check(record.get("grad_check")):
        record["verdict"] = Verdict.MISMATCH.value
    elif record.get("error"):
        record["verdict"] = Verdict.ERROR.value
    elif record.get("measurements"):
        for m in record["measurements"].values():
            judge_measurement(m, config, overhead, look)
        if "explanation" not in record and "duration_s" in record:
            # the explanation stands before the instance's duration, as it always has
            duration = record.pop("duration_s")
            conclude(record, config)
            record["duration_s"] = duration
        else:
            conclude(record, config)
    elif not config.timing:
        record["verdict"] = Verdict.PASS.value
    return record

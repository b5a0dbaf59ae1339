"""What a measured instance concludes: each measurement's statistics, interference and
verdict from its raw rounds, the instance's explanation and verdict, and the run-wide
between-process prior applied once every process has measured.

The runner records what happened (outputs checked, raw rounds, errors); this module judges
it. Pure: records (dicts) in, new records out, the given ones never changed; a measurement's
rounds are read in one place (RawRounds.of) and its statistics are a frozen value
(MeasurementStatistics) until they are written into the new record. Shared by every path
that measures (opbench/runloop/recorded_run.py, the pytest front door, the gate's pooled
baselines).
"""
from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from opbench.config import RunConfig
from opbench.config.record_codec import decoded, record_from
from opbench.verdicts.explain import explain_measurement, explain_modes
from opbench.verdicts.interference import Finding, contaminated_versions, detect_interference
from opbench.verdicts.rules import Verdict, ratio_verdict, worst
from opbench.verdicts.stats import (
                                    BetweenProcessPrior,
                                    Look,
                                    RatioEstimate,
                                    Summary,
                                    between_process_excess,
                                    look_estimate,
                                    ratio_estimate,
                                    run_spread_prior,
                                    summarize,
                                    )

__all__ = ["InstanceState", "MeasurementOutcome", "MeasurementStatistics", "RawRounds",
           "apply_between_process_prior", "judge_instance", "judge_measurement",
           "measurement_statistics", "run_between_process_prior", "share_of_round"]


@dataclass(frozen=True)
class RawRounds:
    """What a measurement record's raw rounds say, read from its dict in one place (the
    runner's raw record, runner/raw_records.py, or a pooled baseline's): each side's per-call
    seconds, each round's side order, process and pass, the threshold it is judged against."""

    samples_s: Mapping[str, Sequence[float]]
    order: Sequence[Sequence[str]] = ()
    threshold: float | None = None      # every record the runner writes has one
    mode: str | None = None
    process_of_round: Sequence[Any] | None = None
    pass_of_round: Sequence[Any] | None = None
    protocol_notes: tuple[str, ...] = field(default=(), metadata=decoded(tuple))

    @classmethod
    def of(cls, m: Mapping[str, Any]) -> "RawRounds":
        return record_from(cls, m)

    @property
    def processes(self) -> int:
        """How many processes the rounds came from (absent: all from one)."""
        return _processes_of(self.process_of_round)

    def shares(self) -> list[tuple[Any, Any]] | None:
        """Each round's (process, pass): the alternation of sides restarts at every share."""
        processes, passes = self.process_of_round, self.pass_of_round
        if not processes and not passes:
            return None
        n = len(self.order)
        return list(zip(processes or [1] * n, passes or [1] * n))

    def sides(self, names: Sequence[str]) -> dict[str, Sequence[float]]:
        return {n: self.samples_s[n] for n in names}


@dataclass(frozen=True)
class InstanceState:
    """What judging reads of an instance record while a run measures (the record itself
    stays a dict until the run loop writes it: the typed InstanceRecord sits in results/,
    above this layer, and the golden run holds the dict's key order), read in one place:
    how its outputs and gradients compared, what failed, its measurements' records, its
    sequential course and its verdict so far."""

    check: Mapping[str, Any] | None = None
    grad_check: Mapping[str, Any] | None = None
    error: str | None = None
    measurements: Mapping[str, Mapping[str, Any]] = field(
        default_factory=dict, metadata=decoded(null_is_default=True))
    sequential: Mapping[str, Any] | None = None
    verdict: str | None = None

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> "InstanceState":
        return record_from(cls, record)

    @property
    def failed_check(self) -> bool:
        """Outputs or gradients disagreed, and the case does not expect it."""
        return _failed_check(self.check) or _failed_check(self.grad_check)

    def rounds(self) -> dict[str, RawRounds]:
        return {key: RawRounds.of(m) for key, m in self.measurements.items()}

    def outcomes(self) -> dict[str, "MeasurementOutcome"]:
        return {key: record_from(MeasurementOutcome, m)
                for key, m in self.measurements.items()}

    @property
    def processes(self) -> int:
        """Processes the rounds came from (the fewest over its measurements; 1 without)."""
        return min((o.processes for o in self.outcomes().values()), default=1)


@dataclass(frozen=True)
class MeasurementOutcome:
    """Where a measurement's rounds came from and its verdict so far: what a sequential run
    reads to decide whether an instance goes on (without its rounds' samples)."""

    process_of_round: Sequence[Any] | None = None
    verdict: str | None = None

    @property
    def processes(self) -> int:
        return _processes_of(self.process_of_round)


def _processes_of(process_of_round: Sequence[Any] | None) -> int:
    """How many processes the rounds came from (absent: all from one)."""
    return len(set(process_of_round or [1]))


# Set only when interference was found and could not change the verdict: a recomputation
# drops the previous one.
_RULED_OUT = "interference_ruled_out"
# Written last in a measurement's record, after its raw rounds and statistics.
_NOTE_KEYS = ("protocol_notes", "notes")


@dataclass(frozen=True)
class MeasurementStatistics:
    """A measurement's statistics and verdict from its rounds (measurement_statistics):
    each side's summary, the ratio with its interval, interference found in the samples,
    why it is INCONCLUSIVE or why interference did not change it, and the verdict."""

    summary: Mapping[str, Summary]
    estimate: RatioEstimate
    interference: tuple[Finding, ...]
    verdict: Verdict
    inconclusive_reason: str | None = None
    interference_ruled_out: str | None = None

    def median_s(self, side: str) -> float:
        return self.summary[side].median_s

    def as_fields(self) -> dict[str, Any]:
        """The measurement record's statistics keys, in the order the results file has
        always had them (the golden run holds it)."""
        est = self.estimate
        fields: dict[str, Any] = {
            "summary": {n: asdict(s) for n, s in self.summary.items()},
            "ratio": est.ratio,
            "ci_low": est.ci_low,
            "ci_high": est.ci_high,
            "confidence": est.confidence,
            "coverage": est.coverage,
            "method": est.method,
            "too_few_rounds": est.too_few_rounds,
            "n_processes": est.n_processes,
            "between_process_sd": est.between_sd,
            "interference": [f.as_dict() for f in self.interference],
            "inconclusive_reason": self.inconclusive_reason,
        }
        if self.interference_ruled_out is not None:
            fields[_RULED_OUT] = self.interference_ruled_out
        fields["verdict"] = self.verdict.value
        return fields


# Every key as_fields may write: a measurement judged again drops them all first.
_STATISTICS_KEYS = frozenset({"summary", "ratio", "ci_low", "ci_high", "confidence", "coverage",
                              "method", "too_few_rounds", "n_processes", "between_process_sd",
                              "interference", "inconclusive_reason", _RULED_OUT, "verdict"})


def measurement_statistics(per_call: Mapping[str, Sequence[float]], reference: str,
                           target: str, threshold: float,
                           order: Sequence[Sequence[str]] | None = None,
                           groups: Sequence[int] | None = None,
                           prior: BetweenProcessPrior | None = None,
                           shares: Sequence[Any] | None = None,
                           look_confidence: float | None = None) -> MeasurementStatistics:
    """A measurement's statistics from its rounds (per-call seconds by framework,
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
    both = {n: per_call[n] for n in (reference, target)}
    findings = detect_interference(both, order, groups, shares) if order else []
    reason = ruled_out = None
    if est.too_few_rounds:
        reason = "too few rounds for a 95% interval"
    elif findings and verdict in (Verdict.PASS, Verdict.SLOW):
        versions = {label: estimate(samples) for label, samples in contaminated_versions(
            both, order, findings).items()}
        differing = {label: v for label, v in versions.items()
                     if ratio_verdict(v, threshold) is not verdict}
        if differing:
            reason = (f"would be {verdict.value}, but " + "; ".join(f.detail for f in findings)
                      + "; " + _versions_text(differing, threshold))
            verdict = Verdict.INCONCLUSIVE
        else:
            ruled_out = (f"{verdict.value} whatever the interference: " +
                         _versions_text(versions, threshold))
    elif verdict is Verdict.INCONCLUSIVE:
        reason = (f"the interval [{est.ci_low:.3g}, {est.ci_high:.3g}] "
                  f"straddles the threshold {threshold:g}")
    return MeasurementStatistics(
        summary={n: summarize(v) for n, v in per_call.items()}, estimate=est,
        interference=tuple(findings), verdict=verdict, inconclusive_reason=reason,
        interference_ruled_out=ruled_out)


def _versions_text(versions: Mapping[str, RatioEstimate], threshold: float) -> str:
    """`with torch's clusters at its worst [0.066, 0.074] (SLOW), ...`: each recomputed
    version's interval and what it concludes."""
    return ", ".join(f"with {label} [{v.ci_low:.3g}, {v.ci_high:.3g}] "
                     f"({ratio_verdict(v, threshold).value})"
                     if not label.startswith("without") else
                     f"{label} [{v.ci_low:.3g}, {v.ci_high:.3g}] "
                     f"({ratio_verdict(v, threshold).value})"
                     for label, v in versions.items())


def apply_between_process_prior(records: Sequence[Mapping[str, Any]], config: RunConfig
                                ) -> tuple[list[dict[str, Any]], BetweenProcessPrior | None]:
    """Every measurement's statistics recomputed with the run's typical between-process
    spread (run_between_process_prior: stats.run_spread_prior) once all processes have
    measured: an instance's own 2-3 processes say little about that spread, the whole run
    says a lot. Returns new instance records (the given ones unchanged; the same ones when
    too few instances ran in several processes) and the prior used (None then)."""
    prior = run_between_process_prior(records, config)
    if prior is None:
        return [dict(inst) for inst in records], None
    return [_with_prior(inst, config, prior) for inst in records], prior


def _with_prior(inst: Mapping[str, Any], config: RunConfig,
                prior: BetweenProcessPrior) -> dict[str, Any]:
    """An instance record with its multi-process measurements' statistics at `prior` (their
    notes kept: the floors they compare with did not change)."""
    state = InstanceState.of(inst)
    measurements = state.measurements
    if state.sequential or not measurements:
        return dict(inst)    # judged at the look that stopped it, with the run's prior so far
    judged = {}
    for key, m in measurements.items():
        rounds = RawRounds.of(m)
        if rounds.processes < 2:
            judged[key] = m
            continue
        fields = measurement_statistics(
            rounds.sides(config.frameworks), config.reference_name, config.target_name,
            rounds.threshold, order=rounds.order, groups=rounds.process_of_round, prior=prior,
            shares=rounds.shares()).as_fields()
        # the keys keep their places; a ruled-out line of the earlier statistics is replaced
        judged[key] = {**{k: v for k, v in m.items() if k != _RULED_OUT}, **fields}
    out = {**inst, "measurements": judged}
    if state.verdict not in (Verdict.MISMATCH.value, Verdict.ERROR.value):
        out["verdict"] = _worst_of(judged.values())
    return out


def _worst_of(measurements: Iterable[Mapping[str, Any]]) -> str:
    return worst(Verdict(record_from(MeasurementOutcome, m).verdict)
                 for m in measurements).value


def run_between_process_prior(records: Sequence[Mapping[str, Any]], config: RunConfig
                              ) -> BetweenProcessPrior | None:
    """The run's typical between-process spread from every measurement made in several
    processes so far (stats.run_spread_prior); None with too few. A sequential run asks
    for it at every instance it judges (runloop/sequential_run.py), over every record so
    far: each measurement's excess is remembered by its rounds (_excess_of), so only the
    measurements that gained rounds since the last call are computed again."""
    excesses = []
    for inst in records:
        for rounds in InstanceState.of(inst).rounds().values():
            if rounds.processes > 1:
                found = _excess_of(tuple(rounds.samples_s[config.reference_name]),
                                   tuple(rounds.samples_s[config.target_name]),
                                   tuple(rounds.process_of_round))
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


def share_of_round(m: Mapping[str, Any]) -> list[tuple[Any, Any]] | None:
    """A measurement record's (process, pass) of each round (RawRounds.shares)."""
    return RawRounds.of(m).shares()


def judge_measurement(m: Mapping[str, Any], config: RunConfig,
                      overhead: Mapping[str, Mapping[str, float]],
                      look: Look | None = None) -> dict[str, Any]:
    """A new measurement record: `m`'s raw rounds, then their statistics and verdict, then
    the notes (the protocol's own, then what the per-call floors in `overhead` explain).
    Redone after every share of rounds; the record keeps one key order (raw rounds,
    statistics, notes) however often. look: a sequential run's look
    (verdicts/sequential.py), whose confidence and prior the interval takes."""
    return _judged_measurement(m, config, overhead, look)[0]


def _judged_measurement(m: Mapping[str, Any], config: RunConfig,
                        overhead: Mapping[str, Mapping[str, float]], look: Look | None
                        ) -> tuple[dict[str, Any], MeasurementStatistics]:
    """judge_measurement's record, and the statistics in it as a frozen value."""
    rounds = RawRounds.of(m)
    stats = measurement_statistics(rounds.sides(config.frameworks), config.reference_name,
                                   config.target_name, rounds.threshold, order=rounds.order,
                                   groups=rounds.process_of_round, shares=rounds.shares(),
                                   prior=look.prior if look else None,
                                   look_confidence=look.confidence if look else None)
    medians = {n: stats.median_s(n) for n in config.frameworks}
    judged = {k: v for k, v in m.items() if k not in _STATISTICS_KEYS and k not in _NOTE_KEYS}
    judged.update(stats.as_fields())
    judged["protocol_notes"] = list(rounds.protocol_notes)
    judged["notes"] = list(rounds.protocol_notes) + explain_measurement(rounds.mode, medians,
                                                                        overhead)
    return judged, stats


@dataclass(frozen=True)
class _CheckOutcome:
    """What judging reads of an output or gradient check's record (runner/check.py)."""

    ok: bool = False
    expected_mismatch: Any = None


def _failed_check(check: Mapping[str, Any] | None) -> bool:
    if not check:
        return False
    outcome = record_from(_CheckOutcome, check)
    return not outcome.ok and not outcome.expected_mismatch


def judge_instance(record: Mapping[str, Any], config: RunConfig,
                   overhead: Mapping[str, Mapping[str, float]],
                   look: Look | None = None) -> dict[str, Any]:
    """A new instance record with its verdict from what the runner recorded: MISMATCH when
    outputs or gradients disagree (and the case does not expect it), ERROR when a step
    failed, else the worst of its measurements' verdicts (PASS for a correctness-only run);
    at a sequential run's `look`, with that look's interval. `record` is left as it was."""
    state = InstanceState.of(record)
    if state.failed_check:
        return {**record, "verdict": Verdict.MISMATCH.value}
    if state.error:
        return {**record, "verdict": Verdict.ERROR.value}
    if state.measurements:
        judged = {key: _judged_measurement(m, config, overhead, look)
                  for key, m in state.measurements.items()}
        return _concluded({**record, "measurements": {k: m for k, (m, _) in judged.items()}},
                          {k: stats for k, (_, stats) in judged.items()}, config)
    if not config.timing:
        return {**record, "verdict": Verdict.PASS.value}
    return dict(record)


def _concluded(record: Mapping[str, Any], statistics: Mapping[str, MeasurementStatistics],
               config: RunConfig) -> dict[str, Any]:
    """An instance's explanation and verdict from its measurements' statistics; the first
    time, the explanation stands before the instance's duration, as it always has."""
    per_mode = {k: {n: s.median_s(n) for n in config.frameworks}
                for k, s in statistics.items()}
    explanation = explain_modes(per_mode, config.launch, config.device, config.framework_of)
    moved = "explanation" not in record and "duration_s" in record
    out = {k: v for k, v in record.items() if not (moved and k == "duration_s")}
    out["explanation"] = explanation
    out["verdict"] = worst(s.verdict for s in statistics.values()).value
    if moved:
        out["duration_s"] = record["duration_s"]
    return out

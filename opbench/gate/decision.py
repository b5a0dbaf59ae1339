"""The gate's decision rule for one measurement: did the case get slower than the baseline?

Pure: plain per-round seconds in, a frozen Decision out. Three views of the same change,
each a two-sample change estimate (stats.change_estimate) judged by size AND evidence
(verdict.change_verdict):

- ratio: per-round reference/target ratios of the baseline run against the current run.
  The reference framework runs interleaved with the target in the same rounds, so whatever
  made the whole machine faster or slower between the two runs (another runner, a busy
  neighbour, a different CPU) cancels in the ratio. This is the primary path and the only
  one used when the runs come from different machines.
- target time / reference time: each side's absolute per-call time, baseline vs current.
  Comparable only on the same machine, and even there exposed to the machine's state
  between runs, which nothing cancels. So the target-time path can add a regression only
  when the reference-time path shows the machine did not get slower (reference time
  UNCHANGED or IMPROVEMENT): then the target's slowdown cannot be the machine's.

Times are given to change_estimate as speeds (1 / time), so for every path a change below
1 means "the target got relatively or absolutely slower" and REGRESSION keeps its meaning.

Where both runs say which worker process each round came from, every path takes the process
as its unit (stats.change_estimate with groups): two runs of the same code differ by their
processes' offsets, which no number of rounds inside one process shows. A path's prior -
its typical between-process spread over the gate's instances (path_priors) - keeps an
instance measured in few processes from a t interval with almost no df.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Mapping, Sequence

from opbench.verdicts.rules import DEFAULT_MIN_EFFECT, ChangeVerdict, change_verdict
from opbench.verdicts.stats import (
                                    DEFAULT_CONFIDENCE,
                                    BetweenProcessPrior,
                                    ChangeEstimate,
                                    change_estimate,
                                    paired_ratios,
                                    pooled_between_process_excess,
                                    run_spread_prior,
                                    )

__all__ = [
    "PATH_RATIO",
    "PATH_REFERENCE_TIME",
    "PATH_TARGET_TIME",
    "Decision",
    "GateVerdict",
    "PathChange",
    "RunSamples",
    "StagedDecision",
    "combine_paths",
    "decide",
    "needs_remeasure",
    "path_priors",
    "staged",
]

PATH_RATIO = "ratio"
PATH_TARGET_TIME = "target time"
PATH_REFERENCE_TIME = "reference time"


class GateVerdict(str, Enum):
    """Outcome of the gate for one measurement or one instance."""

    PASS = "PASS"                  # no regression of min_effect or more (or an improvement)
    REGRESSION = "REGRESSION"      # slower than the baseline, with evidence and by enough
    INCONCLUSIVE = "INCONCLUSIVE"  # too noisy to tell either way
    BROKEN = "BROKEN"              # measured in the baseline, now ERROR or MISMATCH
    MISSING = "MISSING"            # in the baseline, not in the current run
    NEW = "NEW"                    # in the current run, nothing to compare with

    @property
    def severity(self) -> int:
        return _SEVERITY[self]

    def __str__(self) -> str:
        return self.value


# Worst-first order for reports and for an instance with several measurements (modes,
# forward and forward+backward). NEW is informational, so it ranks with PASS's neighbours.
_SEVERITY = {
    GateVerdict.PASS: 0,
    GateVerdict.NEW: 1,
    GateVerdict.INCONCLUSIVE: 2,
    GateVerdict.MISSING: 3,
    GateVerdict.REGRESSION: 4,
    GateVerdict.BROKEN: 5,
}


@dataclass(frozen=True)
class RunSamples:
    """One measurement's interleaved rounds: reference_s[i] and target_s[i] ran back to
    back in round i (seconds per call); process[i] names the worker process of round i
    (None: not recorded, every round counts as independent)."""

    reference_s: tuple[float, ...]
    target_s: tuple[float, ...]
    process: tuple[str, ...] | None = None

    @classmethod
    def of(cls, reference_s: Sequence[float], target_s: Sequence[float],
           process: Sequence[object] | None = None) -> "RunSamples":
        if process is not None and len(process) != len(reference_s):
            raise ValueError(f"{len(process)} process labels for {len(reference_s)} rounds")
        return cls(tuple(float(x) for x in reference_s), tuple(float(x) for x in target_s),
                   None if process is None else tuple(str(p) for p in process))

    def ratios(self) -> list[float]:
        return [float(r) for r in paired_ratios(self.reference_s, self.target_s)]

    def values(self, path: str) -> list[float]:
        """What a path compares: the per-round ratios, or a side's speeds (1 / time)."""
        if path == PATH_RATIO:
            return self.ratios()
        return _speeds(self.target_s if path == PATH_TARGET_TIME else self.reference_s)


@dataclass(frozen=True)
class PathChange:
    """One path's change estimate (current / baseline; below 1 = target slower) and its
    verdict. For the time paths the change is of speed, i.e. baseline time / current time."""

    path: str
    estimate: ChangeEstimate
    verdict: ChangeVerdict
    min_effect: float = DEFAULT_MIN_EFFECT


@dataclass(frozen=True)
class Decision:
    """The decision for one measurement against its baseline.

    decided_by: the path(s) whose result settled the verdict, e.g. "ratio" or "target time"
        or "ratio + target time" when both showed the regression.
    target_time, reference_time: None when the machines differ (absolute times are not
        comparable across machines, so they are not even estimated).
    """

    verdict: GateVerdict
    decided_by: str
    reason: str
    ratio: PathChange
    target_time: PathChange | None
    reference_time: PathChange | None
    min_effect: float


def _speeds(times_s: Sequence[float]) -> list[float]:
    return [1.0 / t for t in times_s]


def _path(name: str, baseline: RunSamples, current: RunSamples, min_effect: float,
          confidence: float, prior: BetweenProcessPrior | None) -> PathChange:
    by_process = baseline.process is not None and current.process is not None
    estimate = change_estimate(baseline.values(name), current.values(name), confidence,
                               baseline_groups=baseline.process if by_process else None,
                               current_groups=current.process if by_process else None,
                               prior=prior if by_process else None)
    return PathChange(name, estimate, change_verdict(estimate, min_effect), min_effect)


def path_priors(comparisons: Sequence[tuple[RunSamples, RunSamples]]
                ) -> dict[str, BetweenProcessPrior]:
    """Per path, the typical between-process spread over a gate's comparisons (baseline,
    current) whose rounds name their processes, by the estimator a run's prior uses
    (stats.run_spread_prior): the square root of the trimmed mean of each comparison's
    pooled excess variance, untruncated. The median of truncated SDs it replaced read the
    spread low, since with few processes most of those SDs are 0 or near it (docs/gate.md:
    the error rates before and after). A path with too few such comparisons gets no
    prior."""
    priors = {}
    for path in (PATH_RATIO, PATH_TARGET_TIME, PATH_REFERENCE_TIME):
        excesses = [excess for base, cur in comparisons
                    if base.process is not None and cur.process is not None
                    and (excess := pooled_between_process_excess(
                        base.values(path), base.process, cur.values(path), cur.process))]
        prior = run_spread_prior(excesses)
        if prior is not None:
            priors[path] = prior
    return priors


# The path verdicts that exclude a slowdown of min_effect.
_NOT_SLOWER = (ChangeVerdict.UNCHANGED, ChangeVerdict.NOT_SLOWER, ChangeVerdict.IMPROVEMENT)


def combine_paths(ratio: ChangeVerdict, target_time: ChangeVerdict | None,
                  reference_time: ChangeVerdict | None, *,
                  times_by_process: bool = True) -> tuple[GateVerdict, str]:
    """The rule that turns the paths' verdicts into one (verdict, decided_by).
    times_by_process: the absolute-time paths' intervals hold the spread between processes
    (both runs named their processes); rule 1 trusts them only then, since rounds-only
    intervals of absolute times are narrower than the host's drift between runs.

    1. ratio REGRESSION, but the reference time IMPROVEMENT and the target time UNCHANGED,
       NOT SLOWER or IMPROVEMENT                         -> INCONCLUSIVE: the ratio fell
       because the reference got faster, by at least min_effect and with evidence, while
       the target did not get slower - the ratio's premise (the reference tracks the
       machine) failed, so it cannot convict the target. The mirror of rule 4. Seen in
       A/A gates here: torch's 1-2 us calls (softmax 4x64, add 16x64) ran 30-57% faster
       than in the baseline's processes while MindSpore's ran 6-21% faster, and the ratio
       read a 10-16% "regression" in both stages.
    2. ratio REGRESSION                                  -> REGRESSION by the ratio (and by
       the target time too, when that also shows one).
    3. target time REGRESSION and reference time UNCHANGED, NOT SLOWER or IMPROVEMENT
       (same machine, and the machine demonstrably not slower) -> REGRESSION by the target
       time.
    4. ratio IMPROVEMENT but target time REGRESSION      -> INCONCLUSIVE: the target got
       slower in absolute time and the "improvement" is the reference slowing down even
       more - the ratio's premise (the reference tracks the machine) failed, so it cannot
       vouch for the target. Seen on a loaded 2-core machine, where torch's calls were
       delayed 100x by MindSpore's spinning worker threads in one process and not another.
    5. ratio UNCHANGED, NOT SLOWER or IMPROVEMENT        -> PASS by the ratio (a drop of
       min_effect is excluded; that is all the gate asks).
    6. otherwise                                         -> INCONCLUSIVE by the ratio.

    The absolute paths only ever add a regression or withhold a verdict (rules 1 and 4);
    they never clear a regression the ratio shows into a PASS, nor pass a case the ratio
    cannot decide. Clearing
    would need the machine's speed to be known to better than min_effect between runs,
    which a shared runner does not give: a machine 20% faster today hides a 20% target
    slowdown in the absolute times exactly.
    """
    if (times_by_process and ratio is ChangeVerdict.REGRESSION
            and reference_time is ChangeVerdict.IMPROVEMENT and target_time in _NOT_SLOWER):
        return GateVerdict.INCONCLUSIVE, f"{PATH_RATIO} + {PATH_REFERENCE_TIME}"
    if ratio is ChangeVerdict.REGRESSION:
        both = target_time is ChangeVerdict.REGRESSION
        return GateVerdict.REGRESSION, (f"{PATH_RATIO} + {PATH_TARGET_TIME}" if both
                                        else PATH_RATIO)
    if (target_time is ChangeVerdict.REGRESSION and reference_time in _NOT_SLOWER):
        return GateVerdict.REGRESSION, PATH_TARGET_TIME
    if ratio is ChangeVerdict.IMPROVEMENT and target_time is ChangeVerdict.REGRESSION:
        return GateVerdict.INCONCLUSIVE, f"{PATH_RATIO} + {PATH_TARGET_TIME}"
    if ratio in _NOT_SLOWER:
        return GateVerdict.PASS, PATH_RATIO
    return GateVerdict.INCONCLUSIVE, PATH_RATIO


def _percent(change: float) -> str:
    return f"{(change - 1.0) * 100:+.1f}%"


def _describe(path: PathChange, min_effect: float) -> str:
    e = path.estimate
    text = (f"{path.path} {_percent(e.change)} [{_percent(e.ci_low)}, {_percent(e.ci_high)}] "
            f"{path.verdict.value}")
    if e.between_sd is not None:    # the interval holds the processes' spread: say so
        text += (f" ({e.n_processes_baseline} vs {e.n_processes_current} processes, "
                 f"between-process SD {math.expm1(e.between_sd):.1%})")
    if path.min_effect != min_effect:   # a time path with its own, higher noise floor
        text += f" (min effect {path.min_effect:.0%})"
    return text


def decide(baseline: RunSamples, current: RunSamples, *,
           min_effect: float = DEFAULT_MIN_EFFECT, same_machine: bool = False,
           confidence: float = DEFAULT_CONFIDENCE,
           floors: Mapping[str, float] | None = None,
           priors: Mapping[str, BetweenProcessPrior] | None = None) -> Decision:
    """Compare one measurement with its baseline (see the module docstring and
    combine_paths). same_machine: the two runs share a machine id, so absolute times are
    compared as well. floors: per path (PATH_*), a noise floor (gate/noise.py) that raises
    that path's minimum effect; the absolute times move more between processes than the
    ratio does, so their floors are higher. priors: per path, the gate's typical
    between-process spread (path_priors), used where both runs name their processes.
    Raises ValueError on empty, non-positive or unpaired samples."""
    floors = floors or {}
    priors = priors or {}

    def effect(path: str) -> float:
        return max(min_effect, floors.get(path, 0.0))

    def path(name: str) -> PathChange:
        return _path(name, baseline, current, effect(name), confidence, priors.get(name))

    ratio = path(PATH_RATIO)
    target = reference = None
    if same_machine:
        target = path(PATH_TARGET_TIME)
        reference = path(PATH_REFERENCE_TIME)
    by_process = all(p is not None and p.estimate.between_sd is not None
                     for p in (target, reference))
    verdict, decided_by = combine_paths(ratio.verdict, target and target.verdict,
                                        reference and reference.verdict,
                                        times_by_process=by_process)
    reason = "; ".join(_describe(p, ratio.min_effect) for p in (ratio, target, reference)
                       if p is not None)
    if not same_machine:
        reason += "; absolute times not compared (different machine)"
    return Decision(verdict=verdict, decided_by=decided_by, reason=reason, ratio=ratio,
                    target_time=target, reference_time=reference,
                    min_effect=effect(PATH_RATIO))


# --------------------------------------------------------------------------- two stages

def needs_remeasure(verdict: GateVerdict) -> bool:
    """Stage 1 -> stage 2: every measured case that did not pass is measured once more
    (REGRESSION and INCONCLUSIVE; the gate also re-runs a BROKEN instance once). Fixed and
    two-stage by design, not retry-until-green: see StagedDecision.verdict."""
    return verdict in (GateVerdict.REGRESSION, GateVerdict.INCONCLUSIVE, GateVerdict.BROKEN)


@dataclass(frozen=True)
class StagedDecision:
    """Stage 1 and, when it did not pass, stage 2 (a fresh measurement in a fresh process,
    compared with the same baseline on its own - never pooled with stage 1, so the stages
    are independent)."""

    first: Decision
    second: Decision | None = None

    @property
    def remeasured(self) -> bool:
        return self.second is not None

    @property
    def last(self) -> Decision:
        return self.second if self.second is not None else self.first

    @property
    def verdict(self) -> GateVerdict:
        """Stage 1 PASS: PASS. Otherwise stage 2's verdict, except that a REGRESSION counts
        only when *both* stages show it; one seen in a single stage is INCONCLUSIVE.

        Why both: the stages are independent measurements, so a false alarm must happen
        twice (probability ~p^2), while a real slowdown, present in both, is caught about
        as often as by one stage (power^2, ~0.97 -> ~0.94 at worst on the simulated
        machine, more with the gate's default rounds). A stage-1 regression that stage 2
        measures as unchanged is PASS: the second, independent measurement excludes a
        change of min_effect, and the report lists the case as re-measured."""
        if self.second is None:
            return self.first.verdict
        if (self.second.verdict is GateVerdict.REGRESSION
                and self.first.verdict is not GateVerdict.REGRESSION):
            return GateVerdict.INCONCLUSIVE
        return self.second.verdict

    @property
    def decided_by(self) -> str:
        return self.last.decided_by

    @property
    def reason(self) -> str:
        if self.second is None:
            return self.first.reason
        return (f"stage 1 {self.first.verdict.value} ({self.first.reason}); "
                f"re-measured, stage 2 {self.second.verdict.value} ({self.second.reason})")


def staged(first: Decision, second: Decision | None) -> StagedDecision:
    """Combine the stages, refusing a second stage the rule did not ask for (a pass must not
    be re-rolled into a failure, nor a failure re-rolled more than once)."""
    if second is not None and not needs_remeasure(first.verdict):
        raise ValueError(f"stage 1 was {first.verdict.value}: the rule takes no second stage")
    return StagedDecision(first, second)

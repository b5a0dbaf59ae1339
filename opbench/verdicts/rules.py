"""Verdicts: turn an estimate and its interval into a decision, and decisions into exit codes.

The rule everywhere: a claim needs evidence. An operator is SLOW only when the whole
confidence interval of its ratio is below the threshold, and a run REGRESSED only when the
whole interval of its change is below 1 *and* the change is large enough to matter. When the
interval is too wide to decide, the answer is INCONCLUSIVE - never a silent pass or fail.
"""
from __future__ import annotations

from enum import Enum
from typing import Iterable

from opbench.config import DEFAULT_THRESHOLD
from opbench.verdicts.stats import ChangeEstimate, RatioEstimate

__all__ = ["DEFAULT_MIN_EFFECT", "EXIT_INCONCLUSIVE", "EXIT_OK", "EXIT_SLOW", "EXIT_USAGE",
           "ChangeVerdict", "Verdict", "change_verdict", "exit_code", "ratio_verdict", "worst"]


# A change of the ratio between two runs smaller than 10% is not reported as a regression
# even when it is statistically clear: rounds of ~15 samples on a shared machine resolve
# effects of a few percent, and gating CI on those would fail builds for noise in the
# machine's state between runs (which per-round pairing cannot cancel) rather than for code.
DEFAULT_MIN_EFFECT = 0.10

EXIT_OK = 0            # every verdict PASS
EXIT_SLOW = 1          # at least one SLOW or MISMATCH: a real finding
EXIT_USAGE = 2         # reserved for the CLI's usage errors (click's convention)
EXIT_INCONCLUSIVE = 3  # no finding, but some ERROR or INCONCLUSIVE: the run could not tell


class Verdict(str, Enum):
    """Outcome for one benchmarked operator instance."""

    PASS = "PASS"                  # ratio interval entirely at or above the threshold
    SLOW = "SLOW"                  # ratio interval entirely below the threshold
    INCONCLUSIVE = "INCONCLUSIVE"  # interval straddles the threshold, or too few rounds
    MISMATCH = "MISMATCH"          # outputs disagree: a fast wrong answer is not a win
    ERROR = "ERROR"                # the case could not be run at all

    @property
    def severity(self) -> int:
        """Rank for worst(): higher is worse."""
        return _SEVERITY[self]

    def __str__(self) -> str:
        return self.value


# Worst-of order. Definite findings outrank "could not tell", and a wrong answer outranks a
# slow one. ERROR is on top because a case that crashed hides everything else about it (its
# speed and its correctness are both unknown) and is what a reader must look at first.
# Exit codes do not follow this order blindly: see exit_code().
_SEVERITY = {
    Verdict.PASS: 0,
    Verdict.INCONCLUSIVE: 1,
    Verdict.SLOW: 2,
    Verdict.MISMATCH: 3,
    Verdict.ERROR: 4,
}


def _check_threshold(threshold: float) -> None:
    if not threshold > 0:
        raise ValueError(f"threshold must be a positive ratio, got {threshold!r}")


def ratio_verdict(estimate: RatioEstimate, threshold: float = DEFAULT_THRESHOLD) -> Verdict:
    """PASS when ci_low >= threshold, SLOW when ci_high < threshold, else INCONCLUSIVE.

    The point estimate is deliberately not consulted: a ratio of 0.75 whose interval reaches
    0.9 is not evidence of slowness. A result with too few rounds for an interval is always
    INCONCLUSIVE, whatever its min..max range says."""
    _check_threshold(threshold)
    if estimate.too_few_rounds:
        return Verdict.INCONCLUSIVE
    if estimate.ci_high < threshold:
        return Verdict.SLOW
    if estimate.ci_low >= threshold:
        return Verdict.PASS
    return Verdict.INCONCLUSIVE


def worst(verdicts: Iterable[Verdict]) -> Verdict:
    """The most severe verdict (see _SEVERITY); PASS for an empty collection, since nothing
    in it failed (callers that must reject "nothing ran" check for emptiness themselves)."""
    return max(verdicts, key=lambda verdict: verdict.severity, default=Verdict.PASS)


def exit_code(verdicts: Iterable[Verdict]) -> int:
    """Process exit status for a run.

    EXIT_SLOW if any verdict is a finding (SLOW, MISMATCH), even when others errored: the
    finding is real regardless. Else EXIT_INCONCLUSIVE if any is ERROR or INCONCLUSIVE.
    Else EXIT_OK. An *expected* mismatch (declared in the case) is the caller's to map to
    PASS before calling this."""
    seen = set(verdicts)
    if seen & {Verdict.SLOW, Verdict.MISMATCH}:
        return EXIT_SLOW
    if seen & {Verdict.ERROR, Verdict.INCONCLUSIVE}:
        return EXIT_INCONCLUSIVE
    return EXIT_OK


class ChangeVerdict(str, Enum):
    """Outcome of comparing a run's ratio with a baseline run's."""

    UNCHANGED = "UNCHANGED"        # any change is confidently smaller than min_effect
    REGRESSION = "REGRESSION"      # ratio clearly fell, by at least min_effect
    IMPROVEMENT = "IMPROVEMENT"    # ratio clearly rose, by at least min_effect
    NOT_SLOWER = "NOT_SLOWER"      # a drop of min_effect is excluded; a rise is not (a gate
                                   # asks only about the drop, so this passes it)
    INCONCLUSIVE = "INCONCLUSIVE"  # a drop of min_effect can be neither shown nor excluded

    def __str__(self) -> str:
        return self.value


def change_verdict(estimate: ChangeEstimate,
                   min_effect: float = DEFAULT_MIN_EFFECT) -> ChangeVerdict:
    """Decide a change from its size AND its evidence (the asv / Criterion idea).

    With lower = 1 - min_effect and upper = 1 / lower (the same size on log scale, so a 10%
    drop followed by the rise that undoes it are judged alike):

    REGRESSION   ci_high < 1 (the ratio fell: evidence) and change <= lower (by enough: size)
    IMPROVEMENT  ci_low > 1 and change >= upper
    UNCHANGED    the whole interval inside [lower, upper]: a change of min_effect or more is
                 excluded, whether or not a smaller one is detectable
    NOT_SLOWER   ci_low >= lower but the interval reaches past upper: a drop of min_effect
                 is excluded (at 97.5% one-sided for a 95% interval), a rise is not claimed.
                 A regression gate needs no more than this; without it every noisy case
                 that merely *might* have got faster would block a merge as INCONCLUSIVE.
    INCONCLUSIVE everything else: the interval reaches below lower without the evidence and
                 size for a claim - a noisy run, or a clear but borderline-size drop. This
                 is what stops a wide interval from passing silently.

    too_few_rounds is always INCONCLUSIVE.
    """
    if not 0.0 < min_effect < 1.0:
        raise ValueError(f"min_effect must be in (0, 1), got {min_effect!r}")
    if estimate.too_few_rounds:
        return ChangeVerdict.INCONCLUSIVE
    lower = 1.0 - min_effect
    upper = 1.0 / lower
    if estimate.ci_high < 1.0 and estimate.change <= lower:
        return ChangeVerdict.REGRESSION
    if estimate.ci_low > 1.0 and estimate.change >= upper:
        return ChangeVerdict.IMPROVEMENT
    if lower <= estimate.ci_low and estimate.ci_high <= upper:
        return ChangeVerdict.UNCHANGED
    if lower <= estimate.ci_low:
        return ChangeVerdict.NOT_SLOWER
    return ChangeVerdict.INCONCLUSIVE

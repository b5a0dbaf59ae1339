"""Change verdicts for the CI gate: a regression needs size AND evidence.

First the rule on hand-built estimates, then its error rates on simulated pairs of runs
(baseline and current, each ~15 interleaved rounds with drift and bursts)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from timing_simulation import NOISY, SHARED_MACHINE, simulate_ratio_runs

from opbench.verdicts.rules import DEFAULT_MIN_EFFECT, ChangeVerdict, change_verdict
from opbench.verdicts.stats import METHOD_HODGES_LEHMANN, ChangeEstimate, change_estimate

SIMULATED_RUNS = 1000
ROUNDS = 15
BASELINE_RATIO = 0.9
# How often a 95% interval may miss the truth on one given side - (1 - 0.95) / 2 - plus three
# binomial standard deviations of simulation slack over SIMULATED_RUNS runs.
HALF_ALPHA_WITH_SLACK = 0.025 + 3 * math.sqrt(0.025 * 0.975 / SIMULATED_RUNS)


def estimate(change: float, ci_low: float, ci_high: float, *,
             too_few_rounds: bool = False) -> ChangeEstimate:
    return ChangeEstimate(change=change, ci_low=ci_low, ci_high=ci_high, n_baseline=15,
                          n_current=15, confidence=0.95, method=METHOD_HODGES_LEHMANN,
                          coverage=0.95, too_few_rounds=too_few_rounds)


# --------------------------------------------------------------------------- the rule

@pytest.mark.parametrize("change, ci_low, ci_high, expected", [
    # Evidence (interval below 1) and size (<= 0.9): a regression.
    (0.80, 0.70, 0.90, ChangeVerdict.REGRESSION),
    (0.90, 0.85, 0.99, ChangeVerdict.REGRESSION),
    # Size without evidence: the interval reaches 1. Noisy - never a silent pass.
    (0.80, 0.60, 1.05, ChangeVerdict.INCONCLUSIVE),
    # Evidence of a drop, estimated below min_effect, but a >= 10% drop not excluded.
    (0.93, 0.85, 0.98, ChangeVerdict.INCONCLUSIVE),
    # A clear but small drop: every value in the interval is within 10%. Not a regression.
    (0.95, 0.92, 0.98, ChangeVerdict.UNCHANGED),
    (1.00, 0.95, 1.05, ChangeVerdict.UNCHANGED),
    (1.00, 0.90, 1 / 0.9, ChangeVerdict.UNCHANGED),       # bounds are inclusive
    (1.00, 0.85, 1.05, ChangeVerdict.INCONCLUSIVE),       # could be a 15% drop
    # A 10% drop excluded, a 10% rise not: enough for a gate, not a claim of a rise.
    (1.00, 0.95, 1.20, ChangeVerdict.NOT_SLOWER),         # could be a 20% rise
    # Improvements mirror regressions on log scale: the bound is 1/0.9, not 1.1.
    (1.25, 1.10, 1.40, ChangeVerdict.IMPROVEMENT),
    (1 / 0.9, 1.01, 1.20, ChangeVerdict.IMPROVEMENT),
    (1.10, 1.01, 1.20, ChangeVerdict.NOT_SLOWER),         # a rise, but not of 1/0.9 surely
    (1.25, 0.95, 1.60, ChangeVerdict.NOT_SLOWER),
])
def test_change_verdict_needs_size_and_evidence(change, ci_low, ci_high, expected):
    assert change_verdict(estimate(change, ci_low, ci_high), 0.10) is expected


def test_too_few_rounds_is_inconclusive():
    decisive = estimate(0.5, 0.4, 0.6, too_few_rounds=True)
    assert change_verdict(decisive) is ChangeVerdict.INCONCLUSIVE


def test_min_effect_sets_the_size_bar():
    drop = estimate(0.85, 0.80, 0.90)
    assert change_verdict(drop, 0.10) is ChangeVerdict.REGRESSION
    assert change_verdict(drop, 0.20) is ChangeVerdict.UNCHANGED    # all within 20%
    assert change_verdict(drop, 0.16) is ChangeVerdict.INCONCLUSIVE  # 0.85 > 0.84
    assert DEFAULT_MIN_EFFECT == 0.10
    assert change_verdict(drop) is ChangeVerdict.REGRESSION


@pytest.mark.parametrize("min_effect", [0.0, 1.0, -0.1, 10.0])
def test_min_effect_must_be_a_fraction(min_effect):
    with pytest.raises(ValueError, match="min_effect"):
        change_verdict(estimate(1.0, 0.9, 1.1), min_effect)


def test_change_verdicts_are_upper_case_strings():
    for verdict in ChangeVerdict:
        assert verdict.value == verdict.name == str(verdict)
        assert ChangeVerdict(verdict.value) is verdict


# --------------------------------------------------------------------------- error rates

def change_verdict_rates(seed: int, true_change: float, model, runs: int = SIMULATED_RUNS
                         ) -> dict[ChangeVerdict, float]:
    """Rates of each verdict over `runs` simulated (baseline, current) pairs of runs; the
    current run's true ratio is the baseline's times true_change. Baseline and current are
    separate simulations: different drift, noise and bursts, as two CI runs would be."""
    rng = np.random.default_rng(seed)
    baseline = simulate_ratio_runs(rng, runs, ROUNDS, BASELINE_RATIO, model)
    current = simulate_ratio_runs(rng, runs, ROUNDS, BASELINE_RATIO * true_change, model)
    verdicts = [change_verdict(change_estimate(b, c)) for b, c in zip(baseline, current)]
    return {v: verdicts.count(v) / len(verdicts) for v in ChangeVerdict}


def test_identical_runs_rarely_raise_a_false_alarm():
    rates = change_verdict_rates(50, 1.0, SHARED_MACHINE)
    assert rates[ChangeVerdict.REGRESSION] <= 0.01
    assert rates[ChangeVerdict.IMPROVEMENT] <= 0.01
    # Most identical pairs are confidently unchanged; the rest honestly inconclusive.
    assert rates[ChangeVerdict.UNCHANGED] >= 0.5


def test_a_20_percent_slowdown_is_caught():
    rates = change_verdict_rates(51, 0.8, SHARED_MACHINE)
    assert rates[ChangeVerdict.REGRESSION] >= 0.95
    assert rates[ChangeVerdict.UNCHANGED] == 0.0


def test_a_20_percent_speedup_is_caught():
    rates = change_verdict_rates(52, 1 / 0.8, SHARED_MACHINE)
    assert rates[ChangeVerdict.IMPROVEMENT] >= 0.95
    assert rates[ChangeVerdict.REGRESSION] == 0.0


def test_a_change_below_min_effect_is_rarely_a_regression():
    # A real 3% drop is below min_effect. It is flagged only when noise makes the estimate
    # look like a drop of 10% or more - the size test uses the point estimate, as in asv and
    # Criterion - which on this machine model happens in a couple of percent of runs.
    rates = change_verdict_rates(53, 0.97, SHARED_MACHINE)
    assert rates[ChangeVerdict.REGRESSION] <= 0.05
    assert (rates[ChangeVerdict.UNCHANGED] + rates[ChangeVerdict.NOT_SLOWER]
            + rates[ChangeVerdict.INCONCLUSIVE]) >= 0.95


def test_a_change_of_exactly_min_effect_is_a_coin_toss():
    # At the size bar itself, the estimate lands on either side of it about equally often:
    # the bar is a point on the scale, not a safety margin.
    rates = change_verdict_rates(56, 1 - DEFAULT_MIN_EFFECT, SHARED_MACHINE)
    assert 0.35 <= rates[ChangeVerdict.REGRESSION] <= 0.65
    # UNCHANGED and NOT_SLOWER need the whole interval above 0.9, i.e. an interval missing
    # the truth on one side: together at most (1 - coverage) / 2 of the time. This bounds
    # how often the gate passes a real drop of exactly min_effect.
    assert (rates[ChangeVerdict.UNCHANGED] + rates[ChangeVerdict.NOT_SLOWER]
            <= HALF_ALPHA_WITH_SLACK)


def test_noisy_runs_are_inconclusive_never_a_silent_pass():
    # With per-round noise this large, 15 rounds cannot resolve 10% either way.
    slowed = change_verdict_rates(54, 0.8, NOISY)
    assert slowed[ChangeVerdict.UNCHANGED] <= 0.01
    assert slowed[ChangeVerdict.REGRESSION] + slowed[ChangeVerdict.INCONCLUSIVE] >= 0.99
    same = change_verdict_rates(55, 1.0, NOISY)
    # Nothing passes as UNCHANGED; the runs that pass at all are NOT_SLOWER, whose interval
    # itself excludes a 10% drop (its low end is above 0.9) - not a silent pass.
    assert same[ChangeVerdict.UNCHANGED] <= 0.05
    assert same[ChangeVerdict.INCONCLUSIVE] + same[ChangeVerdict.NOT_SLOWER] >= 0.95
    # The false-alarm rate stays within what the interval itself bounds: a REGRESSION needs
    # the whole interval below 1, which for an unchanged ratio happens with probability at
    # most (1 - coverage) / 2 <= 2.5%.
    assert same[ChangeVerdict.REGRESSION] <= HALF_ALPHA_WITH_SLACK

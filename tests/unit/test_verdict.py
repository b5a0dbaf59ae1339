"""Ratio verdicts, worst-of and exit codes: the rules on hand-built estimates, then the error
rates on simulated measurements."""
from __future__ import annotations

import numpy as np
import pytest
from timing_simulation import NOISY, QUIET, SHARED_MACHINE, simulate_runs

from opbench.config import DEFAULT_THRESHOLD
from opbench.verdicts.rules import (
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    EXIT_SLOW,
    EXIT_USAGE,
    Verdict,
    exit_code,
    ratio_verdict,
    worst,
)
from opbench.verdicts.stats import METHOD_SIGN_TEST, RatioEstimate, ratio_estimate

SIMULATED_RUNS = 1000
ROUNDS = 15


def estimate(ratio: float, ci_low: float, ci_high: float, *,
             too_few_rounds: bool = False) -> RatioEstimate:
    return RatioEstimate(ratio=ratio, ci_low=ci_low, ci_high=ci_high, n_rounds=15,
                         confidence=0.95, method=METHOD_SIGN_TEST, coverage=0.96,
                         too_few_rounds=too_few_rounds)


# --------------------------------------------------------------------------- the rule

@pytest.mark.parametrize("ci_low, ci_high, expected", [
    (0.40, 0.70, Verdict.SLOW),            # whole interval below 0.8
    (0.70, 0.7999, Verdict.SLOW),
    (0.70, 0.80, Verdict.INCONCLUSIVE),    # touching the threshold is not "below" it
    (0.60, 1.10, Verdict.INCONCLUSIVE),    # straddles: the data cannot say
    (0.80, 0.95, Verdict.PASS),            # at the threshold counts as on par
    (0.90, 1.50, Verdict.PASS),
])
def test_ratio_verdict_decides_on_the_whole_interval(ci_low, ci_high, expected):
    assert ratio_verdict(estimate((ci_low + ci_high) / 2, ci_low, ci_high), 0.8) is expected


def test_point_estimate_alone_never_decides():
    # A median of 0.5 whose interval reaches 0.9 is not evidence of slowness.
    assert ratio_verdict(estimate(0.5, 0.45, 0.9), 0.8) is Verdict.INCONCLUSIVE


def test_too_few_rounds_is_inconclusive_even_when_the_range_looks_decisive():
    assert ratio_verdict(estimate(0.3, 0.2, 0.4, too_few_rounds=True)) is Verdict.INCONCLUSIVE
    assert ratio_verdict(estimate(1.0, 0.9, 1.1, too_few_rounds=True)) is Verdict.INCONCLUSIVE


def test_default_threshold_is_used_when_none_is_given():
    assert DEFAULT_THRESHOLD == 0.8
    assert ratio_verdict(estimate(0.79, 0.78, 0.795)) is Verdict.SLOW
    assert ratio_verdict(estimate(0.81, 0.805, 0.82)) is Verdict.PASS


@pytest.mark.parametrize("threshold", [0.0, -0.8])
def test_threshold_must_be_positive(threshold):
    with pytest.raises(ValueError, match="threshold"):
        ratio_verdict(estimate(1.0, 0.9, 1.1), threshold)


def test_verdicts_are_upper_case_strings_that_round_trip():
    for verdict in Verdict:
        assert verdict.value == verdict.name
        assert str(verdict) == verdict.name
        assert Verdict(verdict.value) is verdict
    assert Verdict.SLOW == "SLOW"   # a str Enum: JSON-friendly as is


# --------------------------------------------------------------------------- worst and exit codes

def test_worst_follows_the_severity_order():
    order = [Verdict.PASS, Verdict.INCONCLUSIVE, Verdict.SLOW, Verdict.MISMATCH, Verdict.ERROR]
    assert [v.severity for v in order] == sorted(v.severity for v in order)
    for i, verdict in enumerate(order):
        assert worst(order[: i + 1]) is verdict
        assert worst(reversed(order[: i + 1])) is verdict
    assert worst([]) is Verdict.PASS
    assert worst(iter([Verdict.SLOW, Verdict.PASS])) is Verdict.SLOW


@pytest.mark.parametrize("verdicts, expected", [
    ([], EXIT_OK),
    ([Verdict.PASS, Verdict.PASS], EXIT_OK),
    ([Verdict.PASS, Verdict.SLOW], EXIT_SLOW),
    ([Verdict.MISMATCH], EXIT_SLOW),
    ([Verdict.PASS, Verdict.INCONCLUSIVE], EXIT_INCONCLUSIVE),
    ([Verdict.ERROR, Verdict.PASS], EXIT_INCONCLUSIVE),
    # A real finding wins over "could not tell", whatever worst() ranks higher.
    ([Verdict.ERROR, Verdict.SLOW], EXIT_SLOW),
    ([Verdict.INCONCLUSIVE, Verdict.MISMATCH, Verdict.ERROR], EXIT_SLOW),
])
def test_exit_code(verdicts, expected):
    assert exit_code(verdicts) == expected
    assert exit_code(iter(verdicts)) == expected


def test_exit_codes_are_distinct_and_usage_is_reserved():
    codes = [EXIT_OK, EXIT_SLOW, EXIT_USAGE, EXIT_INCONCLUSIVE]
    assert codes == [0, 1, 2, 3]
    assert not any(exit_code(list(combo)) == EXIT_USAGE
                   for combo in [[v] for v in Verdict] + [list(Verdict)])


# --------------------------------------------------------------------------- error rates

def verdict_rates(seed: int, true_ratio: float, model, threshold: float = DEFAULT_THRESHOLD
                  ) -> dict[Verdict, float]:
    rng = np.random.default_rng(seed)
    ref_s, target_s = simulate_runs(rng, SIMULATED_RUNS, ROUNDS, true_ratio, model)
    verdicts = [ratio_verdict(ratio_estimate(r, t), threshold) for r, t in zip(ref_s, target_s)]
    return {v: verdicts.count(v) / len(verdicts) for v in Verdict}


def test_a_target_twice_as_slow_is_slow():
    assert verdict_rates(40, 0.5, QUIET)[Verdict.SLOW] >= 0.99
    assert verdict_rates(41, 0.5, SHARED_MACHINE)[Verdict.SLOW] >= 0.99


def test_a_target_on_par_passes():
    assert verdict_rates(42, 1.0, QUIET)[Verdict.PASS] >= 0.99
    assert verdict_rates(43, 1.0, SHARED_MACHINE)[Verdict.PASS] >= 0.99


@pytest.mark.parametrize("true_ratio", [DEFAULT_THRESHOLD, 0.82, 0.9])
def test_noise_near_the_threshold_is_inconclusive_not_slow(true_ratio):
    rates = verdict_rates(44, true_ratio, NOISY)
    # SLOW needs the whole interval below the threshold; with the truth at or above it that
    # happens at most (1 - coverage) / 2 ~ 1.8% of the time. Allow up to alpha = 5%.
    assert rates[Verdict.SLOW] <= 0.05
    if true_ratio == DEFAULT_THRESHOLD:
        assert rates[Verdict.INCONCLUSIVE] >= 0.9
        assert rates[Verdict.PASS] <= 0.05


def test_noise_just_below_the_threshold_is_inconclusive_not_pass():
    rates = verdict_rates(45, 0.75, NOISY)
    assert rates[Verdict.PASS] <= 0.05
    assert rates[Verdict.INCONCLUSIVE] >= 0.5

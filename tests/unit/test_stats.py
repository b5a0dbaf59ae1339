"""Statistics core: summaries, the paired ratio interval, the two-run change interval.

Intervals are checked two ways: their ranks against independent references (scipy's
binomial and exact Mann-Whitney distributions, brute-force enumeration), and their coverage
by simulation of interleaved timings with drift and bursts (see timing_simulation.py).
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as scipy_stats
from timing_simulation import NOISY, QUIET, SHARED_MACHINE, simulate_ratio_runs, simulate_runs

from opbench.verdicts.stats import (
    EXACT_MANN_WHITNEY_MAX_PAIRS,
    METHOD_HODGES_LEHMANN,
    METHOD_SIGN_TEST,
    _hodges_lehmann_rank_exact,
    _hodges_lehmann_rank_normal,
    _mann_whitney_null_cdf,
    _sign_test_rank,
    change_estimate,
    paired_ratios,
    ratio_estimate,
    summarize,
)

COVERAGE_RUNS = 2000


def binomial_band(p: float, runs: int, sds: float = 4.0) -> tuple[float, float]:
    """Where an observed rate lands when the true rate is p: p +- `sds` binomial sds."""
    sd = math.sqrt(p * (1 - p) / runs)
    return p - sds * sd, p + sds * sd


# --------------------------------------------------------------------------- summarize

def test_summarize_gives_robust_spread_that_one_burst_cannot_inflate():
    summary = summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert summary.n == 5
    assert summary.median_s == 3.0
    assert summary.mean_s == pytest.approx(22.0)
    assert (summary.min_s, summary.max_s) == (1.0, 100.0)
    assert summary.iqr_s == pytest.approx(2.0)    # 4 - 2
    assert summary.mad_s == pytest.approx(1.0)    # median of |x - 3| = [2, 1, 0, 1, 97]
    assert summary.cv == pytest.approx(1.4826 / 3.0)


def test_summarize_single_and_identical_samples_have_zero_spread():
    for samples in ([0.5], [0.25] * 7):
        summary = summarize(samples)
        assert summary.median_s == summary.mean_s == summary.min_s == summary.max_s
        assert summary.iqr_s == summary.mad_s == summary.cv == 0.0


@pytest.mark.parametrize("bad", [[], [1.0, 0.0], [1.0, -2.0], [1.0, math.nan],
                                 [1.0, math.inf], [[1.0, 2.0]]])
def test_summarize_rejects_impossible_times(bad):
    with pytest.raises(ValueError):
        summarize(bad)


def test_summary_is_immutable():
    summary = summarize([1.0, 2.0])
    with pytest.raises(AttributeError):
        summary.median_s = 0.0  # type: ignore[misc]


# --------------------------------------------------------------------------- sign-test ranks

@pytest.mark.parametrize("confidence", [0.90, 0.95, 0.99])
def test_sign_test_rank_is_the_tightest_interval_reaching_confidence(confidence):
    for n in range(1, 80):
        k, coverage = _sign_test_rank(n, confidence)
        if k == 0:
            # Even min..max falls short: its coverage is 1 - 2 P(B <= 0).
            assert 1 - 2 * scipy_stats.binom.cdf(0, n, 0.5) < confidence
            continue
        assert coverage == pytest.approx(1 - 2 * scipy_stats.binom.cdf(k - 1, n, 0.5))
        assert coverage >= confidence
        # One rank tighter would fall below the nominal level.
        tighter = 1 - 2 * scipy_stats.binom.cdf(k, n, 0.5)
        assert tighter < confidence or k + 1 > (n + 1) // 2


@pytest.mark.parametrize("n", [500, 2000])
def test_sign_test_rank_stays_exact_for_long_runs(n):
    # 2**n is far beyond a float here: the tail sums must stay in integers.
    k, coverage = _sign_test_rank(n, 0.95)
    assert scipy_stats.binom.cdf(k - 1, n, 0.5) <= 0.025 < scipy_stats.binom.cdf(k, n, 0.5)
    assert coverage == pytest.approx(1 - 2 * scipy_stats.binom.cdf(k - 1, n, 0.5))


def test_six_rounds_is_the_minimum_for_95_percent():
    assert _sign_test_rank(5, 0.95)[0] == 0
    assert _sign_test_rank(6, 0.95) == (1, pytest.approx(1 - 2 / 64))


# --------------------------------------------------------------------------- ratio_estimate

def test_ratio_estimate_uses_median_and_order_statistics_of_per_round_ratios():
    rng = np.random.default_rng(0)
    ratios = rng.permutation(np.arange(1, 16) / 10.0)    # 0.1 .. 1.5, shuffled
    target_s = rng.uniform(1e-4, 1e-2, size=15)          # wildly different per round
    estimate = ratio_estimate(ratios * target_s, target_s)
    assert estimate.ratio == pytest.approx(0.8)            # the 8th of 15
    # n = 15 at 95%: the 4th smallest and 4th largest (coverage 1 - 2*P(B <= 3)).
    assert estimate.ci_low == pytest.approx(0.4)
    assert estimate.ci_high == pytest.approx(1.2)
    assert estimate.n_rounds == 15
    assert estimate.confidence == 0.95
    assert estimate.coverage == pytest.approx(1 - 2 * 576 / 2**15)
    assert estimate.method == METHOD_SIGN_TEST
    assert not estimate.too_few_rounds


def test_drift_shared_within_a_round_cancels_exactly():
    # Whatever slows the machine during a round slows both of its samples: the per-round
    # ratio, and so the whole estimate, must not move.
    rng = np.random.default_rng(1)
    ref_s, target_s = simulate_runs(rng, 1, 15, 0.7)
    drift = np.exp(np.cumsum(rng.normal(0.0, 0.3, size=15)))   # a severe random walk
    drifted = ratio_estimate(ref_s[0] * drift, target_s[0] * drift)
    steady = ratio_estimate(ref_s[0], target_s[0])
    for field in ("ratio", "ci_low", "ci_high"):
        assert getattr(drifted, field) == pytest.approx(getattr(steady, field), rel=1e-12)


def test_a_burst_moves_the_estimate_by_at_most_one_rank():
    rng = np.random.default_rng(2)
    ref_s, target_s = simulate_runs(rng, 1, 15, 0.7, QUIET)
    ref_s, target_s = ref_s[0], target_s[0]
    clean = ratio_estimate(ref_s, target_s)
    burst_target_s = target_s.copy()
    burst_target_s[3] *= 100.0    # one round ruined by a 100x preemption on one side
    burst = ratio_estimate(ref_s, burst_target_s)
    sorted_ratios = np.sort(ref_s / target_s)
    # The median moves to a neighbouring order statistic at most, nowhere near 1/100.
    assert sorted_ratios[6] <= burst.ratio <= clean.ratio
    assert burst.ratio > 0.9 * clean.ratio


def test_swapping_sides_inverts_ratio_and_interval():
    rng = np.random.default_rng(3)
    ref_s, target_s = simulate_runs(rng, 1, 15, 0.6)
    forward = ratio_estimate(ref_s[0], target_s[0])
    backward = ratio_estimate(target_s[0], ref_s[0])
    assert backward.ratio == pytest.approx(1 / forward.ratio)
    assert backward.ci_low == pytest.approx(1 / forward.ci_high)
    assert backward.ci_high == pytest.approx(1 / forward.ci_low)


def test_single_round_is_flagged_and_its_interval_is_the_point():
    estimate = ratio_estimate([2e-3], [4e-3])
    assert estimate.ratio == estimate.ci_low == estimate.ci_high == pytest.approx(0.5)
    assert estimate.too_few_rounds
    assert estimate.n_rounds == 1


def test_too_few_rounds_gives_the_widest_interval():
    target_s = np.full(5, 1e-3)
    ratios = np.array([0.9, 0.5, 0.7, 1.1, 0.8])
    estimate = ratio_estimate(ratios * target_s, target_s)
    assert estimate.too_few_rounds
    assert (estimate.ci_low, estimate.ci_high) == (pytest.approx(0.5), pytest.approx(1.1))
    assert estimate.ratio == pytest.approx(0.8)
    assert estimate.coverage == pytest.approx(1 - 2 / 32)   # what min..max really covers


def test_identical_samples_give_a_zero_width_interval():
    estimate = ratio_estimate([1e-3] * 15, [1e-3] * 15)
    assert estimate.ratio == estimate.ci_low == estimate.ci_high == 1.0
    assert not estimate.too_few_rounds


def test_paired_ratios_rejects_unequal_lengths():
    with pytest.raises(ValueError, match="equal lengths"):
        paired_ratios([1.0, 2.0, 3.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="equal lengths"):
        ratio_estimate([1.0] * 10, [1.0] * 9)


@pytest.mark.parametrize("ref_s, target_s", [
    ([1.0, 0.0, 1.0], [1.0, 1.0, 1.0]),
    ([1.0, 1.0, 1.0], [1.0, -1.0, 1.0]),
    ([], []),
    ([1.0, math.nan], [1.0, 1.0]),
])
def test_ratio_estimate_rejects_impossible_times(ref_s, target_s):
    with pytest.raises(ValueError):
        ratio_estimate(ref_s, target_s)


@pytest.mark.parametrize("confidence", [0.0, 1.0, 95.0, -0.5])
def test_confidence_must_be_a_probability(confidence):
    with pytest.raises(ValueError, match="confidence"):
        ratio_estimate([1.0] * 10, [1.0] * 10, confidence=confidence)
    with pytest.raises(ValueError, match="confidence"):
        change_estimate([1.0] * 10, [1.0] * 10, confidence=confidence)


@pytest.mark.parametrize("model, n_rounds, seed", [
    (SHARED_MACHINE, 15, 10),
    (NOISY, 15, 11),
    (SHARED_MACHINE, 6, 12),
    (QUIET, 40, 13),
])
def test_ratio_interval_covers_the_true_ratio_as_often_as_it_claims(model, n_rounds, seed):
    rng = np.random.default_rng(seed)
    true_ratio = 0.7
    ref_s, target_s = simulate_runs(rng, COVERAGE_RUNS, n_rounds, true_ratio, model)
    estimates = [ratio_estimate(r, t) for r, t in zip(ref_s, target_s)]
    covered = np.mean([e.ci_low <= true_ratio <= e.ci_high for e in estimates])
    exact = estimates[0].coverage     # what the order statistics promise for this n
    low, high = binomial_band(exact, COVERAGE_RUNS)
    assert low <= covered <= high
    assert 0.93 <= covered <= 0.99
    # And the point estimate is centred: as often above the truth as below it.
    above = np.mean([e.ratio > true_ratio for e in estimates])
    assert 0.45 <= above <= 0.55


# --------------------------------------------------------------------------- Mann-Whitney ranks

def brute_force_u_cdf(n: int, m: int) -> np.ndarray:
    """P(U <= u) by listing every equally likely placement of the n x's among n+m ranks."""
    counts = np.zeros(n * m + 1)
    for x_ranks in itertools.combinations(range(n + m), n):
        # U = #(x, y) with y > x = sum over x's of the y's ranked above it.
        taken = set(x_ranks)
        u = sum(sum(1 for r in range(x + 1, n + m) if r not in taken) for x in x_ranks)
        counts[u] += 1
    return np.cumsum(counts) / counts.sum()


@pytest.mark.parametrize("n, m", [(1, 1), (1, 4), (2, 5), (3, 3), (4, 4), (5, 3), (6, 6)])
def test_mann_whitney_null_distribution_matches_enumeration(n, m):
    assert _mann_whitney_null_cdf(n, m) == pytest.approx(brute_force_u_cdf(n, m), abs=1e-12)


@pytest.mark.parametrize("n, m", [(4, 4), (8, 12), (15, 15), (30, 15)])
def test_hodges_lehmann_rank_matches_scipy_exact_test(n, m):
    k, coverage = _hodges_lehmann_rank_exact(n, m, 0.95)
    assert coverage >= 0.95

    def lower_tail(u: int) -> float:
        # Data where exactly u (x, y) pairs have y > x: y_j sits above c_j of the x's.
        c = np.minimum(n, np.full(m, u // m) + (np.arange(m) < u % m))
        x = np.arange(n, dtype=float)
        y = c - 0.5
        result = scipy_stats.mannwhitneyu(y, x, alternative="less", method="exact")
        return result.pvalue   # P(U <= u) under the null

    assert lower_tail(k - 1) <= 0.025 < lower_tail(k)
    assert coverage == pytest.approx(1 - 2 * lower_tail(k - 1))


def test_normal_approximation_agrees_with_exact_ranks_where_they_overlap():
    for n, m in [(40, 40), (50, 20), (25, 60)]:
        exact_k, exact_coverage = _hodges_lehmann_rank_exact(n, m, 0.95)
        normal_k, normal_coverage = _hodges_lehmann_rank_normal(n, m, 0.95)
        assert abs(exact_k - normal_k) <= 1
        assert normal_coverage == pytest.approx(exact_coverage, abs=0.003)


# --------------------------------------------------------------------------- change_estimate

def test_change_estimate_recovers_an_exact_multiplicative_change():
    rng = np.random.default_rng(20)
    baseline = rng.lognormal(np.log(0.9), 0.1, size=15)
    estimate = change_estimate(baseline, 0.8 * baseline)
    # Pairwise differences are log 0.8 plus an antisymmetric set: the median is log 0.8.
    assert estimate.change == pytest.approx(0.8)
    assert estimate.ci_low < 0.8 < estimate.ci_high
    assert (estimate.n_baseline, estimate.n_current) == (15, 15)
    assert estimate.method == METHOD_HODGES_LEHMANN
    assert estimate.coverage >= 0.95
    assert not estimate.too_few_rounds


def test_change_estimate_interval_uses_the_mann_whitney_ranks():
    baseline = np.exp(np.arange(6) * 0.01)
    current = np.exp(0.5 + np.arange(5) * 0.03)
    differences = np.sort(np.log(current)[None, :] - np.log(baseline)[:, None], axis=None)
    k, _ = _hodges_lehmann_rank_exact(6, 5, 0.95)
    estimate = change_estimate(baseline, current)
    assert estimate.ci_low == pytest.approx(np.exp(differences[k - 1]))
    assert estimate.ci_high == pytest.approx(np.exp(differences[-k]))
    assert estimate.change == pytest.approx(np.exp(np.median(differences)))


def test_change_estimate_is_antisymmetric():
    rng = np.random.default_rng(21)
    a, b = rng.lognormal(0.0, 0.1, size=12), rng.lognormal(-0.1, 0.1, size=15)
    forward, backward = change_estimate(a, b), change_estimate(b, a)
    assert backward.change == pytest.approx(1 / forward.change)
    assert backward.ci_low == pytest.approx(1 / forward.ci_high)
    assert backward.ci_high == pytest.approx(1 / forward.ci_low)


def test_change_needs_four_rounds_per_run_for_95_percent():
    three = change_estimate([0.9, 1.0, 1.1], [0.8, 0.85, 0.9])
    assert three.too_few_rounds
    # The widest interval: every pairwise change.
    assert three.ci_low == pytest.approx(0.8 / 1.1)
    assert three.ci_high == pytest.approx(0.9 / 0.9)
    four = change_estimate([0.9, 1.0, 1.1, 1.05], [0.8, 0.85, 0.9, 0.82])
    assert not four.too_few_rounds


def test_change_of_single_rounds_and_identical_runs():
    single = change_estimate([0.8], [0.4])
    assert single.change == single.ci_low == single.ci_high == pytest.approx(0.5)
    assert single.too_few_rounds
    same = change_estimate([0.9] * 15, [0.9] * 15)
    assert same.change == same.ci_low == same.ci_high == pytest.approx(1.0)
    assert not same.too_few_rounds


@pytest.mark.parametrize("baseline, current", [
    ([1.0, 0.0, 1.0, 1.0], [1.0] * 4),
    ([1.0] * 4, [1.0, 1.0, -0.5, 1.0]),
    ([], [1.0]),
])
def test_change_estimate_rejects_impossible_ratios(baseline, current):
    with pytest.raises(ValueError):
        change_estimate(baseline, current)


@pytest.mark.parametrize("n_baseline, n_current, runs, seed", [
    (15, 15, COVERAGE_RUNS, 30),
    (8, 15, COVERAGE_RUNS, 31),
    # A long history as baseline: past EXACT_MANN_WHITNEY_MAX_PAIRS, the normal approximation.
    (200, 15, 400, 32),
])
def test_change_interval_covers_the_true_change(n_baseline, n_current, runs, seed):
    rng = np.random.default_rng(seed)
    true_change = 0.85
    baseline = simulate_ratio_runs(rng, runs, n_baseline, 0.9)
    current = simulate_ratio_runs(rng, runs, n_current, 0.9 * true_change)
    estimates = [change_estimate(b, c) for b, c in zip(baseline, current)]
    if n_baseline * n_current > EXACT_MANN_WHITNEY_MAX_PAIRS:
        assert "normal approximation" in estimates[0].method
    covered = np.mean([e.ci_low <= true_change <= e.ci_high for e in estimates])
    low, high = binomial_band(estimates[0].coverage, runs)
    assert low <= covered <= high
    above = np.mean([e.change > true_change for e in estimates])
    assert 0.4 <= above <= 0.6

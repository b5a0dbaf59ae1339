"""Pure statistics: robust summaries, the paired ratio with its interval, run-to-run change.

Every function here takes plain sequences of positive seconds (or positive ratios), returns a
frozen dataclass and never prints. No scipy: the intervals come from order statistics whose
ranks are computed exactly (binomial and Mann-Whitney null distributions) with numpy/stdlib.

Why order statistics and medians rather than means and t-intervals: timings on a shared
machine are not normal. They have a hard floor (the work itself) and a long right tail
(scheduler preemption, page faults, another process's burst). One burst drags a mean and
inflates a standard deviation for the whole run; it moves a median by at most one rank. And
an interval from order statistics is *distribution-free*: its coverage is exact (>= nominal)
for any continuous distribution, so it does not silently lie when the noise is skewed.

Ratio orientation: ratio = reference time / target time (torch / MindSpore). Below 1 the
target is slower; 0.5 means the target takes twice as long.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist
from typing import Any, Sequence

import numpy as np

__all__ = [
    "DEFAULT_CONFIDENCE",
    "MedianInterval",
    "median_interval",
    "METHOD_CHANGE_PROCESSES",
    "METHOD_HODGES_LEHMANN",
    "METHOD_SIGN_TEST",
    "METHOD_PROCESSES",
    "BetweenProcessPrior",
    "ChangeEstimate",
    "RatioEstimate",
    "between_process_excess",
    "Look",
    "look_estimate",
    "Summary",
    "change_estimate",
    "paired_ratios",
    "pooled_between_process_excess",
    "pooled_between_process_sd",
    "ratio_estimate",
    "run_spread_prior",
    "summarize",
    "student_t_quantile",
]

DEFAULT_CONFIDENCE = 0.95

# Scales a median absolute deviation to a standard deviation for normal data, so the robust
# coefficient of variation reads like the familiar std/mean on well-behaved samples.
MAD_TO_SD = 1.4826

# Above this many (baseline x current) pairs the exact Mann-Whitney null distribution (an
# O(n^2 m^2) recursion) is replaced by its normal approximation. By then both samples are
# large enough that the approximation moves the interval's rank by at most one, while the
# exact recursion would start to cost noticeable time (e.g. a 200-round history baseline).
EXACT_MANN_WHITNEY_MAX_PAIRS = 2500

# Slack when comparing a tail probability computed in floating point with alpha/2, so a
# rank whose tail is exactly alpha/2 in exact arithmetic is not lost to rounding.
_TAIL_TOLERANCE = 1e-12

METHOD_SIGN_TEST = "median of per-round log-ratios; exact sign-test (order-statistic) interval"
METHOD_PROCESSES = ("mean of per-process median log-ratios; t interval with the between-process "
                    "variance (shrunk towards the run's typical), widened to the rounds' "
                    "sign-test interval")
METHOD_LOOK = ("mean of per-process median log-ratios; t interval at the look's spent "
               "confidence with the between-process variance (shrunk towards the planning "
               "spread, which alone stands for it with one process), widened to the rounds' "
               "95% sign-test interval")
METHOD_CHANGE_PROCESSES = ("difference of the runs' mean per-process median log-ratios; t "
                           "interval with the pooled between-process variance (shrunk "
                           "towards the prior), widened to the rounds' Mann-Whitney interval")
METHOD_HODGES_LEHMANN = ("Hodges-Lehmann shift of log-ratios; "
                         "exact Mann-Whitney (order-statistic) interval")
_METHOD_HODGES_LEHMANN_NORMAL = ("Hodges-Lehmann shift of log-ratios; "
                                 "Mann-Whitney interval, normal approximation")


# --------------------------------------------------------------------------- validation

def _positive_samples(name: str, values: Sequence[float]) -> np.ndarray:
    """A 1-D float array of finite, strictly positive values, or ValueError.

    Times and ratios are positive by nature; a zero or negative one means a broken clock or
    a bug upstream, and must not be averaged into a verdict (it would also break the logs)."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence, got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains a non-finite value")
    if np.any(array <= 0):
        raise ValueError(f"{name} must be strictly positive, got min {array.min()!r}")
    return array


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")


# --------------------------------------------------------------------------- summary

@dataclass(frozen=True)
class Summary:
    """Robust description of one side's samples (seconds).

    iqr_s: 75th minus 25th percentile (linear interpolation).
    mad_s: median absolute deviation from the median, unscaled.
    cv: robust coefficient of variation, MAD_TO_SD * mad_s / median_s; reads like std/mean on
        normal data but one burst cannot inflate it.
    """

    n: int
    median_s: float
    mean_s: float
    min_s: float
    max_s: float
    iqr_s: float
    mad_s: float
    cv: float


def summarize(samples_s: Sequence[float]) -> Summary:
    """Summary of positive samples (seconds). ValueError on empty, non-finite or <= 0."""
    x = _positive_samples("samples_s", samples_s)
    median = float(np.median(x))
    q25, q75 = np.percentile(x, [25.0, 75.0])
    mad = float(np.median(np.abs(x - median)))
    return Summary(n=int(x.size), median_s=median, mean_s=float(np.mean(x)),
                   min_s=float(x.min()), max_s=float(x.max()), iqr_s=float(q75 - q25),
                   mad_s=mad, cv=MAD_TO_SD * mad / median)


# --------------------------------------------------------------------------- paired ratio

@dataclass(frozen=True)
class RatioEstimate:
    """Reference/target time ratio with a confidence interval.

    coverage: the interval's exact coverage probability (>= confidence unless too_few_rounds;
        order statistics only give discrete levels, so it is usually a bit above).
    too_few_rounds: no pair of order statistics reaches `confidence`; the interval is then
        the whole observed range (min..max) and must not support a verdict.
    """

    ratio: float
    ci_low: float
    ci_high: float
    n_rounds: int
    confidence: float
    method: str
    coverage: float
    too_few_rounds: bool
    # With rounds from several processes (`groups`): how many, and the estimated SD of the
    # log ratio between processes (the per-process offset) that the interval includes.
    n_processes: int = 1
    between_sd: float | None = None


def paired_ratios(ref_s: Sequence[float], target_s: Sequence[float]) -> np.ndarray:
    """Per-round ratios ref_s[i] / target_s[i]. ValueError on unequal lengths or bad times."""
    ref = _positive_samples("ref_s", ref_s)
    target = _positive_samples("target_s", target_s)
    if ref.size != target.size:
        raise ValueError(f"paired samples need equal lengths: {ref.size} reference rounds, "
                         f"{target.size} target rounds")
    return ref / target


@lru_cache(maxsize=None)
def _sign_test_rank(n: int, confidence: float) -> tuple[int, float]:
    """Largest k such that [x_(k), x_(n+1-k)] (1-based order statistics) covers the median
    with probability >= confidence, and that exact coverage; k = 0 when even min..max falls
    short.

    The number of samples below the true median is Binomial(n, 1/2) for any continuous
    distribution, so P(x_(k) <= median <= x_(n+1-k)) = 1 - 2 P(B <= k-1): exact and
    distribution-free (the interval belonging to the sign test)."""
    alpha_half = (1.0 - confidence) / 2.0
    total = 2 ** n
    k, tail_count = 0, 0  # tail_count = #outcomes with B <= k-1, i.e. P(B <= k-1) * 2**n
    ways = 1              # comb(n, k), updated in step (exact integers throughout)
    while k < (n + 1) // 2:
        next_tail = tail_count + ways
        if next_tail / total > alpha_half + _TAIL_TOLERANCE:
            break
        k, tail_count = k + 1, next_tail
        ways = ways * (n - k + 1) // k
    # Integer numerators: 2**n overflows a float long before these ratios lose precision.
    coverage = 1.0 - (2 * tail_count) / total if k > 0 else 1.0 - 2 / total
    return k, coverage


@dataclass(frozen=True)
class MedianInterval:
    """The median of some values with the distribution-free interval for the median of
    their population, and that interval's exact coverage (below the confidence asked when
    even min..max cannot reach it: 93.75% for 5 values, 75% for 3)."""
    median: float
    low: float
    high: float
    coverage: float


def median_interval(values: Sequence[float],
                    confidence: float = DEFAULT_CONFIDENCE) -> MedianInterval:
    """Median and order-statistic interval (the sign test's) of at least one value."""
    _check_confidence(confidence)
    ordered = sorted(float(v) for v in values)
    if not ordered:
        raise ValueError("median_interval needs at least one value")
    n = len(ordered)
    k, coverage = _sign_test_rank(n, confidence)
    k = max(k, 1)                  # min..max when nothing narrower reaches the confidence
    return MedianInterval(float(statistics.median(ordered)), ordered[k - 1], ordered[n - k],
                          coverage if n > 1 else 0.0)


def ratio_estimate(ref_s: Sequence[float], target_s: Sequence[float],
                   confidence: float = DEFAULT_CONFIDENCE,
                   groups: Sequence[int] | None = None,
                   prior: "BetweenProcessPrior | None" = None) -> RatioEstimate:
    """The ref/target time ratio from paired rounds, with a distribution-free interval.

    Round i gives one sample per side, taken back to back (A B, then B A, ...). Whatever
    slows the machine for a while - frequency scaling, a neighbour's job, thermal state -
    hits both samples of a round alike and cancels in their ratio; comparing each side's
    median over the whole run instead would let that drift leak into both medians and into
    their ratio's noise. So the estimate works on the per-round ratios.

    Estimate: the median of the per-round log-ratios, mapped back with exp (for odd n this
    is the median per-round ratio; log scale makes 2x faster and 2x slower symmetric). A
    burst that spoils one side of a round makes that round's ratio an outlier, which moves a
    median by at most one rank.

    Interval: order statistics of the log-ratios picked by the sign test (see
    _sign_test_rank): coverage >= confidence for any continuous noise, no normality assumed.
    It needs n >= 6 rounds at 95% (with 5, even min..max covers only 93.75%); below that
    the result is flagged too_few_rounds and the interval is min..max.
    """
    _check_confidence(confidence)
    log_ratios = np.sort(np.log(paired_ratios(ref_s, target_s)))
    n = int(log_ratios.size)
    k, coverage = _sign_test_rank(n, confidence)
    too_few = k == 0
    low_index, high_index = (0, n - 1) if too_few else (k - 1, n - k)
    rounds_only = RatioEstimate(ratio=float(np.exp(np.median(log_ratios))),
                                ci_low=float(np.exp(log_ratios[low_index])),
                                ci_high=float(np.exp(log_ratios[high_index])),
                                n_rounds=n, confidence=confidence, method=METHOD_SIGN_TEST,
                                coverage=coverage, too_few_rounds=too_few)
    if groups is None or len(set(groups)) < 2:
        return rounds_only
    return _with_processes(rounds_only, np.log(paired_ratios(ref_s, target_s)),
                           np.asarray(groups), confidence, prior)


# --------------------------------------------------------------------------- processes

# Sampling variance of a median is ~pi/2 times that of a mean for normal noise.
_MEDIAN_VARIANCE_FACTOR = math.pi / 2.0
# Weight, in degrees of freedom, of the run's typical between-process spread when it is
# combined with one instance's own few processes. 4 is the value the gate's noise profile
# uses (gate/noise.py): enough to keep a 3-process instance from a t with 2 df (4.3 SDs
# wide at 95%), little enough that an instance clearly noisier than the run still shows it.
PRIOR_DF = 4.0
# A run-wide prior needs this many instances measured in several processes.
MIN_PRIOR_INSTANCES = 5
# The share of measurements trimmed off each end of the excess variances before they are
# averaged into a run's spread (run_spread_prior). Simulated with 2 of 30 instances at an SD
# of 0.5 among instances at 0.03: the plain mean read 0.11-0.12, the 10%-trimmed one 0.03-0.04.
PRIOR_TRIM = 0.1


@dataclass(frozen=True)
class BetweenProcessPrior:
    """The run's typical SD of a log ratio between processes, and its weight (df)."""

    sd: float
    df: float = PRIOR_DF
    instances: int = 0


@dataclass(frozen=True)
class Look:
    """One look of a sequential run (verdicts/sequential.py): its confidence (the share of
    the error rate it spends) and the between-process prior its interval uses."""

    confidence: float
    prior: BetweenProcessPrior


def _process_components(log_ratios: np.ndarray, groups: np.ndarray
                        ) -> tuple[np.ndarray, float, float]:
    """Per-process medians, the mean sampling variance of one of them from the rounds'
    own noise, and the between-process variance left over, untruncated (negative when the
    medians agree better than that noise predicts; an interval clamps it at 0)."""
    labels = list(dict.fromkeys(groups.tolist()))
    medians = np.array([np.median(log_ratios[groups == g]) for g in labels])
    sizes = np.array([np.count_nonzero(groups == g) for g in labels])
    residuals = log_ratios - np.array([medians[labels.index(g)] for g in groups.tolist()])
    within_sd = MAD_TO_SD * float(np.median(np.abs(residuals)))
    within_var_of_median = float(np.mean(_MEDIAN_VARIANCE_FACTOR * within_sd ** 2 / sizes))
    spread = float(np.var(medians, ddof=1)) if medians.size > 1 else 0.0
    return medians, within_var_of_median, spread - within_var_of_median


def between_process_excess(ref_s: Sequence[float], target_s: Sequence[float],
                           groups: Sequence[int]) -> tuple[float, int] | None:
    """One measurement's between-process variance of the log ratio beyond what its rounds'
    own noise explains, NOT truncated at 0 (it is negative when the process medians agree
    better than the rounds' noise predicts), and its df (processes - 1); None with fewer
    than 2 processes. The material of run_spread_prior."""
    g = np.asarray(groups)
    if len(set(g.tolist())) < 2:
        return None
    medians, _, excess = _process_components(np.log(paired_ratios(ref_s, target_s)), g)
    return excess, int(medians.size) - 1


def run_spread_prior(excesses: Sequence[tuple[float, int]]) -> BetweenProcessPrior | None:
    """The typical between-process SD from many measurements' excess variances: a run's
    (between_process_excess) or a gate's comparisons' (pooled_between_process_excess, per
    path: the one estimator for both). The square root of their PRIOR_TRIM-trimmed mean, a
    method-of-moments estimate. Not the median of each measurement's SD truncated at 0: with
    2-3 processes most of those are 0 or near it, and their median sits far below the truth
    (simulated, 30 instances, 5 rounds per process, true SD 0.03 and round noise 0.10: 0.005
    from the median with 2 processes, 0.028 from this; a sequential run here printed 0.9%
    for a selection whose fixed run showed 3.0%). Trimming keeps the few instances that
    really are noisier from speaking for the run. None with too few measurements."""
    if len(excesses) < MIN_PRIOR_INSTANCES:
        return None
    values = np.sort([v for v, _ in excesses])
    cut = int(PRIOR_TRIM * values.size)
    kept = values[cut:values.size - cut]
    return BetweenProcessPrior(sd=math.sqrt(max(0.0, float(np.mean(kept)))), df=PRIOR_DF,
                               instances=len(excesses))


def _shrunk(between_var: float, df: float, prior: BetweenProcessPrior | None
            ) -> tuple[float, float]:
    """A between-process variance seen with df degrees of freedom, pulled towards the
    prior's (weighted by df and prior.df), and the df the pair carries; unchanged without a
    prior. With df 0 the prior alone speaks."""
    if prior is None:
        return between_var, df
    return ((df * between_var + prior.df * prior.sd ** 2) / (df + prior.df), df + prior.df)


def _with_processes(rounds_only: RatioEstimate, log_ratios: np.ndarray, groups: np.ndarray,
                    confidence: float, prior: BetweenProcessPrior | None) -> RatioEstimate:
    """The process as the unit: a process keeps its own offset (thread placement, allocator,
    kernel choice) for its whole life, so rounds of one process are not independent draws
    and an interval from the rounds alone is too narrow for another run to land in. The
    estimate is the mean of per-process medians; its variance is (between-process variance
    + one median's sampling variance) / processes, the between part shrunk towards the
    run's typical (prior) when there is one; the interval is a t interval with the
    matching df, widened to contain the rounds' sign-test interval so it is never
    narrower than the within-process evidence."""
    medians, within_var, excess = _process_components(log_ratios, groups)
    n_proc = int(medians.size)
    between_var, df = _shrunk(max(0.0, excess), float(n_proc - 1), prior)
    center = float(np.mean(medians))
    low, high, coverage = _t_interval_within_rounds(
        center, (between_var + within_var) / n_proc, df, confidence, rounds_only)
    return RatioEstimate(ratio=math.exp(center), ci_low=low, ci_high=high,
                         n_rounds=rounds_only.n_rounds, confidence=confidence,
                         method=METHOD_PROCESSES, coverage=coverage,
                         too_few_rounds=rounds_only.too_few_rounds, n_processes=n_proc,
                         between_sd=math.sqrt(between_var))


def look_estimate(ref_s: Sequence[float], target_s: Sequence[float], groups: Sequence[Any],
                  confidence: float, prior: BetweenProcessPrior) -> RatioEstimate:
    """The ratio at one look of a sequential run (verdicts/sequential.py): the process as
    the unit as in ratio_estimate, at the look's confidence (its share of the error rate),
    with the between-process variance shrunk towards `prior`. With one process the prior
    alone stands for the offset the next processes could show, so a look after the first
    process can decide only what no plausible process offset could overturn. The interval
    is widened to contain the rounds' own 95% sign-test interval (the rounds' range when
    they are too few for one): never narrower than the within-process evidence."""
    _check_confidence(confidence)
    rounds_only = ratio_estimate(ref_s, target_s)
    log_ratios = np.log(paired_ratios(ref_s, target_s))
    labels = np.asarray([str(g) for g in groups])
    medians, within_var, excess = _process_components(log_ratios, labels)
    n_proc = int(medians.size)
    between_var, df = _shrunk(max(0.0, excess), float(n_proc - 1), prior)
    center = float(np.mean(medians))
    half = student_t_quantile(1.0 - (1.0 - confidence) / 2.0, df) * math.sqrt(
        (between_var + within_var) / n_proc)
    low = min(center - half, math.log(rounds_only.ci_low))
    high = max(center + half, math.log(rounds_only.ci_high))
    return RatioEstimate(ratio=math.exp(center), ci_low=math.exp(low), ci_high=math.exp(high),
                         n_rounds=rounds_only.n_rounds, confidence=confidence,
                         method=METHOD_LOOK, coverage=confidence, too_few_rounds=False,
                         n_processes=n_proc, between_sd=math.sqrt(between_var))


def _t_interval_within_rounds(center: float, variance: float, df: float, confidence: float,
                              rounds_only: RatioEstimate | ChangeEstimate
                              ) -> tuple[float, float, float]:
    """The process-unit interval of a log-scale centre (t with df, of the given variance),
    widened to contain the rounds-only interval so it is never narrower than the rounds'
    own evidence; returned as (low, high) on the ratio scale with its coverage."""
    half = student_t_quantile(1.0 - (1.0 - confidence) / 2.0, df) * math.sqrt(variance)
    low = min(center - half, math.log(rounds_only.ci_low))
    high = max(center + half, math.log(rounds_only.ci_high))
    coverage = (rounds_only.coverage if rounds_only.too_few_rounds
                else max(confidence, rounds_only.coverage))
    return math.exp(low), math.exp(high), coverage


def _regularized_incomplete_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b) by its continued fraction (Lentz), the textbook way to a t CDF without
    scipy; converges fast for the x used below."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    if x > (a + 1.0) / (a + b + 2.0):
        return 1.0 - _regularized_incomplete_beta(b, a, 1.0 - x)
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    f = d
    for m in range(1, 300):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            f *= c * d
        if abs(c * d - 1.0) < 1e-14:
            break
    return math.exp(log_front) * f / a


def _student_t_cdf(t: float, df: float) -> float:
    tail = 0.5 * _regularized_incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


@lru_cache(maxsize=4096)    # the same few (p, df) recur at every look of a run
def student_t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with df degrees of freedom (bisection on the CDF;
    df may be fractional). The normal quantile when df is huge."""
    if not 0.0 < p < 1.0 or not df > 0:
        raise ValueError(f"need 0 < p < 1 and df > 0, got p={p!r}, df={df!r}")
    if df > 1e6:
        return NormalDist().inv_cdf(p)
    low, high = -1e3, 1e3
    for _ in range(200):
        mid = (low + high) / 2.0
        if _student_t_cdf(mid, df) < p:
            low = mid
        else:
            high = mid
    return (low + high) / 2.0


# --------------------------------------------------------------------------- change between runs

@dataclass(frozen=True)
class ChangeEstimate:
    """How the per-round ratio moved from a baseline run to the current run.

    change: current / baseline ratio; 0.8 means the ratio fell 20% (the target got relatively
        slower), 1.25 that it rose 25%.
    coverage, too_few_rounds: as in RatioEstimate; with too few rounds the interval is the
        whole range of pairwise changes and must not support a verdict.
    """

    change: float
    ci_low: float
    ci_high: float
    n_baseline: int
    n_current: int
    confidence: float
    method: str
    coverage: float
    too_few_rounds: bool
    # With process labels on both runs (METHOD_CHANGE_PROCESSES): how many processes each
    # run's rounds came from and the between-process SD of one process's centre (log scale)
    # that went into the interval; 0 / None when the rounds alone were used.
    n_processes_baseline: int = 0
    n_processes_current: int = 0
    between_sd: float | None = None


@lru_cache(maxsize=64)
def _mann_whitney_null_cdf(n: int, m: int) -> np.ndarray:
    """P(U <= u) for u = 0..n*m, U the Mann-Whitney count of (x, y) pairs with y > x, when
    n x's and m y's are exchangeable (no shift) and continuous.

    Recursion on which sample holds the largest observation: a y with probability m/(n+m)
    (it beats all n x's, adding n to U), else an x (adding nothing). Done on probabilities,
    not counts, so it is a convex combination at every step: no overflow, no cancellation."""
    previous = [np.ones(1) for _ in range(m + 1)]  # distributions for i-1 x's and j y's
    for i in range(1, n + 1):
        current = [np.ones(1)]
        for j in range(1, m + 1):
            pmf = np.zeros(i * j + 1)
            pmf[: previous[j].size] += (i / (i + j)) * previous[j]
            pmf[i: i + current[j - 1].size] += (j / (i + j)) * current[j - 1]
            current.append(pmf)
        previous = current
    cdf = np.cumsum(previous[m])
    cdf.setflags(write=False)
    return cdf


def _hodges_lehmann_rank_exact(n: int, m: int, confidence: float) -> tuple[int, float]:
    """Largest k with P(U <= k-1) <= alpha/2 under the exact null, and the coverage
    1 - 2 P(U <= k-1) of [D_(k), D_(nm+1-k)]; k = 0 when no k qualifies."""
    alpha_half = (1.0 - confidence) / 2.0
    cdf = _mann_whitney_null_cdf(n, m)
    k = int(np.count_nonzero(cdf[: (n * m + 1) // 2] <= alpha_half + _TAIL_TOLERANCE))
    if k == 0:
        return 0, 1.0 - 2.0 * float(cdf[0])
    return k, 1.0 - 2.0 * float(cdf[k - 1])


def _hodges_lehmann_rank_normal(n: int, m: int, confidence: float) -> tuple[int, float]:
    """The same rank from the normal approximation of U (mean nm/2, variance
    nm(n+m+1)/12) with continuity correction; for large samples only."""
    normal = NormalDist()
    z = normal.inv_cdf(1.0 - (1.0 - confidence) / 2.0)
    mean = n * m / 2.0
    sd = math.sqrt(n * m * (n + m + 1) / 12.0)
    k = max(0, min(int(math.floor(mean + 0.5 - z * sd)), (n * m + 1) // 2))
    if k == 0:
        return 0, 1.0 - 2.0 * normal.cdf((0.5 - mean) / sd)
    return k, 1.0 - 2.0 * normal.cdf((k - 0.5 - mean) / sd)


def change_estimate(baseline_ratios: Sequence[float], current_ratios: Sequence[float],
                    confidence: float = DEFAULT_CONFIDENCE, *,
                    baseline_groups: Sequence[Any] | None = None,
                    current_groups: Sequence[Any] | None = None,
                    prior: "BetweenProcessPrior | None" = None) -> ChangeEstimate:
    """Change of the per-round ratio between two runs (current / baseline), with interval.

    With the process each round came from (baseline_groups, current_groups: one label per
    round) the process is the unit, as in ratio_estimate: see _change_with_processes.
    Without them, or when neither the runs nor a prior can show a between-process spread
    (one process each and no prior), the rounds are the unit:

    The two runs are different processes at different times, so their rounds are not paired:
    this is a two-sample problem. Chosen method: the Hodges-Lehmann shift estimate on log
    ratios - the median of all n*m differences log(current_j) - log(baseline_i) - with the
    interval of the Mann-Whitney test, i.e. the k-th smallest and k-th largest of those
    differences, k from the exact null distribution of U.

    Why this over a bootstrap: with the ~15 rounds a run has, a percentile bootstrap of a
    median undercovers (the bootstrap distribution of a median is lumpy and too narrow at
    small n), and its answer depends on a seed. The Mann-Whitney interval has exact coverage
    >= confidence for any continuous noise when the runs differ by a shift on log scale
    (a multiplicative change), needs no seed, and - being rank-based - a few burst rounds
    move it by at most a few ranks. Working on log ratios makes the shift model natural
    (a 20% slowdown scales every round's ratio by 0.8) and the estimate symmetric.

    Needs 4 rounds on each side at 95% (3 and 3 give at best 90%); below that the result is
    flagged too_few_rounds and the interval is the range of all pairwise changes.
    """
    _check_confidence(confidence)
    baseline = np.log(_positive_samples("baseline_ratios", baseline_ratios))
    current = np.log(_positive_samples("current_ratios", current_ratios))
    rounds_only = _change_from_rounds(baseline, current, confidence)
    if baseline_groups is None or current_groups is None:
        return rounds_only
    for name, values, labels in (("baseline", baseline, baseline_groups),
                                 ("current", current, current_groups)):
        if len(labels) != values.size:
            raise ValueError(f"{name}_groups has {len(labels)} labels for {values.size} rounds")
    return _change_with_processes(rounds_only, baseline, np.asarray(baseline_groups, dtype=str),
                                  current, np.asarray(current_groups, dtype=str), confidence,
                                  prior)


def _change_from_rounds(baseline: np.ndarray, current: np.ndarray,
                        confidence: float) -> ChangeEstimate:
    """change_estimate with the rounds as the unit (log values in)."""
    n, m = int(baseline.size), int(current.size)
    differences = np.sort((current[np.newaxis, :] - baseline[:, np.newaxis]).ravel())
    if n * m <= EXACT_MANN_WHITNEY_MAX_PAIRS:
        k, coverage = _hodges_lehmann_rank_exact(n, m, confidence)
        method = METHOD_HODGES_LEHMANN
    else:
        k, coverage = _hodges_lehmann_rank_normal(n, m, confidence)
        method = _METHOD_HODGES_LEHMANN_NORMAL
    too_few = k == 0
    low_index, high_index = (0, n * m - 1) if too_few else (k - 1, n * m - k)
    return ChangeEstimate(change=float(np.exp(np.median(differences))),
                          ci_low=float(np.exp(differences[low_index])),
                          ci_high=float(np.exp(differences[high_index])),
                          n_baseline=n, n_current=m, confidence=confidence, method=method,
                          coverage=coverage, too_few_rounds=too_few)


def _pooled_between_process(baseline: np.ndarray, baseline_groups: np.ndarray,
                            current: np.ndarray, current_groups: np.ndarray
                            ) -> tuple[np.ndarray, float, np.ndarray, float, float, int]:
    """Both runs' per-process medians and their within-process sampling variances, and the
    between-process variance pooled over the two runs with its df (processes - 2): each
    run's spread of medians around its own mean, so a change between the runs does not
    count as spread. The variance is the excess beyond the rounds' own noise, NOT truncated
    at 0 (an interval clamps it; run_spread_prior averages it as it is)."""
    base_medians, base_within, _ = _process_components(baseline, baseline_groups)
    cur_medians, cur_within, _ = _process_components(current, current_groups)
    nb, nc = int(base_medians.size), int(cur_medians.size)
    df = nb + nc - 2
    if df == 0:
        return base_medians, base_within, cur_medians, cur_within, 0.0, 0
    squares = (float(np.sum((base_medians - base_medians.mean()) ** 2))
               + float(np.sum((cur_medians - cur_medians.mean()) ** 2)))
    within = ((nb - 1) * base_within + (nc - 1) * cur_within) / df
    return (base_medians, base_within, cur_medians, cur_within, squares / df - within, df)


def pooled_between_process_excess(baseline: Sequence[float], baseline_groups: Sequence[Any],
                                  current: Sequence[float], current_groups: Sequence[Any]
                                  ) -> tuple[float, int] | None:
    """One comparison's between-process variance (log scale) pooled over both runs beyond
    what the rounds' own noise explains, untruncated, and its df; None when the two runs
    hold fewer than 3 processes between them. The material of a gate's prior
    (run_spread_prior over its comparisons, as a run's prior is over its measurements)."""
    *_, excess, df = _pooled_between_process(
        np.log(_positive_samples("baseline", baseline)), np.asarray(baseline_groups, dtype=str),
        np.log(_positive_samples("current", current)), np.asarray(current_groups, dtype=str))
    return (excess, df) if df > 0 else None


def pooled_between_process_sd(baseline: Sequence[float], baseline_groups: Sequence[Any],
                              current: Sequence[float], current_groups: Sequence[Any]
                              ) -> tuple[float, int] | None:
    """One comparison's between-process SD (log scale) pooled over both runs (the excess
    clamped at 0), and its df; None when the two runs hold fewer than 3 processes."""
    found = pooled_between_process_excess(baseline, baseline_groups, current, current_groups)
    return None if found is None else (math.sqrt(max(0.0, found[0])), found[1])


def _change_with_processes(rounds_only: ChangeEstimate, baseline: np.ndarray,
                           baseline_groups: np.ndarray, current: np.ndarray,
                           current_groups: np.ndarray, confidence: float,
                           prior: BetweenProcessPrior | None) -> ChangeEstimate:
    """The process as the unit of a change between two runs. Every process keeps an offset
    of its own (thread placement, allocator, the host's state while it lived), so two runs
    of the same code differ by the difference of their processes' offsets - on this 2-core
    machine an A/A gate read a 9-10% "regression" in both of its stages against a baseline
    pooled from 4 processes, with a rounds-only interval of [-16%, -4%]. Estimate: the
    difference of the runs' mean per-process medians. Variance: (between-process variance
    + one median's sampling variance) / processes, for each run; the between part pooled
    over both runs and shrunk towards the prior. Interval: t with the matching df, widened
    to contain the rounds-only (Mann-Whitney) interval, never narrower than the rounds'
    evidence. With one process on each side and no prior there is no spread to use: the
    rounds-only estimate is returned unchanged."""
    (base_medians, base_within, cur_medians, cur_within,
     between_var, df) = _pooled_between_process(baseline, baseline_groups, current,
                                                current_groups)
    between_var, df_total = _shrunk(max(0.0, between_var), float(df), prior)
    if df_total == 0:
        return rounds_only
    nb, nc = int(base_medians.size), int(cur_medians.size)
    center = float(cur_medians.mean() - base_medians.mean())
    low, high, coverage = _t_interval_within_rounds(
        center, (between_var + base_within) / nb + (between_var + cur_within) / nc, df_total,
        confidence, rounds_only)
    return ChangeEstimate(change=math.exp(center), ci_low=low, ci_high=high,
                          n_baseline=rounds_only.n_baseline, n_current=rounds_only.n_current,
                          confidence=confidence, method=METHOD_CHANGE_PROCESSES,
                          coverage=coverage, too_few_rounds=rounds_only.too_few_rounds,
                          n_processes_baseline=nb, n_processes_current=nc,
                          between_sd=math.sqrt(between_var))

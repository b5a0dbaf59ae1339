"""The process as the unit of noise, tested by simulation: a process keeps an offset of
its own, so rounds of one process are not independent. Intervals from the rounds alone
under-cover; the grouped interval (with the run's typical between-process spread as a
prior) must cover the true ratio about as often as it claims."""
from __future__ import annotations

import math

import numpy as np
import pytest

from opbench.verdicts.stats import (
                                    between_process_excess,
                                    ratio_estimate,
                                    run_spread_prior,
                                    student_t_quantile,
                                    )

TRUE_RATIO = 0.5


def simulated_instance(rng, processes=3, rounds=5, between_sd=0.06, within_sd=0.03):
    """torch and MindSpore samples whose log ratio = log(TRUE_RATIO) + process offset +
    heavy-tailed round noise."""
    groups, ref, target = [], [], []
    for p in range(1, processes + 1):
        offset = rng.normal(0, between_sd)
        for _ in range(rounds):
            noise = rng.standard_t(4) * within_sd
            t = 1e-4 * math.exp(rng.normal(0, 0.1))          # drift common to both sides
            ref.append(t * TRUE_RATIO * math.exp(offset + noise))
            target.append(t)
            groups.append(p)
    return ref, target, groups


def coverage(use_groups: bool, use_prior: bool, trials: int = 300, seed: int = 3) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(trials):
        run = [simulated_instance(rng) for _ in range(20)]
        prior = run_spread_prior([between_process_excess(*inst) for inst in run]) \
            if use_prior else None
        ref, target, groups = run[0]
        est = ratio_estimate(ref, target, groups=groups if use_groups else None, prior=prior)
        hits += est.ci_low <= TRUE_RATIO <= est.ci_high
    return hits / trials


def test_rounds_alone_under_cover_when_processes_differ():
    assert coverage(use_groups=False, use_prior=False, trials=200) < 0.8


def test_the_grouped_interval_covers_with_the_run_prior():
    assert coverage(use_groups=True, use_prior=True) >= 0.92


def test_the_grouped_interval_covers_without_a_prior():
    assert coverage(use_groups=True, use_prior=False, trials=200) >= 0.93


def test_grouped_estimate_reports_processes_and_spread():
    rng = np.random.default_rng(0)
    ref, target, groups = simulated_instance(rng, between_sd=0.2)
    est = ratio_estimate(ref, target, groups=groups)
    assert est.n_processes == 3 and est.between_sd > 0.05
    one = ratio_estimate(ref, target)
    assert one.n_processes == 1 and one.between_sd is None
    # never narrower than the rounds' own interval
    assert est.ci_low <= one.ci_low and est.ci_high >= one.ci_high


def _run_of_excesses(rng, between_sd, processes, instances=30, noisy=0, round_sd=0.10):
    run = []
    for i in range(instances):
        ref, target, groups = simulated_instance(rng, between_sd=0.5 if i < noisy else
                                                 between_sd, processes=processes,
                                                 within_sd=round_sd)
        run.append(between_process_excess(ref, target, groups))
    return run


@pytest.mark.parametrize("processes", [2, 3])
def test_the_runs_spread_is_not_read_low_from_few_processes_each(processes):
    # most instances of a sequential run that reach a second look have 2-3 processes: the
    # median of their SDs truncated at 0 read a third of the truth or less; the trimmed mean
    # of the untruncated excesses stays near it
    rng = np.random.default_rng(7)
    estimates, medians = [], []
    for _ in range(40):
        run = _run_of_excesses(rng, 0.03, processes)
        estimates.append(run_spread_prior(run).sd)
        medians.append(float(np.median([math.sqrt(max(0.0, v)) for v, _ in run])))
    assert 0.022 <= float(np.median(estimates)) <= 0.045
    if processes == 2:
        assert float(np.median(medians)) < 0.015     # what the old estimate did


def test_a_few_noisy_instances_do_not_speak_for_the_run():
    rng = np.random.default_rng(8)
    sds = [run_spread_prior(_run_of_excesses(rng, 0.03, 3, noisy=2)).sd for _ in range(40)]
    assert float(np.median(sds)) < 0.06          # the plain mean read ~0.12


def test_prior_needs_enough_instances():
    assert run_spread_prior([(0.01, 2)] * 4) is None
    assert run_spread_prior([(-0.001, 1)] * 5).sd == 0.0     # no spread beyond the rounds'


@pytest.mark.parametrize("p, df, expected", [(0.975, 2, 4.3027), (0.975, 10, 2.2281),
                                             (0.995, 4, 4.6041), (0.95, 1, 6.3138)])
def test_student_t_quantiles(p, df, expected):
    assert student_t_quantile(p, df) == pytest.approx(expected, abs=1e-3)

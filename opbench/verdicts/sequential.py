"""Sequential stopping on the verdict: the rule that says, after each process, whether an
instance's evidence already decides PASS or SLOW, with the error rate held over the looks.

A run under sequential stopping (runloop/sequential_run.py) measures every instance in one
worker process, looks, and measures only the undecided ones again in the next process, up
to a cap of K processes. Looking after every process and stopping at the first interval
wholly on one side of the threshold would raise the false verdict rate above the interval's
5% (each look is another chance for noise to cross), so the looks are planned and the
error rate is spent over them: each of the K looks gets an equal share, 2.5% / K on each
side (Bonferroni over the planned looks; it holds however the looks are correlated, so the
rate over all looks stays at or below 2.5% a side). Simulated with the true ratio at the
threshold (tests/unit/test_sequential.py), the false PASS and false SLOW rates stay well
under it.

The first look has one process, and one process cannot show the offset a process keeps
for its whole life (6-27% on a ratio here, docs/measurement.md). Its interval therefore
carries a planning between-process spread in place of the one it cannot see: it decides
only what no plausible process offset could overturn (typically ratios 4x or more from the
threshold). From the second look on, the run's own typical spread (the between-process
prior of the instances measured in several processes so far) stands in, as it does for
the fixed protocol's final intervals.

Pure: no printing, no measuring.
"""
from __future__ import annotations

from opbench.verdicts.rules import Verdict
from opbench.verdicts.stats import DEFAULT_CONFIDENCE, BetweenProcessPrior, Look

__all__ = ["PLANNING_DF", "PLANNING_SD", "Look", "decided", "look_confidence",
           "look_confidences", "look_for"]

# The between-process SD (log ratio) a one-process look assumes it cannot see: 0.25 is a
# 28% offset, the top of the 6-27% per-process offsets measured on this machine
# (docs/measurement.md). A fixed run of 33 float32 instances here had per-instance SDs of
# 0.02-0.16 (run prior 0.024); the matmul[tokens=1] reached 0.55 and 1.6, which
# its rounds' own spread (87 us to 12.8 ms) keeps undecided at the first look anyway.
PLANNING_SD = 0.25
# Its weight in degrees of freedom. The planning SD is not estimated from the instance's own
# few processes but set from the range measured over many runs, so it is held as nearly
# known (30 df: about +-13% on an SD) rather than with the 4 df of a run's prior: with 4 df
# the first look's interval was 1.7x wider and decided only ratios under ~0.15, sending 18
# of 33 instances of ratio 0.2-0.7 to a second process (a run here, 2026-11-26).
PLANNING_DF = 30.0


def look_confidence(looks: int, confidence: float = DEFAULT_CONFIDENCE) -> float:
    """Each of `looks` planned looks spends an equal share of 1 - confidence: 0.99167 for
    6 looks at 95%."""
    if looks < 1:
        raise ValueError(f"looks must be >= 1, not {looks!r}")
    return 1.0 - (1.0 - confidence) / looks


def look_confidences(looks: int, confidence: float = DEFAULT_CONFIDENCE,
                     last_share: float | None = None) -> tuple[float, ...]:
    """Each planned look's confidence, the looks together spending 1 - confidence (the same
    union bound as look_confidence): equal shares when last_share is None, else the last
    look spends last_share of it and the earlier ones share the rest equally. A rule whose
    last look must stay close to the fixed protocol's (the gate: runloop/gate_early_stop.py) keeps
    most of the error rate for it, so that only clear cases stop early."""
    if looks < 1:
        raise ValueError(f"looks must be >= 1, not {looks!r}")
    if last_share is None or looks == 1:
        return (look_confidence(looks, confidence),) * looks
    if not 0.0 < last_share < 1.0:
        raise ValueError(f"last_share must be in (0, 1), not {last_share!r}")
    alpha = 1.0 - confidence
    early = 1.0 - alpha * (1.0 - last_share) / (looks - 1)
    return (early,) * (looks - 1) + (1.0 - alpha * last_share,)


def look_for(processes: int, looks: int, run_prior: BetweenProcessPrior | None) -> Look:
    """The look after an instance's `processes`-th process: one process assumes the
    planning spread (or the run's, if that is larger); several use the run's typical
    spread so far, or the planning spread until the run has one."""
    planning = BetweenProcessPrior(sd=PLANNING_SD, df=PLANNING_DF)
    if run_prior is None:
        prior = planning
    elif processes == 1:
        prior = planning if run_prior.sd <= PLANNING_SD else run_prior
    else:
        prior = run_prior
    return Look(look_confidence(looks), prior)


def decided(verdict: Verdict | str) -> bool:
    """An instance stops when its verdict is settled: PASS or SLOW on the evidence, or a
    MISMATCH or ERROR that more processes cannot change."""
    return Verdict(verdict) is not Verdict.INCONCLUSIVE

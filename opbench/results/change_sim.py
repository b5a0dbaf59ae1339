"""The change-point method's error rates by simulation: A/A series drawn from recorded-like
noise and series with a step of known size and position (results/changes.py's find_steps).

Noise model: each run's log ratio = level + run-to-run drift (normal, DRIFT_SD) + within-run
error (normal, the run's own standard error, drawn around SE_LOG); the run reports its
interval as +-1.96 of that standard error, as a recorded run does.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from opbench.results.changes import find_steps

__all__ = ["SimulatedRates", "simulate"]

# Recorded-like figures: a small op's 95% interval on this machine is about +-4% of the ratio
# (standard error 2% on the log scale) and runs of one code differ by about 2% between runs.
SE_LOG = 0.02
DRIFT_SD = 0.02


@dataclass(frozen=True)
class SimulatedRates:
    series: int
    runs: int
    step: float
    at: int
    detected_per_100: float       # steps found within one run of their true position
    false_alarms_per_100: float   # A/A series with any change


def _series(rng: np.random.Generator, runs: int, step_log: float, at: int,
            se_log: float, drift_sd: float) -> tuple[list[float], list[float]]:
    ses = se_log * np.exp(rng.normal(0, 0.2, runs))
    level = np.where(np.arange(runs) >= at, step_log, 0.0)
    values = level + rng.normal(0, drift_sd, runs) + rng.normal(0, 1, runs) * ses
    return values.tolist(), ses.tolist()


def simulate(series: int = 1000, runs: int = 12, step: float = 0.15, at: int = 6,
             seed: int = 0, se_log: float = SE_LOG,
             drift_sd: float = DRIFT_SD) -> SimulatedRates:
    """step: the slowdown's size (0.15: the ratio falls to 1/1.15 of its level)."""
    rng = np.random.default_rng(seed)
    step_log = -math.log1p(step)
    false_alarms = detected = 0
    for _ in range(series):
        values, ses = _series(rng, runs, 0.0, runs, se_log, drift_sd)
        false_alarms += bool(find_steps(values, ses))
        values, ses = _series(rng, runs, step_log, at, se_log, drift_sd)
        detected += any(abs(s.at - at) <= 1 and s.log_change < 0
                        for s in find_steps(values, ses))
    return SimulatedRates(series, runs, step, at, 100.0 * detected / series,
                          100.0 * false_alarms / series)

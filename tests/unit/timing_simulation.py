"""Simulated interleaved timings for the statistics tests (a helper, not a test module).

The model mimics what the measurement protocol faces on a shared machine:
- a true per-call time for each side, in a known ratio (ref / target = true_ratio);
- multiplicative log-normal noise on every sample (noise_sd on log scale);
- drift: a slow trend plus a random walk over the run, as a function of each sample's
  position in time. Rounds run A B, B A, ... so the two samples of a round are adjacent and
  share almost all of the drift - which is what the per-round ratio is meant to cancel;
- bursts: with probability burst_prob a sample is inflated by a factor drawn from
  burst_factor (a preemption, another process's job). Bursts hit either side alike.

Noise and bursts are identically distributed for both sides, so the per-round log-ratio is
symmetric about log(true_ratio): its median - the estimand - is the true ratio.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TARGET_TIME_S = 1e-3


@dataclass(frozen=True)
class NoiseModel:
    noise_sd: float = 0.05                       # log-scale sd of each sample
    burst_prob: float = 0.05                     # chance a sample is hit by a burst
    burst_factor: tuple[float, float] = (1.3, 3.0)
    trend_over_run: float = 0.3                  # log-scale drift from first to last sample
    walk_step_sd: float = 0.01                   # random-walk drift per sample (log scale)


QUIET = NoiseModel(noise_sd=0.02, burst_prob=0.02)
SHARED_MACHINE = NoiseModel()
NOISY = NoiseModel(noise_sd=0.15, burst_prob=0.10, walk_step_sd=0.03)


def simulate_runs(rng: np.random.Generator, n_runs: int, n_rounds: int, true_ratio: float,
                  model: NoiseModel = SHARED_MACHINE) -> tuple[np.ndarray, np.ndarray]:
    """(ref_s, target_s), each of shape (n_runs, n_rounds): per-round mean times per call."""
    n_samples = 2 * n_rounds
    position = np.arange(n_samples) / max(n_samples - 1, 1)
    walk = np.cumsum(rng.normal(0.0, model.walk_step_sd, size=(n_runs, n_samples)), axis=1)
    log_drift = model.trend_over_run * position[np.newaxis, :] + walk

    bursts = np.where(rng.random((n_runs, n_samples)) < model.burst_prob,
                      rng.uniform(*model.burst_factor, size=(n_runs, n_samples)), 1.0)
    log_noise = rng.normal(0.0, model.noise_sd, size=(n_runs, n_samples))
    multiplier = np.exp(log_drift + log_noise) * bursts

    # Round r takes time slots 2r and 2r+1; the reference goes first in even rounds (A B B A).
    rounds = np.arange(n_rounds)
    ref_slot = 2 * rounds + (rounds % 2)
    target_slot = 2 * rounds + 1 - (rounds % 2)
    target_s = TARGET_TIME_S * multiplier[:, target_slot]
    ref_s = true_ratio * TARGET_TIME_S * multiplier[:, ref_slot]
    return ref_s, target_s


def simulate_ratio_runs(rng: np.random.Generator, n_runs: int, n_rounds: int,
                        true_ratio: float, model: NoiseModel = SHARED_MACHINE) -> np.ndarray:
    """Per-round ratios ref/target of n_runs simulated runs, shape (n_runs, n_rounds)."""
    ref_s, target_s = simulate_runs(rng, n_runs, n_rounds, true_ratio, model)
    return ref_s / target_s

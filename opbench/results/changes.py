"""Change points in the run history: when did a series' ratio move, by how much, which way.

A series is one instance's one measurement mode under one set of conditions (machine, each
side's version and build, threads, launch mode, execution mode): two runs that differ in any
of these are not one series, so a changed build or a changed thread count never reads as a
step (PyTorch's dashboard users met a fake "massive regression" when two modes shared one).

The method is binary segmentation with a weighted two-sample z statistic on log ratios,
deterministic (no permutations), in the spirit of asv's step detection (each point weighted
by its interval) and Otava's windowed tests (written here from the idea, not their code):

- each run's point is its log ratio; its variance is its recorded interval's (the 95% interval
  read as +-1.96 standard errors) plus the run-to-run scatter the segment shows beyond it
  (an interval measured within one run does not know how much the machine drifts between
  runs);
- every split leaving MIN_SEGMENT_RUNS runs on each side is scored; the best one is a change
  when its z is at least Z_CRITICAL and the step is at least min_effect (the gate's minimum
  effect, verdicts/rules.py DEFAULT_MIN_EFFECT): a step smaller than the gate would fail a PR
  on is not a finding;
- each side of a change is searched again.

Error rates by simulation (tools/change_points_sim.py): docs/gate.md, 'Change points'.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from itertools import groupby
from typing import Iterable, Mapping, Sequence

from opbench.results.history import TrendPoint
from opbench.verdicts.rules import DEFAULT_MIN_EFFECT

__all__ = ["Change", "SeriesKey", "Z_CRITICAL", "MIN_SEGMENT_RUNS", "detect_changes",
           "find_steps", "series_of", "changes_to_json"]

# The best split's z is a maximum over up to n-3 splits, so a plain 1.96 would alarm on most
# A/A series. 4.0: in the simulation (tools/change_points_sim.py: 12-run A/A series, noise as
# recorded) it gave 0 false alarms in 2000 series and found 15% steps in 99.6 of 100.
Z_CRITICAL = 4.0
# Two runs per side: one run cannot tell a step from one noisy run (the confirmation rerun,
# gate-like, is what settles the newest run alone).
MIN_SEGMENT_RUNS = 2
# A 95% interval spans +-1.96 standard errors.
Z_95 = 1.959963984540054
# A recorded interval of zero width (one round, a fake clock) would weigh a point infinitely:
# 0.5% on the log scale is below any noise measured on this machine (docs/figures.md).
SE_FLOOR = 0.005
EAGER = "eager"


@dataclass(frozen=True)
class SeriesKey:
    instance: str
    mode: str
    machine: str | None
    reference_version: str | None
    reference_build: str | None
    target_version: str | None
    target_build: str | None
    threads: int | None
    launch: str | None
    execution: str = EAGER     # eager/compiled: a run that names none ran eagerly


@dataclass(frozen=True)
class Step:
    """A step in one sequence: at index `at` (0-based, first changed point)."""

    at: int
    log_change: float
    se: float
    z: float
    before_log: float = 0.0


@dataclass(frozen=True)
class Change:
    key: SeriesKey
    run_index: int          # 1-based position of the first changed run in its series
    run: int                # its history id
    commit: str | None
    ratio: float            # after / before
    ci_low: float
    ci_high: float
    z: float
    before_ratio: float = 1.0   # the series' level before the change (weighted geometric mean)

    @property
    def direction(self) -> str:
        # ratio = reference time / target time: falling means the target got slower
        return "regression" if self.ratio < 1 else "improvement"

    def to_json(self) -> dict:
        return {"instance": self.key.instance, "mode": self.key.mode,
                "run_index": self.run_index, "run": self.run, "commit": self.commit,
                "change": {"ratio": self.ratio, "ci_low": self.ci_low,
                           "ci_high": self.ci_high},
                "direction": self.direction, "z": self.z,
                "series": {"machine": self.key.machine, "threads": self.key.threads,
                           "launch": self.key.launch, "execution": self.key.execution,
                           "reference_version": self.key.reference_version,
                           "reference_build": self.key.reference_build,
                           "target_version": self.key.target_version,
                           "target_build": self.key.target_build}}


def _config_field(point: TrendPoint, name: str) -> str | None:
    if not point.config_json:
        return None
    try:
        value = json.loads(point.config_json).get(name)
    except (ValueError, AttributeError):
        return None
    return None if value is None else str(value)


def key_of(point: TrendPoint) -> SeriesKey:
    return SeriesKey(point.instance_id, point.mode, point.machine_id,
                     point.reference_version, point.reference_build, point.target_version,
                     point.target_build, point.threads, _config_field(point, "launch"),
                     _config_field(point, "execution_mode") or EAGER)


def series_of(points: Iterable[TrendPoint]) -> dict[SeriesKey, list[TrendPoint]]:
    """Measured points (a ratio and an interval) by series, each oldest run first."""
    usable = [p for p in points if p.ratio and p.ratio > 0 and p.ci_low and p.ci_high]
    keyed = sorted(((key_of(p), p) for p in usable), key=lambda kp: (repr(kp[0]), kp[1].run_id))
    return {key: [p for _, p in group] for key, group in groupby(keyed, key=lambda kp: kp[0])}


def _side(values: Sequence[float], variances: Sequence[float]) -> tuple[float, float]:
    weights = [1.0 / v for v in variances]
    total = sum(weights)
    return sum(w * x for w, x in zip(weights, values)) / total, 1.0 / total


def _best_split(values: Sequence[float], ses: Sequence[float]) -> Step | None:
    n = len(values)
    best: Step | None = None
    for k in range(MIN_SEGMENT_RUNS, n - MIN_SEGMENT_RUNS + 1):
        before, after = values[:k], values[k:]
        mean_b = sum(before) / k
        mean_a = sum(after) / (n - k)
        residual = sum((x - mean_b) ** 2 for x in before) + sum((x - mean_a) ** 2
                                                                  for x in after)
        within = sum(s * s for s in ses) / n
        scatter = max(0.0, residual / (n - 2) - within)   # run-to-run, beyond the intervals
        variances = [s * s + scatter for s in ses]
        m_b, v_b = _side(before, variances[:k])
        m_a, v_a = _side(after, variances[k:])
        se = math.sqrt(v_b + v_a)
        z = (m_a - m_b) / se
        if best is None or abs(z) > abs(best.z):
            best = Step(k, m_a - m_b, se, z, m_b)
    return best


def find_steps(values: Sequence[float], ses: Sequence[float], *,
               min_effect: float = DEFAULT_MIN_EFFECT,
               z_critical: float = Z_CRITICAL) -> list[Step]:
    """Steps in a sequence of log values with their standard errors, first index first."""
    ses = [max(s, SE_FLOOR) for s in ses]
    steps: list[Step] = []

    def search(lo: int, hi: int) -> None:
        if hi - lo < 2 * MIN_SEGMENT_RUNS:
            return
        step = _best_split(values[lo:hi], ses[lo:hi])
        if (step is None or abs(step.z) < z_critical
                or math.exp(abs(step.log_change)) - 1 < min_effect):
            return
        at = lo + step.at
        steps.append(Step(at, step.log_change, step.se, step.z, step.before_log))
        search(lo, at)
        search(at, hi)

    search(0, len(values))
    return sorted(steps, key=lambda s: s.at)


def _se_of(point: TrendPoint) -> float:
    return (math.log(point.ci_high) - math.log(point.ci_low)) / (2 * Z_95)


def detect_changes(points: Iterable[TrendPoint], *, min_effect: float = DEFAULT_MIN_EFFECT,
                   z_critical: float = Z_CRITICAL,
                   acknowledged: Mapping[tuple[str, str], int] | None = None) -> list[Change]:
    """Every change in every series of these history points, by run then instance.
    acknowledged: (instance, mode) -> a run whose level was accepted; that series is
    scanned from that run on (HistoryStore.acknowledged())."""
    changes: list[Change] = []
    acknowledged = acknowledged or {}
    for key, series in series_of(points).items():
        since = acknowledged.get((key.instance, key.mode))
        if since is not None:
            series = [p for p in series if p.run_id >= since]
        values = [math.log(p.ratio) for p in series]
        ses = [_se_of(p) for p in series]
        for step in find_steps(values, ses, min_effect=min_effect, z_critical=z_critical):
            first = series[step.at]
            changes.append(Change(
                key, step.at + 1, first.run_id, first.git_commit,
                math.exp(step.log_change), math.exp(step.log_change - Z_95 * step.se),
                math.exp(step.log_change + Z_95 * step.se), step.z,
                math.exp(step.before_log)))
    return sorted(changes, key=lambda c: (c.run, c.key.instance, c.key.mode))


def changes_to_json(changes: Sequence[Change]) -> dict:
    return {"changes": [c.to_json() for c in changes]}

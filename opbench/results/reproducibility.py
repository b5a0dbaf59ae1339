"""How well N independent runs of one selection agree: the check of a measurement protocol.

A protocol is judged by reproducibility, not by how narrow one run's interval looks: run
the same selection N times from scratch and ask, per instance, how far the ratio moves
(max/min over the runs), how far each side's median moves, how often one run's ratio lies
inside another run's 95% interval (about 0.8 or more for honest intervals; an interval that
ignores run-to-run variation covers far less), how many runs disagree on the verdict, and
how many seconds of measuring each instance cost. Pure: reads result records, returns
rows; tools/reproducibility.py runs the processes and prints.
"""
from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Any, Sequence

from opbench.results.records import InstanceRecord, Measurement, RunRecord

__all__ = ["InstanceAgreement", "agreement", "summary"]


@dataclass(frozen=True)
class InstanceAgreement:
    id: str
    key: str                      # measurement key: serial, async, serial+backward, ...
    runs: int
    ratios: tuple[float, ...]
    ratio_spread: float           # max / min of the runs' ratios
    median_spread: dict[str, float]   # per side, max / min of the runs' medians
    min_median_s: float           # the faster side's smallest median (for size filters)
    cross_coverage: float         # share of ordered pairs (i, j), i != j, with ratio_i in CI_j
    verdicts: tuple[str, ...]
    seconds_per_run: float        # median measuring time of the instance per run

    @property
    def verdict_flips(self) -> bool:
        return len(set(self.verdicts)) > 1


def _measurements(record: RunRecord
                  ) -> dict[tuple[str, str], tuple[InstanceRecord, Measurement]]:
    return {(inst.id, key): (inst, m) for inst in record.instances
            for key, m in inst.measurements.items()}


def agreement(records: Sequence[RunRecord]) -> list[InstanceAgreement]:
    """One row per (instance, measurement) measured in every run."""
    per_run = [_measurements(r) for r in records]
    if not per_run:
        return []
    common = set(per_run[0]).intersection(*per_run[1:])
    rows = []
    for inst_id, key in sorted(common):
        pairs = [run[(inst_id, key)] for run in per_run]
        ms = [m for _, m in pairs]
        ratios = tuple(float(m.ratio) for m in ms)
        sides = list(ms[0].summary)
        medians = {s: [float(m.summary[s].median_s) for m in ms] for s in sides}
        covered = total = 0
        for i, r in enumerate(ratios):
            for j, m in enumerate(ms):
                if i != j:
                    total += 1
                    covered += m.ci_low <= r <= m.ci_high
        rows.append(InstanceAgreement(
            id=inst_id, key=key, runs=len(ms), ratios=ratios,
            ratio_spread=max(ratios) / min(ratios),
            median_spread={s: max(v) / min(v) for s, v in medians.items()},
            min_median_s=min(min(v) for v in medians.values()),
            cross_coverage=covered / total if total else float("nan"),
            verdicts=tuple(str(m.verdict) for m in ms),
            seconds_per_run=median(float(inst.duration_s or 0.0) for inst, _ in pairs)))
    return rows


def summary(rows: Sequence[InstanceAgreement], min_time_s: float = 10e-6) -> dict[str, Any]:
    """The figures README quotes, over all rows and over rows whose both sides take at least
    min_time_s (tiny ops are dispatch-bound and noisier; the bar is stated for the rest)."""
    def figures(subset: Sequence[InstanceAgreement]) -> dict[str, Any]:
        if not subset:
            return {"rows": 0}
        spreads = sorted(r.ratio_spread for r in subset)
        pairs = sum(r.runs * (r.runs - 1) for r in subset)
        covered = sum(r.cross_coverage * r.runs * (r.runs - 1) for r in subset)
        return {"rows": len(subset), "ratio_spread_median": median(spreads),
                "ratio_spread_max": spreads[-1],
                "cross_coverage": covered / pairs if pairs else float("nan"),
                "verdict_flips": sum(r.verdict_flips for r in subset),
                "seconds_per_instance_median": median(r.seconds_per_run for r in subset),
                "seconds_per_instance_max": max(r.seconds_per_run for r in subset)}
    large = [r for r in rows if r.min_median_s >= min_time_s]
    return {"all": figures(rows), f"both sides >= {min_time_s * 1e6:g} us": figures(large)}

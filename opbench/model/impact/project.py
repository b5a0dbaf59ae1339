"""From replay timings to what a model loses: projected step time per framework, and per
call signature and per API the time lost (pure; the measuring is impact.py's).

- A framework's projected step time is its replay's step time (all covered calls back to
  back, one sync): the mean over processes of each process's mean step (step_time), with a
  t interval over the processes (the process is the unit). The mean, because steps add up:
  a training run's wall time is its steps' mean times their count. MindSpore's speed here
  switches between modes within a process, for seconds at a time (one port process of 40
  steps: 26 steps at 52-94 ms, 9 at 188-214, 5 at 112-117), and a quarter to half of fresh
  processes land mostly in a slow mode, so the median of a few processes lands on either
  mode (6 drawn from 32 measured processes: 64-148 ms, 5th-95th percentile; their mean
  74-148, of 16 86-131). impact.py adds processes where they split.
  Each process's median is kept to show the modes. One process: its samples' min..max,
  flagged. Per-call times (call_times) stay medians (estimate_time), then scaled to the step.
- The ratio reference/target of the step times pairs the two frameworks' processes in the
  order they ran (A B, B A, ...) and is opbench's paired ratio (verdicts/stats.py) with the
  process pair as the group.
- A call's in-context time is its latency measured inside the replay (synced after each
  call), scaled per framework so the calls add up to the un-instrumented step time (the
  scale is reported: 1 means the calls did not overlap). So the per-API lost times add up
  to the projected difference.
- lost = calls x (target - reference) per call, with a conservative interval: the ends of
  the two per-call intervals against each other.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Mapping, Sequence


from opbench.verdicts.stats import (DEFAULT_CONFIDENCE, median_interval, ratio_estimate,
                                    student_t_quantile)

__all__ = ["Estimate", "FrameworkTiming", "SignatureRow", "ApiRow", "estimate_time",
           "step_time", "modes_apart", "processes_split", "MODES_APART", "step_ratio", "call_times",
           "signature_rows", "api_rows"]


@dataclass(frozen=True)
class Estimate:
    value: float
    low: float
    high: float
    processes: int
    method: str
    # each process's median: MindSpore's come in modes here (62 or ~190 ms a step for one
    # script), which a reader sees only in these
    process_medians: tuple[float, ...] = ()

    def scaled(self, k: float) -> "Estimate":
        return Estimate(self.value * k, self.low * k, self.high * k, self.processes,
                        self.method, tuple(v * k for v in self.process_medians))

    def as_json(self) -> dict[str, Any]:
        return {"estimate": self.value, "ci_low": self.low, "ci_high": self.high,
                "processes": self.processes, "method": self.method,
                "process_medians": list(self.process_medians)}


@dataclass(frozen=True)
class FrameworkTiming:
    framework: str
    step_samples: tuple[tuple[float, ...], ...]            # per process
    per_call: tuple[tuple[tuple[float, ...], ...], ...]   # per process, per call: latencies


def estimate_time(groups: Sequence[Sequence[float]],
                  confidence: float = DEFAULT_CONFIDENCE) -> Estimate:
    """A time from samples grouped by process (see the module doc)."""
    usable = [list(g) for g in groups if len(g) and all(v >= 0 for v in g)]
    if not usable:
        return Estimate(0.0, 0.0, 0.0, 0, "no samples")
    if len(usable) == 1:
        values = usable[0]
        return Estimate(float(statistics.median(values)), float(min(values)),
                        float(max(values)), 1, "one process: min..max of its samples")
    medians = [statistics.median(g) for g in usable]
    if min(medians) <= 0:
        # a difference of two times (a backward: value_and_grad less the forward) can be 0
        # in a process: the median of every sample then, not of a median of zeros
        everything = [v for g in usable for v in g]
        return Estimate(float(statistics.median(everything)), float(min(medians)),
                        float(max(medians)), len(usable),
                        "median of all samples, min..max of the process medians")
    found = median_interval(medians, confidence)
    return Estimate(found.median, found.low, found.high, len(medians),
                    f"median of {len(medians)} process medians, order-statistic interval "
                    f"({found.coverage:.1%})", tuple(float(m) for m in medians))


def step_time(groups: Sequence[Sequence[float]],
              confidence: float = DEFAULT_CONFIDENCE) -> Estimate:
    """A framework's step time from its replay processes' step samples (module doc): the
    mean of the process means with a t interval over processes; each process's median kept."""
    usable = [list(g) for g in groups if len(g) and all(v >= 0 for v in g)]
    if len(usable) < 2:
        return estimate_time(usable, confidence)
    means = [statistics.fmean(g) for g in usable]
    n = len(means)
    center = statistics.fmean(means)
    half = (student_t_quantile(1.0 - (1.0 - confidence) / 2.0, n - 1)
            * statistics.stdev(means) / math.sqrt(n))
    return Estimate(center, max(center - half, 0.0), center + half, n,
                    f"mean of {n} process means, t interval over processes "
                    f"({confidence:.0%})",
                    tuple(float(statistics.median(g)) for g in usable))


# A framework whose slowest replay process median is this many times its fastest ran in
# modes (MindSpore here: 62 or ~190 ms a step): impact.py runs more of its processes and the
# views list each one's median.
MODES_APART = 1.5


def modes_apart(process_medians: Sequence[float]) -> float:
    """Slowest process median over the fastest (1 for fewer than two processes)."""
    values = [v for v in process_medians if v > 0]
    return max(values) / min(values) if values else 1.0


def processes_split(estimate: Estimate, apart: float) -> bool:
    """Whether a framework's processes ran in different modes: the slowest process median
    at least `apart` times the fastest."""
    return modes_apart(estimate.process_medians) >= apart


def step_ratio(reference: FrameworkTiming, target: FrameworkTiming) -> dict[str, float]:
    """reference/target step time, rounds paired within each pair of processes."""
    ref, tgt, groups = [], [], []
    for g, (a, b) in enumerate(zip(reference.step_samples, target.step_samples)):
        n = min(len(a), len(b))
        ref += a[:n]
        tgt += b[:n]
        groups += [g] * n
    est = ratio_estimate(ref, tgt, groups=groups if len(set(groups)) > 1 else None)
    return {"ratio": est.ratio, "ci_low": est.ci_low, "ci_high": est.ci_high,
            "method": est.method, "too_few_rounds": est.too_few_rounds}


@dataclass(frozen=True)
class CallTimes:
    """Per call of the step: in-context time (scaled) with its interval, for one framework."""
    median: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    scale: float


def call_times(timing: FrameworkTiming, step_s: float, covered: Sequence[bool]) -> CallTimes:
    n = len(covered)
    raw: list[Estimate] = []
    for i in range(n):
        groups = [p[i] for p in timing.per_call if i < len(p)]
        raw.append(estimate_time(groups) if covered[i] else Estimate(0.0, 0.0, 0.0, 0, ""))
    total = sum(e.value for e in raw)
    scale = step_s / total if total > 0 else 1.0
    return CallTimes(tuple(e.value * scale for e in raw), tuple(e.low * scale for e in raw),
                     tuple(e.high * scale for e in raw), scale)


@dataclass(frozen=True)
class SignatureRow:
    api: str                       # as traced
    signature: str                 # the inputs: shapes, dtypes, literal arguments
    mapped_api: str                # what replayed it in the other framework
    calls: int                     # in the measured region (per step x steps)
    reference_s: float             # per call, in context
    target_s: float
    ratio: float
    ratio_low: float
    ratio_high: float
    lost_s: float                  # calls x (target - reference)
    lost_low: float
    lost_high: float
    traced_s: float                # traced time of these calls in the region
    reference_low: float = 0.0     # the per-call intervals the ratio and lost come from
    reference_high: float = 0.0
    target_low: float = 0.0
    target_high: float = 0.0
    members: tuple[int, ...] = ()  # the step's calls of this signature


@dataclass(frozen=True)
class ApiRow:
    api: str
    mapped_api: str
    calls: int
    reference_s: float             # per call (mean over its signatures, weighted by calls)
    target_s: float
    ratio: float
    ratio_low: float
    ratio_high: float
    lost_s: float
    lost_low: float
    lost_high: float
    share: float                   # of the total positive lost time
    signatures: int


def signature_rows(groups: Mapping[tuple[str, str, str], Sequence[int]], steps: int,
                   reference: CallTimes, target: CallTimes,
                   traced_ns: Sequence[int]) -> list[SignatureRow]:
    """groups: (api, signature, mapped api) -> the call positions of one step."""
    rows = []
    for (api, signature, mapped), members in groups.items():
        per_step = len(members)
        calls = per_step * steps
        r = sum(reference.median[i] for i in members) / per_step
        t = sum(target.median[i] for i in members) / per_step
        r_lo = sum(reference.low[i] for i in members) / per_step
        r_hi = sum(reference.high[i] for i in members) / per_step
        t_lo = sum(target.low[i] for i in members) / per_step
        t_hi = sum(target.high[i] for i in members) / per_step
        ratio = r / t if t > 0 else math.nan
        rows.append(SignatureRow(
            api=api, signature=signature, mapped_api=mapped, calls=calls, reference_s=r,
            target_s=t, ratio=ratio, ratio_low=r_lo / t_hi if t_hi > 0 else math.nan,
            ratio_high=r_hi / t_lo if t_lo > 0 else math.nan, lost_s=calls * (t - r),
            lost_low=calls * (t_lo - r_hi), lost_high=calls * (t_hi - r_lo),
            traced_s=steps * sum(traced_ns[i] for i in members) / 1e9,
            reference_low=r_lo, reference_high=r_hi, target_low=t_lo, target_high=t_hi,
            members=tuple(members)))
    return sorted(rows, key=lambda row: row.lost_s, reverse=True)


def api_rows(rows: Sequence[SignatureRow]) -> list[ApiRow]:
    by_api: dict[tuple[str, str], list[SignatureRow]] = {}
    for row in rows:
        by_api.setdefault((row.api, row.mapped_api), []).append(row)
    total_lost = sum(max(0.0, r.lost_s) for r in rows)
    out = []
    for (api, mapped), members in by_api.items():
        calls = sum(r.calls for r in members)
        ref = sum(r.reference_s * r.calls for r in members)
        tgt = sum(r.target_s * r.calls for r in members)
        ref_lo = sum(r.reference_low * r.calls for r in members)
        ref_hi = sum(r.reference_high * r.calls for r in members)
        tgt_lo = sum(r.target_low * r.calls for r in members)
        tgt_hi = sum(r.target_high * r.calls for r in members)
        lost = sum(r.lost_s for r in members)
        out.append(ApiRow(
            api=api, mapped_api=mapped, calls=calls, reference_s=ref / calls,
            target_s=tgt / calls, ratio=ref / tgt if tgt > 0 else math.nan,
            ratio_low=ref_lo / tgt_hi if tgt_hi > 0 else math.nan,
            ratio_high=ref_hi / tgt_lo if tgt_lo > 0 else math.nan, lost_s=lost,
            lost_low=sum(r.lost_low for r in members),
            lost_high=sum(r.lost_high for r in members),
            share=max(0.0, lost) / total_lost if total_lost > 0 else 0.0,
            signatures=len(members)))
    return sorted(out, key=lambda row: row.lost_s, reverse=True)

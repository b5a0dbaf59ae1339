"""Size-sweep decomposition: time per call = fixed cost + work / throughput, per framework.

A case measured at 3 or more sizes tells apart the two costs a single ratio mixes: what
every call pays whatever its size (Python dispatch, launch, sync: the intercept) and what
each byte or FLOP costs (the kernel: the slope). The **kernel ratio** is the ratio of the
two sides' marginal throughputs, in the run's convention (reference time / target time,
below 1: the target slower), so a MindSpore op that pays 30 us more per call but runs the
same kernel shows a kernel ratio near 1 while its raw ratio at small sizes is 0.05.

Why weighted least squares on the medians, with the stated errors, and not a bootstrap
over instances: the library's sweeps have 3 sizes, and a bootstrap over 3 points has 10
distinct resamples, most of them degenerate (one size drawn thrice). Each point's own
error is known instead, from its rounds: the standard error of the median. Rounds inside
one process cannot see a process's own speed (docs/measurement.md: 2-8% between fresh
processes), so each error is at least REL_ERROR_FLOOR of the time. The covariance of the
fit is the textbook (X'WX)^-1; when the points scatter more than their errors allow
(chi^2 per degree of freedom above 1) it is scaled up by that factor (Birge ratio), never
down, so a model that does not fit widens its own intervals. Intervals use the normal
quantile (the errors are given, not estimated from the 1 residual degree of freedom a
3-point fit has); tests/unit/test_gapmap_decompose.py checks their coverage by simulation.

Pure: numbers in, frozen records out; the report prints them.
"""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Mapping, Sequence

import numpy as np

from opbench.gapmap.sweep import OK, OVERHEAD_BOUND, POOR, Point, SideFit, Sweep, by_instance
from opbench.gapmap.work import Work, work_of
from opbench.results.records import InstanceRecord, Measurement, RunRecord, SideSummary

# Fewest distinct sizes worth a 2-parameter fit (2 would fit any two points exactly).
MIN_SIZES = 3
# Smallest relative error of one size's median: the between-process spread of a side's time
# (2-8% measured here), which rounds within one process cannot see.
REL_ERROR_FLOOR = 0.03
# Normal quantile of a two-sided 95% interval.
Z95 = 1.959963984540054
# Below this weighted R^2 the straight line explains too little of how time grows with
# work to read a throughput off it (a cache cliff, a kernel switch between sizes).
MIN_R2 = 0.9
# Scatter this many times the stated variance means the line is the wrong model, whatever
# R^2 says (R^2 is high for any steep sweep).
MAX_CHI2_PER_DOF = 25.0
# A larger size this many standard errors faster than a smaller one is not noise.
NON_MONOTONE_SIGMAS = 3.0
# Spread of a median: its standard error is ~1.2533 sigma / sqrt(n) for normal data, and
# sigma ~ 1.4826 MAD.
_MEDIAN_SE_FACTOR = 1.2533 * 1.4826

# Parameters that select a variant of the operator rather than its size: instances that
# differ in them are separate sweeps (a sum over dim 0 is another kernel than over dim -1).
VARIANT_PARAMS = frozenset({"dim", "dims", "axis", "axes", "keepdim", "groups", "stride",
                            "padding", "dilation", "kernel_size", "reduction", "mode",
                            "p", "k", "approximate", "align_corners", "scale_factor"})


# -- the fit --------------------------------------------------------------------------------

def fit_line(work: Sequence[float], time_s: Sequence[float],
             error_s: Sequence[float]) -> SideFit:
    """Weighted fit of time = fixed + per_unit x work, with the errors as given (each
    already floored by the caller), judged for quality. Needs >= 3 distinct work values."""
    w = np.asarray(work, float)
    t = np.asarray(time_s, float)
    s = np.asarray(error_s, float)
    if len(set(w.tolist())) < MIN_SIZES or np.any(s <= 0):
        raise ValueError(f"a fit needs {MIN_SIZES} distinct sizes and positive errors")
    weights = 1.0 / s**2
    x = np.column_stack([np.ones_like(w), w])
    xtwx = x.T @ (x * weights[:, None])
    cov = np.linalg.inv(xtwx)
    fixed, slope = cov @ (x.T @ (weights * t))
    resid = t - (fixed + slope * w)
    dof = len(w) - 2
    chi2 = float(np.sum(weights * resid**2))
    chi2_dof = chi2 / dof if dof > 0 else None
    if chi2_dof is not None and chi2_dof > 1.0:
        cov = cov * chi2_dof              # Birge: scatter beyond the errors widens, never narrows
    fixed_se, slope_se = math.sqrt(cov[0, 0]), math.sqrt(cov[1, 1])
    mean_t = np.sum(weights * t) / np.sum(weights)
    total = float(np.sum(weights * (t - mean_t) ** 2))
    r2 = 1.0 - chi2 / total if total > 0 else 0.0
    fixed_ci = (fixed - Z95 * fixed_se, fixed + Z95 * fixed_se)
    status, reason = _judge(w, t, s, slope, slope_se, fixed_ci, r2, chi2_dof)
    throughput = throughput_ci = None
    if status == OK:
        throughput = 1.0 / slope
        low_slope, high_slope = slope - Z95 * slope_se, slope + Z95 * slope_se
        throughput_ci = (1.0 / high_slope, 1.0 / low_slope)
    return SideFit(status, reason, float(fixed), (float(fixed_ci[0]), float(fixed_ci[1])),
                   float(slope), slope_se, throughput, throughput_ci, r2, chi2_dof)


def _judge(w, t, s, slope, slope_se, fixed_ci, r2, chi2_dof) -> tuple[str, str]:
    order = np.argsort(w)
    tw, sw = t[order], s[order]
    for i in range(len(tw) - 1):
        if tw[i + 1] < tw[i] - NON_MONOTONE_SIGMAS * math.hypot(sw[i], sw[i + 1]):
            return POOR, "time falls as work grows (not one kernel across the sweep)"
    if chi2_dof is not None and chi2_dof > MAX_CHI2_PER_DOF:
        return POOR, (f"points scatter {math.sqrt(chi2_dof):.0f}x their errors around the "
                      f"line")
    if slope + Z95 * slope_se < 0:
        return POOR, "negative cost per unit of work"
    if fixed_ci[1] < 0:
        return POOR, "negative fixed cost (time grows faster than linearly with work)"
    if slope - Z95 * slope_se <= 0:
        # the time does not measurably grow with work: every size pays mostly per-call cost
        return OVERHEAD_BOUND, "time does not grow measurably with work across the sweep"
    if r2 < MIN_R2:
        return POOR, f"a line explains too little (R^2 {r2:.2f} < {MIN_R2})"
    return OK, ""


def kernel_ratio(reference: SideFit, target: SideFit
                 ) -> tuple[float | None, tuple[float, float] | None]:
    """Target throughput / reference throughput (= reference slope / target slope), with a
    95% interval from the delta method on the log (the two fits are independent). None
    unless both fits are OK."""
    if reference.status != OK or target.status != OK:
        return None, None
    log_ratio = math.log(reference.per_unit_s) - math.log(target.per_unit_s)
    se = math.hypot(reference.per_unit_se_s / reference.per_unit_s,
                    target.per_unit_se_s / target.per_unit_s)
    return math.exp(log_ratio), (math.exp(log_ratio - Z95 * se), math.exp(log_ratio + Z95 * se))


# -- from a results record ------------------------------------------------------------------

def median_error_s(summary: SideSummary) -> float:
    """Standard error of a side's median time from its rounds, floored (REL_ERROR_FLOOR)."""
    n = max(int(summary.n or 1), 1)
    median = float(summary.median_s)
    from_rounds = _MEDIAN_SE_FACTOR * float(summary.mad_s or 0.0) / math.sqrt(n)
    return max(from_rounds, REL_ERROR_FLOOR * median)


def variant_of(params: Mapping[str, Any]) -> str:
    """The parameters that are not sizes: strings, booleans and VARIANT_PARAMS."""
    parts = [f"{k}={v}" for k, v in params.items()
             if k in VARIANT_PARAMS or isinstance(v, (str, bool)) or v is None]
    return ",".join(parts)


Member = tuple[Work, InstanceRecord, Measurement]


def sweeps(record: RunRecord) -> list[Sweep]:
    """Every sweep of the record with MIN_SIZES or more sizes, fitted for both sides."""
    ref, tgt = record.config.reference, record.config.target
    groups: dict[tuple[str, str, str], list[Member]] = defaultdict(list)
    ops: dict[str, str] = {}
    for inst in record.instances:
        work = work_of(inst)
        if work is None:
            continue
        ops[inst.case] = inst.op
        for key, m in inst.measurements.items():
            if all(side in m.summary for side in (ref, tgt)):
                groups[(inst.case, key, variant_of(inst.params))].append((work, inst, m))
    found = []
    for (case, key, variant), members in groups.items():
        sweep = _fit_group(case, ops[case], key, variant, members, ref, tgt)
        if sweep is not None:
            found.append(sweep)
    return found


def _fit_group(case, op, key, variant, members, ref, tgt) -> Sweep | None:
    units = {work.unit for work, _, _ in members}
    if len(units) != 1 or len({work.amount for work, _, _ in members}) < MIN_SIZES:
        return None
    members = sorted(members, key=lambda item: item[0].amount)
    points = tuple(
        Point(inst.id, work.amount,
              {side: m.summary[side].median_s for side in (ref, tgt)},
              {side: median_error_s(m.summary[side]) for side in (ref, tgt)},
              m.ratio, (m.ci_low, m.ci_high))
        for work, inst, m in members)
    fits = {side: fit_line([p.work for p in points], [p.time_s[side] for p in points],
                           [p.error_s[side] for p in points]) for side in (ref, tgt)}
    ratio, ci = kernel_ratio(fits[ref], fits[tgt])
    return Sweep(case, op, key, variant, units.pop(), members[0][0].source, points, fits,
                 ratio, ci, ref, tgt)


__all__ = ["Point", "SideFit", "Sweep", "fit_line", "kernel_ratio", "sweeps", "by_instance",
           "median_error_s", "variant_of", "OK", "POOR", "OVERHEAD_BOUND", "MIN_SIZES",
           "REL_ERROR_FLOOR"]

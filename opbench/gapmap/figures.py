"""The gap map's figures written into the results record, so CI reads them from the JSON
instead of recomputing a report: each measurement's `cause` (SLOW ones), the size-sweep
`fit` it belongs to (each side's fixed cost and throughput) and each side's `roofline`
point; with `--profile`, each side's kernel/host split and the profile's `profile_cause`
(inside.py). Effective cores and memory are the runner's (already in the record).

A front door calls `with_figures` on the finished record before its last save (the
results layer below cannot: the gap map reads the record it would have to write). The
views then read the stored figures (attribute.stored_attributions,
roofline.stored_roofline) and compute them only for an older file that lacks them. Pure.
"""
from __future__ import annotations

from typing import Any

from opbench.gapmap.attribute import CAUSE_KINDS, Attribution, attribute
from opbench.gapmap.decompose import sweeps
from opbench.gapmap.inside import inside_figures
from opbench.gapmap.roofline import roofline
from opbench.gapmap.sweep import Sweep, by_instance
from opbench.results.records import Measurement, RunRecord

__all__ = ["FIGURE_KEYS", "with_figures", "fit_figures"]

# The keys this module writes into a measurement (and replaces when it runs again).
FIGURE_KEYS = ("cause", "fit", "roofline", "profile_cause")


def fit_figures(sweep: Sweep) -> dict[str, Any]:
    """A sweep's fits as JSON: its name, sizes, kernel ratio and each side's fixed cost and
    throughput (units per second of `unit`; null unless the fit is ok)."""
    return {
        "sweep": sweep.name, "unit": sweep.unit, "sizes": len(sweep.points),
        "kernel_ratio": sweep.kernel_ratio,
        "kernel_ci": list(sweep.kernel_ci) if sweep.kernel_ci else None,
        "sides": {side: {"status": f.status, "reason": f.reason, "fixed_s": f.fixed_s,
                         "fixed_ci_s": list(f.fixed_ci_s), "throughput": f.throughput,
                         "throughput_ci": list(f.throughput_ci) if f.throughput_ci else None}
                  for side, f in sweep.fits.items()},
    }


def _cause_figures(a: Attribution) -> dict[str, Any]:
    return {"kind": CAUSE_KINDS[a.cause], "basis": a.basis,
            "overhead_share": a.overhead_share, "source": "sweep"}


def with_figures(record: RunRecord) -> RunRecord:
    """The record with every measurement's cause (SLOW), fit and roofline computed afresh
    from its samples (a merged or re-judged record gets them recomputed too)."""
    if not record.config.timing:
        return record
    found = sweeps(record)
    causes = {(a.instance_id, a.key): a for a in attribute(record, found)}
    sweep_of = by_instance(found)
    points = roofline(record)
    instances = []
    for inst in record.instances:
        if not inst.measurements:
            instances.append(inst)
            continue
        measurements = {}
        for key, m in inst.measurements.items():
            changes: dict[str, Any] = {
                "cause": (_cause_figures(causes[(inst.id, key)])
                          if (inst.id, key) in causes else None),
                "fit": fit_figures(s) if (s := sweep_of.get((inst.id, key))) else None,
                "roofline": {side: p.as_dict()
                             for side, p in points.get((inst.id, key), {}).items()} or None,
            }
            kept = {k: v for k, v in m.to_dict().items() if k not in FIGURE_KEYS}
            kept.update({k: v for k, v in changes.items() if v is not None})
            measurements[key] = Measurement.from_dict(kept)
        if inst.profile:
            inside = inside_figures(
                inst, record.config.reference, record.config.target,
                {key: m.cause["kind"] for key, m in measurements.items() if m.cause})
            measurements = {key: (m.replace(profile_cause=inside.causes[key])
                                  if key in inside.causes else m)
                            for key, m in measurements.items()}
            instances.append(inst.replace(measurements=measurements, profile=inside.profile))
            continue
        instances.append(inst.replace(measurements=measurements))
    return record.replace(instances=tuple(instances))

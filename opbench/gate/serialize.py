"""The gate's machine-readable report (`opbench gate --report gate.json`)."""
from __future__ import annotations

from typing import Any

from opbench.gate.decision import Decision, PathChange
from opbench.gate.evaluate import GateResult, InstanceResult

__all__ = ["GATE_REPORT_VERSION", "result_as_dict"]

# 1: first format (opbench 0.1). Fields added since (each path's method, processes and
# between_sd; `confidence`, the last look's when the stages stopped instances early: 0.95
# otherwise) are additions a version-1 reader ignores.
GATE_REPORT_VERSION = 1


def _path(path: PathChange | None) -> dict[str, Any] | None:
    if path is None:
        return None
    e = path.estimate
    return {"change": e.change, "ci_low": e.ci_low, "ci_high": e.ci_high,
            "verdict": path.verdict.value, "n_baseline": e.n_baseline, "n_current": e.n_current,
            "too_few_rounds": e.too_few_rounds, "method": e.method,
            "n_processes_baseline": e.n_processes_baseline,
            "n_processes_current": e.n_processes_current, "between_sd": e.between_sd}


def _decision(d: Decision | None) -> dict[str, Any] | None:
    if d is None:
        return None
    return {"verdict": d.verdict.value, "decided_by": d.decided_by, "reason": d.reason,
            "ratio": _path(d.ratio), "target_time": _path(d.target_time),
            "reference_time": _path(d.reference_time)}


def _instance(inst: InstanceResult) -> dict[str, Any]:
    return {
        "id": inst.id, "baseline_id": inst.baseline_id, "op": inst.op,
        "verdict": inst.verdict.value, "decided_by": inst.decided_by, "reason": inst.reason,
        "min_effect": inst.min_effect, "noise_floor": inst.noise_floor,
        "remeasured": inst.remeasured,
        "stage1_verdict": inst.stage1_verdict.value if inst.stage1_verdict else None,
        "current_verdict": inst.current_verdict, "current_ratio": inst.current_ratio,
        "baseline_verdict": inst.baseline_verdict, "baseline_ratio": inst.baseline_ratio,
        "measurements": [{"key": m.key, "verdict": m.verdict.value, "note": m.note,
                          "stage1": _decision(m.decision.first) if m.decision else None,
                          "stage2": _decision(m.decision.second) if m.decision else None}
                         for m in inst.measurements],
    }


def result_as_dict(result: GateResult, **context: Any) -> dict[str, Any]:
    """The whole result as JSON-able data; `context` (paths, commands) is stored as given."""
    return {"gate_report_version": GATE_REPORT_VERSION, "exit_code": result.exit_code,
            "counts": result.counts(), "same_machine": result.same_machine,
            "min_effect": result.settings.min_effect,
            "min_effect_overrides": [list(o) for o in result.settings.min_effect_overrides],
            "fail_on_slow": result.settings.fail_on_slow,
            "confidence": result.confidence,
            "notes": [n.as_dict() for n in result.notes],
            "instances": [_instance(i) for i in result.worst_first()], **context}

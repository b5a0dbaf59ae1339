"""The `model` object `opbench model --json` writes (schema: opbench/schema/model.schema.json).

Times are seconds. `traced_s` and `projected_s` cover the measured region: the steady
steps of the captured run. Per API and per signature rows give per-call times in context
(inside the replay) and `lost_s = calls x (target_s - reference_s)` with its interval.
"""
from __future__ import annotations

import json
import math
from importlib import resources
from typing import Any

from opbench.model.impact import ModelImpact

__all__ = ["MODEL_FORMAT", "impact_json", "model_schema"]

# Version of the `model` object: bump and say what changed when its shape changes.
#   1  first format
MODEL_FORMAT = 1


def model_schema() -> dict[str, Any]:
    text = resources.files("opbench").joinpath("schema/model.schema.json").read_text()
    return json.loads(text)


def _num(value: float | None) -> float | None:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return None
    return float(value)


def _row(row: Any, other: str, reference: str) -> dict[str, Any]:
    return {
        "api": row.api, "mapped_api": row.mapped_api, "calls": row.calls,
        "reference_s": _num(row.reference_s), "target_s": _num(row.target_s),
        "ratio": _num(row.ratio), "ratio_ci": [_num(row.ratio_low), _num(row.ratio_high)],
        "lost_s": _num(row.lost_s), "lost_ci": [_num(row.lost_low), _num(row.lost_high)],
    }


def impact_json(impact: ModelImpact) -> dict[str, Any]:
    program, step = impact.program, impact.step
    projected = {}
    for framework in (impact.reference, impact.target):
        e = impact.projected_s(framework)
        if e is not None:
            projected[framework] = {"estimate": e.value, "ci_low": e.low, "ci_high": e.high,
                                    "processes": e.processes, "method": e.method,
                                    "launch": impact.launch.get(framework),
                                    "scale": _num(impact.scale.get(framework))}
    region = impact.region
    return {
        "format": MODEL_FORMAT,
        "command": impact.command,
        "interpreter": impact.interpreter,
        "reference": impact.reference,
        "target": impact.target,
        "traced_framework": impact.traced_framework,
        "traced_version": program.version,
        "threads": impact.threads,
        "traced_s": impact.traced_s,
        "covered_traced_s": impact.covered_traced_s,
        "projected_s": projected,
        "ratio": {k: _num(v) if isinstance(v, float) else v
                  for k, v in impact.step_ratio.items()},
        "self_check": _num(impact.self_check),
        "replayed_calls_s": {fw: s * impact.steps for fw, s in impact.call_sum_s.items()},
        "coverage": impact.coverage,
        "region": {"rule": region.rule, "steps": impact.steps,
                   "calls_per_step": len(step.calls),
                   "excluded_calls": region.excluded_calls,
                   "excluded_s": region.excluded_ns / 1e9, "note": region.note},
        "script": {"status": program.script_status, "error": program.script_error,
                   "captured_calls": len(program.calls),
                   "dropped_calls": program.dropped_calls},
        "apis": [{**_row(r, impact.other, impact.reference), "share": r.share,
                  "signatures": r.signatures} for r in impact.apis],
        "signatures": [{**_row(r, impact.other, impact.reference),
                        "signature": r.signature, "traced_s": r.traced_s}
                       for r in impact.signatures],
        "not_covered": impact.uncovered,
        "mismatches": impact.mismatches,
        "errors": impact.errors,
        "measuring_s": impact.measuring_s,
    }

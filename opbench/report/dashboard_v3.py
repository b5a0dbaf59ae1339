"""A results record, or the run history, as the PyTorch OSS benchmark dashboard's "v3" JSON:
one record per instance, measurement mode and metric (each side's median time, the ratio
with its 95% interval in the metric's extra_info), written as JSON lines so a dashboard's
loader (ClickHouse's JSONEachRow, any JSON-lines reader) takes the file as it is.

The shape follows the published records (benchmark{name, mode, dtype, extra_info},
model{name, type, backend, origins}, metric{name, benchmark_values, target_value,
extra_info}, runners[...]); opbench/schema/dashboard_v3.schema.json checks it.
"""
from __future__ import annotations

import json
import os
from typing import Any, Iterable, Iterator, Sequence

from opbench.results.history import TrendPoint
from opbench.results.records import RunRecord

__all__ = ["BENCHMARK_NAME", "history_records", "run_records", "write_json_lines"]

BENCHMARK_NAME = "opbench"


def _record(instance: str, op: str, mode: str, dtype: str, metric: str, value: float,
            extra: dict[str, Any], backend: str, runner: dict[str, Any],
            info: dict[str, Any]) -> dict[str, Any]:
    return {"benchmark": {"name": BENCHMARK_NAME, "mode": mode, "dtype": dtype,
                          "extra_info": info},
            "model": {"name": instance, "type": "operator", "backend": backend,
                      "origins": [op]},
            "metric": {"name": metric, "benchmark_values": [value], "target_value": None,
                       "extra_info": extra},
            "runners": [runner]}


def _metrics(reference: str, target: str, ref_s: float | None, tgt_s: float | None,
             ratio: float | None, ci_low: float | None, ci_high: float | None
             ) -> Iterator[tuple[str, float, dict[str, Any]]]:
    if ref_s is not None:
        yield f"{reference}_median_s", ref_s, {}
    if tgt_s is not None:
        yield f"{target}_median_s", tgt_s, {}
    if ratio is not None:
        yield f"ratio_{reference}_over_{target}", ratio, {"ci_low": ci_low, "ci_high": ci_high,
                                                          "confidence": 0.95}


def run_records(record: RunRecord) -> list[dict[str, Any]]:
    env, config = record.environment, record.config
    reference, target = config.reference, config.target
    versions = record.framework_versions()
    runner = {"name": env.machine_id or "unknown", "type": config.device,
              "cpu_info": env.cpu_model or "", "cpu_count": env.cpu_count}
    backend = f"{target} {versions.get(target, '?')} vs {reference} {versions.get(reference, '?')}"
    out = []
    for inst in record.instances:
        dtype = inst.inputs[0].dtype if inst.inputs else ""
        for mode, m in inst.measurements.items():
            info = {"commit": env.git_commit, "created_utc": record.created_utc,
                    "threads": config.threads, "verdict": m.verdict.value,
                    "params": dict(inst.params)}
            for name, value, extra in _metrics(reference, target, m.median_s(reference),
                                               m.median_s(target), m.ratio, m.ci_low,
                                               m.ci_high):
                out.append(_record(inst.id, inst.op, mode, dtype, name, value, extra,
                                   backend, runner, info))
    return out


def history_records(points: Iterable[TrendPoint], reference: str = "torch",
                    target: str = "mindspore") -> list[dict[str, Any]]:
    out = []
    for p in points:
        if p.mode == "-":
            continue
        runner = {"name": p.machine_id or "unknown", "type": "cpu"}
        backend = f"{target} {p.target_version or '?'} vs {reference} {p.reference_version or '?'}"
        info = {"commit": p.git_commit, "created_utc": p.created_utc, "run": p.run_id,
                "threads": p.threads, "verdict": p.verdict}
        for name, value, extra in _metrics(reference, target, p.reference_median_s,
                                           p.target_median_s, p.ratio, p.ci_low, p.ci_high):
            out.append(_record(p.instance_id, p.op, p.mode, "", name, value, extra, backend,
                               runner, info))
    return out


def write_json_lines(records: Sequence[dict[str, Any]], path: str | os.PathLike) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, sort_keys=True) + "\n")

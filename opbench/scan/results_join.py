"""Join scan rows with measured results (`opbench run` JSON), by API name.

The results file lists measured instances, each naming the API it ran in both frameworks:
    {"schema_version": 1, "instances": [{"id": ..., "apis": {"torch": ..., "mindspore": ...},
      "verdict": ..., "measurements": {"serial": {"ratio", "ci_low", "ci_high", "verdict"},
                                       "async": {...}}}]}
An API measured by several instances (a sweep over shapes, or serial and async modes) is
reported by its worst — lowest — ratio, with that measurement's verdict and the number of
instances. Every key is optional: a record missing what the join needs is skipped, never fatal.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Any, Iterable

from opbench.scan.coverage import normalise_case_api

# When nothing carries a ratio (every instance failed or mismatched), the most severe verdict
# speaks for the API; verdicts not listed here rank after these.
VERDICT_SEVERITY = ("ERROR", "MISMATCH", "SLOW", "INCONCLUSIVE", "PASS")


@dataclass(frozen=True)
class Measurement:
    instance_id: str
    mode: str                   # serial | async | "" (the instance's own verdict)
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    verdict: str


@dataclass(frozen=True)
class MeasuredApi:
    """What the results say about one API (and its mapped counterpart)."""
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    verdict: str
    mode: str
    instance_id: str
    instances: int


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _instance_measurements(record: dict, instance_id: str) -> list[Measurement]:
    found: list[Measurement] = []
    measurements = record.get("measurements")
    if isinstance(measurements, dict):
        for mode, measured in measurements.items():
            if isinstance(measured, dict):
                found.append(Measurement(
                    instance_id, str(mode), _number(measured.get("ratio")),
                    _number(measured.get("ci_low")), _number(measured.get("ci_high")),
                    _text(measured.get("verdict")) or _text(record.get("verdict"))))
    if not found and _text(record.get("verdict")):
        found.append(Measurement(instance_id, "", None, None, None, record["verdict"]))
    return found


class ResultsIndex:
    """Measurements by API name (either framework's)."""

    def __init__(self) -> None:
        self._measurements: dict[str, list[Measurement]] = {}   # instance id -> its list
        self._instances_by_api: dict[str, list[str]] = {}

    @classmethod
    def from_documents(cls, documents: Iterable[Any]) -> ResultsIndex:
        """Build from parsed results JSON documents; a later document's instance replaces an
        earlier one with the same id (pass files oldest first)."""
        index = cls()
        for document in documents:
            index.add_document(document)
        return index

    @classmethod
    def load(cls, paths: Iterable[str | os.PathLike]) -> ResultsIndex:
        documents = []
        for path in paths:
            with open(path, encoding="utf-8") as handle:
                documents.append(json.load(handle))
        return cls.from_documents(documents)

    def add_document(self, document: Any) -> None:
        instances = document.get("instances") if isinstance(document, dict) else None
        if not isinstance(instances, list):
            return
        for position, record in enumerate(instances):
            if not isinstance(record, dict):
                continue
            instance_id = _text(record.get("id")) or f"#{position}"
            apis = record.get("apis")
            if not isinstance(apis, dict):
                continue
            self._measurements[instance_id] = _instance_measurements(record, instance_id)
            for framework, api in apis.items():
                if isinstance(api, str) and api:
                    name = normalise_case_api(str(framework), api)
                    ids = self._instances_by_api.setdefault(name, [])
                    if instance_id not in ids:
                        ids.append(instance_id)

    def __len__(self) -> int:
        return len(self._measurements)

    def lookup(self, apis: Iterable[str]) -> MeasuredApi | None:
        """The worst measurement over every instance that ran any of `apis`."""
        instance_ids: list[str] = []
        for api in apis:
            for instance_id in self._instances_by_api.get(api, ()):
                if instance_id not in instance_ids:
                    instance_ids.append(instance_id)
        if not instance_ids:
            return None
        measurements = [m for i in instance_ids for m in self._measurements.get(i, ())]
        with_ratio = [m for m in measurements if m.ratio is not None]
        if with_ratio:
            worst = min(with_ratio, key=lambda m: m.ratio)
        elif measurements:
            worst = min(measurements, key=_severity_rank)
        else:
            return None
        return MeasuredApi(worst.ratio, worst.ci_low, worst.ci_high, worst.verdict, worst.mode,
                           worst.instance_id, len(instance_ids))


def _severity_rank(measurement: Measurement) -> int:
    verdict = measurement.verdict.upper()
    return VERDICT_SEVERITY.index(verdict) if verdict in VERDICT_SEVERITY else len(
        VERDICT_SEVERITY)

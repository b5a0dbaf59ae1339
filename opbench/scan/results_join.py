"""Join scan rows with measured results (`opbench run` JSON), by API name.

The results file lists measured instances, each naming the API it ran in both frameworks
(results/records.py: InstanceRecord.apis) and, per measured mode, its ratio, interval and
verdict. An API measured by several instances (a sweep over shapes, or serial and async
modes) is reported by its worst — lowest — ratio, with that measurement's verdict and the
number of instances. Results files are read like every other command reads them
(records.load_results): one that is not a results file is an error naming it.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, Iterable

from opbench.results.records import InstanceRecord, RunRecord, load_results
from opbench.scan.coverage import normalise_case_api

# When nothing carries a ratio (every instance failed or mismatched), the most severe verdict
# speaks for the API; verdicts not listed here rank after these.
VERDICT_SEVERITY = ("ERROR", "MISMATCH", "SLOW", "INCONCLUSIVE", "PASS")


@dataclass(frozen=True)
class InstanceRatio:
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
    """A finite ratio, or None (JSON read by Python may carry NaN)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _instance_measurements(inst: InstanceRecord) -> list[InstanceRatio]:
    found = [InstanceRatio(inst.id, mode, _number(m.ratio), _number(m.ci_low),
                         _number(m.ci_high), str(m.verdict))
             for mode, m in inst.measurements.items()]
    if not found and inst.verdict is not None:
        found.append(InstanceRatio(inst.id, "", None, None, None, str(inst.verdict)))
    return found


class ResultsIndex:
    """Measurements by API name (either framework's)."""

    def __init__(self) -> None:
        self._measurements: dict[str, list[InstanceRatio]] = {}   # instance id -> its list
        self._instances_by_api: dict[str, list[str]] = {}

    @classmethod
    def from_records(cls, records: Iterable[RunRecord]) -> ResultsIndex:
        """Build from results records; a later record's instance replaces an earlier one
        with the same id (pass files oldest first)."""
        index = cls()
        for record in records:
            index.add_record(record)
        return index

    @classmethod
    def load(cls, paths: Iterable[str | os.PathLike]) -> ResultsIndex:
        """Raises ResultsError naming a file that is not a results file."""
        return cls.from_records(load_results(path) for path in paths)

    def add_record(self, record: RunRecord) -> None:
        for inst in record.instances:
            self._measurements[inst.id] = _instance_measurements(inst)
            for framework, api in inst.apis.items():
                if api:
                    name = normalise_case_api(framework, api)
                    ids = self._instances_by_api.setdefault(name, [])
                    if inst.id not in ids:
                        ids.append(inst.id)

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


def _severity_rank(measurement: InstanceRatio) -> int:
    verdict = measurement.verdict.upper()
    return VERDICT_SEVERITY.index(verdict) if verdict in VERDICT_SEVERITY else len(
        VERDICT_SEVERITY)

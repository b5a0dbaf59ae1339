"""Complete scan rows with the mapped API, case coverage and measured ratio."""
from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from opbench.frameworks.apimap import ApiMapping
from opbench.scan.coverage import CoveredApis
from opbench.scan.results_join import ResultsIndex
from opbench.scan.rows import MAPPING_UNKNOWN, ScanRow

OTHER_FRAMEWORK = {"torch": "mindspore", "mindspore": "torch"}


def _mapping_columns(mapping: ApiMapping | None, framework: str, api: str) -> dict:
    entry = mapping.lookup(framework, api) if mapping is not None else None
    if entry is None:
        return {"mapped_api": "", "mapping_status": MAPPING_UNKNOWN, "mapping_note": ""}
    mapped = entry.mindspore if framework == "torch" else entry.torch
    return {"mapped_api": mapped or "", "mapping_status": entry.status,
            "mapping_note": entry.note}


def annotate(rows: Iterable[ScanRow], *, mapping: ApiMapping | None = None,
             covered: CoveredApis | None = None,
             results: ResultsIndex | None = None) -> tuple[ScanRow, ...]:
    """New rows with the mapping columns (always), `covered` (when a case library is given:
    a case runs the API itself or its mapped counterpart) and the result columns (when
    results are given: worst ratio over the instances that ran the API or its counterpart).
    """
    cache: dict[tuple[str, str], dict] = {}   # many rows share an API; work per API once
    done: list[ScanRow] = []
    for row in rows:
        key = (row.framework, row.api)
        columns = cache.get(key)
        if columns is None:
            columns = _mapping_columns(mapping, row.framework, row.api)
            other = OTHER_FRAMEWORK.get(row.framework, "")
            mapped = columns["mapped_api"]
            if covered is not None:
                columns["covered"] = (row.api in covered.get(row.framework, ())
                                      or bool(mapped) and mapped in covered.get(other, ()))
            if results is not None:
                measured = results.lookup([row.api, mapped] if mapped else [row.api])
                if measured is not None:
                    columns.update(ratio=measured.ratio, ci_low=measured.ci_low,
                                   ci_high=measured.ci_high, verdict=measured.verdict,
                                   mode=measured.mode, instances=measured.instances,
                                   worst_instance=measured.instance_id)
            cache[key] = columns
        done.append(replace(row, **columns))
    return tuple(done)

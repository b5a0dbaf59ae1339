"""--opbench-json: the run as an opbench results record (what `opbench run --json` writes),
so `opbench report` and the history tools read a pytest run like any other."""
from __future__ import annotations

import os
from typing import Any

from opbench.pytest_plugin.run_state import RunState
from opbench.results import records
from opbench.results.io import new_record, utc_now
from opbench.results.records import RunRecord

# names of the worker records in a merged record's merged_from
WORKER_PART = "pytest-xdist worker {}"


def results_record(state: RunState, complete: bool) -> dict[str, Any]:
    """This process's record as the dicts it is built from (a pytest-xdist worker sends it
    to the controller as such)."""
    session = state.opened
    record = new_record(state.run_config.as_dict(),
                        session.framework_info() if session else {},
                        dict(session.overhead) if session else {})
    if state.setup_s is not None:
        record["setup_s"] = state.setup_s
    record["instances"] = list(state.records)
    record["complete"] = complete
    record["interrupted"] = not complete
    record["finished_utc"] = utc_now()
    return record


def controller_record(state: RunState, complete: bool) -> RunRecord:
    """The pytest-xdist controller's one record: the workers' records joined (merge.py),
    each worker's cores and device in merged_from. The controller runs no item, so without
    worker records it has only the records the reports carried (no framework facts)."""
    from opbench.results.merge import MergeError, merge_records

    if not state.worker_records:
        return RunRecord.from_dict(results_record(state, complete))
    ids = sorted(state.worker_records, key=lambda w: (len(w), w))     # gw2 before gw10
    try:
        merged = merge_records([RunRecord.from_dict(state.worker_records[w]) for w in ids],
                               [WORKER_PART.format(w) for w in ids])
    except MergeError as exc:
        record = results_record(state, complete)
        record["merge_error"] = str(exc)
        return RunRecord.from_dict(record)
    return merged.replace(complete=merged.complete and complete,
                          interrupted=merged.interrupted or not complete)


def write_results(state: RunState, path: str | os.PathLike, complete: bool = True) -> None:
    """The record with the gap map's figures (gapmap/figures.py) once the run is over."""
    from opbench.gapmap.figures import with_figures

    record = controller_record(state, complete)
    records.write_results(path, with_figures(record) if complete else record)

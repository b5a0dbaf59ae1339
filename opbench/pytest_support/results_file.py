"""--opbench-json: the run as an opbench results record (what `opbench run --json` writes),
so `opbench report` and the history tools read a pytest run like any other."""
from __future__ import annotations

import os
from typing import Any

from ..results import new_record, utc_now, write_json_atomic
from .run_state import RunState


def results_record(state: RunState, complete: bool) -> dict[str, Any]:
    session = state.opened
    record = new_record(state.run_config.as_dict(),
                        session.framework_info() if session else {},
                        dict(session.overhead) if session else {})
    record["instances"] = list(state.records)
    record["complete"] = complete
    record["interrupted"] = not complete
    record["finished_utc"] = utc_now()
    return record


def write_results(state: RunState, path: str | os.PathLike, complete: bool = True) -> None:
    write_json_atomic(path, results_record(state, complete))

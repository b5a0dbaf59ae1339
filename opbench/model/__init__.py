"""Model impact: which framework APIs cost a user's model how much of its step time.

`opbench model -- python script.py` captures the script's framework calls with their data
flow (capture/, in the script's own interpreter: capture/main.py), keeps the steady state
(steady.py), replays the calls as a program in each framework (replay/, in runner worker
processes serving replay/main.py) and projects each framework's step time and the time
each API loses (impact/: pipeline.py, project.py); affinity/ finds and measures faster
equivalents (`--suggest`). program.py is the captured program, json_records.py and
bound_args.py the standard-library helpers both sides share. A script may mark its steps
with `opbench.model.step()`.
"""
from __future__ import annotations

from opbench.model.markers import step

__all__ = ["step", "suggest"]


def suggest(command: list[str], processes: int | None = None, **options: object) -> list:
    """A script's measured affinity suggestions (`opbench suggest -- python script.py`): the
    rows (model/impact/record.py SuggestionRow), faster first. Imported on use: a script
    that calls opbench.model.step() imports this package with few imports."""
    from opbench.model.affinity.measure import DEFAULT_SUGGEST_PROCESSES
    from opbench.model.affinity.run import suggest as run

    return run(command, processes or DEFAULT_SUGGEST_PROCESSES, **options)

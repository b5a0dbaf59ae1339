"""Model impact: which framework APIs cost a user's model how much of its step time.

`opbench model -- python script.py` captures the script's framework calls with their data
flow (capture.py, in the script's own interpreter: capture_main.py), keeps the steady state
(steady.py), replays the calls as a program in each framework (replay.py, in worker
processes) and projects each framework's step time and the time each API loses
(project.py). A script may mark its steps with `opbench.model.step()`.
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

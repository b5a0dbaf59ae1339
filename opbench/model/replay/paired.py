"""Two programs of one framework in one replay process, timed interleaved: the original
step and a swapped one (opbench/model/affinity/: `opbench model --suggest`). Each round times
a few step samples of one, then of the other, in the order A B B A A B ...: both see the
same process, the same mode of the framework (MindSpore's speed changes between processes
by up to 3x here, more than most swaps save) and the same drift. With `fingerprints`, each
program's outputs are fingerprinted first (the output check)."""
from __future__ import annotations

from typing import Any

__all__ = ["serve_paired", "PAIRED"]

PAIRED = "paired"


def serve_paired(request: dict[str, Any], adapter: Any, mapping: Any) -> dict[str, Any]:
    from opbench.model.replay.executor import Replayer

    framework = request["framework"]
    players = [Replayer(step, framework, adapter, mapping) for step in request["steps"]]
    prints = [p.probe(fingerprints=bool(request.get("fingerprints"))) for p in players]
    result: dict[str, Any] = {"status": [p.status for p in players], "fingerprints": prints}
    if request.get("rounds", 0) <= 0:
        return result
    for player in players:
        player.warm_up(request.get("warmup_runs", 3), request.get("warmup_s", 0.2))
    samples: list[list[list[float]]] = [[] for _ in players]      # per program, per round
    for r in range(request["rounds"]):
        order = range(len(players)) if r % 2 == 0 else reversed(range(len(players)))
        for i in order:
            samples[i].append(players[i].time_step(request.get("samples", 5)))
    result["samples_s"] = samples
    return result

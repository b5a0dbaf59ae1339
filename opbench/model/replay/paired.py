"""Two programs of one framework in one replay process, timed interleaved: the original
step and a swapped one (opbench/model/affinity/: `opbench model --suggest`). Each round times
a few step samples of one, then of the other, in the order A B B A A B ...: both see the
same process, the same mode of the framework (MindSpore's speed changes between processes
by up to 3x here, more than most swaps save) and the same drift. Past its `rounds`, a
process goes on timing rounds until they have taken `min_timed_s`: a step of 0.7 ms got 30
samples a program in 6 rounds of 5, and a swap saving 0.09 ms of it read anywhere in
0.07-0.23 ms over 6 processes (docs/model.md, "What moved the claims"). The process's
C allocator is held in one state first (allocator.py). With `fingerprints`, each program's
outputs are fingerprinted first (the output check). In a queued launch (MindSpore's) each
sample ends as the script's step does, with its result read back
(executor.time_step_to_host), not with the framework's sync."""
from __future__ import annotations

import os
import time
from typing import Any, Callable

from opbench.runner import ipc

__all__ = ["serve_paired", "PROBE_SEED"]

# The programs' probes run one after the other in this process and their outputs are
# compared: each starts from this seed of the framework's generator, so a training-mode
# dropout draws the same masks in both. Unseeded, the second drew others and every swap
# after a dropout read "outputs differ" (hf_t5_training.py's RMS norm: "values differ by up
# to 1 (relative)").
PROBE_SEED = 0


def _more_rounds(request: ipc.ReplayPaired, done: int, timed_s: float) -> bool:
    """Whether to time another round: until `rounds` are done and, beyond them, until the
    rounds have taken `min_timed_s` (at most `max_rounds`), stopping on an even count so
    each program came first as often as second."""
    if done < request.rounds:
        return True
    if done >= max(request.max_rounds, request.rounds) or request.rounds <= 0:
        return False
    return done % 2 == 1 or timed_s < request.min_timed_s


def serve_paired(request: ipc.ReplayPaired, adapter: Any, mapping: Any,
                 clock: Callable[[], float] = time.perf_counter) -> ipc.PairedResult:
    from opbench.model.replay.allocator import hold_heap
    from opbench.model.replay.executor import Replayer

    # before the programs allocate anything: both timed in one allocator state
    heap_note = hold_heap() or ""
    players = [Replayer(step, request.framework, adapter, mapping)
               for step in request.programs]
    seed = adapter.resolve(f"{request.framework}.manual_seed")
    prints = []
    for player in players:
        seed(PROBE_SEED)
        prints.append(player.probe(fingerprints=request.fingerprints))
    prints = tuple(prints)
    facts = dict(framework=request.framework, launch=adapter.launch(), pid=os.getpid(),
                 status=tuple(tuple(p.status) for p in players), fingerprints=prints,
                 heap_note=heap_note)
    if request.rounds <= 0:
        return ipc.PairedResult(**facts)
    for player in players:
        player.warm_up(request.warmup_runs, request.warmup_s)
    samples: list[list[tuple[float, ...]]] = [[] for _ in players]   # per program, per round
    began, r = clock(), 0
    while _more_rounds(request, r, clock() - began):
        order = range(len(players)) if r % 2 == 0 else reversed(range(len(players)))
        for i in order:
            samples[i].append(tuple(players[i].time_script_steps(request.samples)))
        r += 1
    return ipc.PairedResult(**facts, samples_s=tuple(tuple(s) for s in samples))

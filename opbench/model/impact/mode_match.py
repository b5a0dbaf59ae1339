"""Whether the traced framework's replay ran in the capture's speed mode (MindSpore).

MindSpore's PyNative step runs in speed modes, 2-3x apart, that switch within a process
(docs/model.md, "Why MindSpore's step moves"). The capture is one process in one mode; the
self-check sets its traced times against a replay that may have run in another, and then
reads the modes' ratio, not a fault. The speed probe (model/speed_probe.py), timed in the
capture's process after the script and in each replay round before its per-call passes,
tells the rounds that ran in the capture's mode; the self-check is taken over those (like
for like) and says so, or says that none did.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence

__all__ = ["MODE_FACTOR", "ModeMatch", "round_sums", "mode_match"]

# Probes within this factor of the capture's are one mode. Measured here (2026-11-27, four
# fresh processes, speed_probe.py's figures): the probe's modes read ~0.40, ~0.69 and
# 2.3-3.9 ms a call; the two fast ones gave the same step (a 5-call forward 13-20 ms in
# both), the slow one 2-3x that. 2.0 keeps the fast pair together and the slow one apart.
MODE_FACTOR = 2.0


@dataclass(frozen=True)
class ModeMatch:
    capture_probe_s: float                 # the capture's probe, seconds a call
    replay_probe_s: tuple[float, ...]      # each replay round's (every process, in order)
    in_mode: tuple[bool, ...]              # each round: within MODE_FACTOR of the capture's
    in_mode_call_sum_s: float | None       # a step's replayed calls over those rounds

    @property
    def rounds(self) -> int:
        return len(self.in_mode)

    @property
    def rounds_in_mode(self) -> int:
        return sum(self.in_mode)

    @property
    def matched(self) -> bool:
        return self.rounds_in_mode > 0


def round_sums(per_call_s: Sequence[Sequence[float]], counted: Sequence[bool], passes: int,
               rounds: int) -> list[float]:
    """Per round, a step's counted calls: each call's median over the round's passes,
    summed (a call's latencies are `passes` per round, rounds in order)."""
    sums = []
    for r in range(rounds):
        total = 0.0
        for times, counts in zip(per_call_s, counted):
            chunk = list(times[r * passes:(r + 1) * passes])
            if counts and chunk:
                total += statistics.median(chunk)
        sums.append(total)
    return sums


def mode_match(capture_probe_s: float | None, replay_probe_s: Sequence[float],
               sums: Sequence[float], factor: float = MODE_FACTOR) -> ModeMatch | None:
    """The rounds in the capture's mode and a step's calls over them (the median round);
    None without a capture probe or a replay probe (torch, or an older capture)."""
    if not capture_probe_s or not replay_probe_s or len(replay_probe_s) != len(sums):
        return None
    in_mode = tuple(capture_probe_s / factor <= p <= capture_probe_s * factor
                    for p in replay_probe_s)
    matched = [s for s, ok in zip(sums, in_mode) if ok]
    return ModeMatch(capture_probe_s, tuple(replay_probe_s), in_mode,
                     float(statistics.median(matched)) if matched else None)

"""The measurement settings a regression gate needs, and how a run adopts them.

A gate compares two runs made minutes or days apart, so what matters is how far a run's
ratio moves between runs of identical code, not how narrow one run's interval looks. The
values below were chosen from A/A runs on the project's 2-core CPU machine (docs/gate.md
has the figures):

- launch "blocking": MindSpore's queued PyNative launches put a thread hand-off, bimodal and
  20-50% different from one process to the next, into every serial call;
- threads 1: with one kernel thread per framework on 2 cores neither framework's pool
  competes with the other's calls or with the runner's other work;
- 40 rounds in shares of 2: 4 worker processes x 5 passes. The ratio drifts ~10% over
  seconds to minutes, so the rounds are spread over the run instead of taken back to back,
  and each process keeps an offset of its own, so they are spread over processes too
  (workers.py). (Until worker processes, 20 passes of 2 rounds in one process.)
- a 6 s budget per measurement and 10 ms samples: dispatch-bound ops whose MindSpore side
  is 20-40x slower than torch's have their loop count capped by the budget, and a smaller
  budget leaves torch's samples at a millisecond or two. (Until measure.BUDGET_SLACK, such
  measurements also lost a round in every pass: 20 rounds, intervals of +-8-12%.)

`opbench run --for-gate` records a baseline with these; `opbench gate` measures the way its
baseline was measured (baseline.inherit_settings), so both sides always match.
"""
from __future__ import annotations

from typing import Any, Mapping

__all__ = ["GATE_SETTINGS", "with_gate_settings"]

# build_config's keywords -> value.
GATE_SETTINGS: dict[str, Any] = {
    "launch": "blocking",
    "threads": 1,
    "passes": 5,
    "processes": 4,
    "rounds": 40,
    "max_time_s": 6.0,
    "min_sample_time_s": 0.01,
}


def with_gate_settings(options: Mapping[str, Any]) -> dict[str, Any]:
    """options with every timing option the user left unset (None) taken from
    GATE_SETTINGS; options the user gave win."""
    done = dict(options)
    for key, value in GATE_SETTINGS.items():
        if done.get(key) is None:
            done[key] = value
    return done

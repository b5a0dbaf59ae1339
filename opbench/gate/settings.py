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

`opbench run --for-gate` records a baseline with these (GATE_RUN_SETTINGS.fill); `opbench
gate` measures the way its baseline was measured (baseline.inherit_settings) and takes from
here only what neither the user nor the baseline set, so both sides always match. (The
gate's decision settings, min effect and confidence, are gate/evaluate.py's GateSettings.)
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping

from opbench.config import LAUNCH_BLOCKING
from opbench.config.options import OPTIONS, OptionError, RunOptions

__all__ = ["GATE_DEFAULT_ROUNDS", "GATE_RUN_SETTINGS", "GateRunSettings",
           "GateSettingError"]


class GateSettingError(ValueError):
    """A gate setting that is not a run option, or a value the option refuses: a mistake in
    the code that defines it, reported when the module is imported, naming setting, option
    and where it was defined."""


@dataclass(frozen=True)
class GateRunSettings:
    """The run options a gate measures with, each field named like the options table's row
    (config/options.py OPTIONS, RunOptions) it fills. Checked when made: a field the table
    does not have (a typo, which a dict of keywords silently dropped) or a value the option
    refuses is a GateSettingError."""

    launch: str = LAUNCH_BLOCKING
    threads: int = 1
    passes: int = 5
    processes: int = 4
    # Higher than `opbench run`'s 15. On the simulated shared machine
    # (tests/unit/timing_simulation.py) an identical pair of runs at 15/15 rounds ends
    # INCONCLUSIVE for 8.3% of instances even after the second stage, at 25/25 for 0.4%, at
    # 35/35 for none; the real machine's per-process offsets need the margin (docs/gate.md).
    # The interval is only as narrow as the smaller side allows, hence `opbench run
    # --for-gate`, which records the baseline with these settings, and the gate's habit of
    # measuring like its baseline.
    rounds: int = 40
    max_time_s: float = 6.0
    min_sample_time_s: float = 0.01

    def __post_init__(self) -> None:
        where = f"{type(self).__module__}.{type(self).__qualname__}"
        flags = {spec.field: spec.flag for spec in OPTIONS}
        for name in self.as_options():
            if name not in flags:
                raise GateSettingError(
                    f"{where}: gate setting '{name}' is not a run option, so no run would "
                    f"use it; the options (config/options.py OPTIONS) are: "
                    f"{', '.join(sorted(flags))}")
        for name, value in self.as_options().items():
            try:
                RunOptions(**{name: value}).to_config()
            except OptionError as exc:
                raise GateSettingError(f"{where}: gate setting {name} = {value!r} (option "
                                       f"--{flags[name]}): {exc}") from None

    def as_options(self) -> dict[str, Any]:
        """RunOptions keywords -> value."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def fill(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """options with every setting here that the user left unset (None) filled in;
        options the user gave win."""
        done = dict(options)
        for key, value in self.as_options().items():
            if done.get(key) is None:
                done[key] = value
        return done


# The run options every gate measures with (a GateRunSettings, named so: GateSettings is the
# decision's).
GATE_RUN_SETTINGS = GateRunSettings()
# The gate's rounds per measurement when its baseline records none (the reason is above).
GATE_DEFAULT_ROUNDS = GATE_RUN_SETTINGS.rounds

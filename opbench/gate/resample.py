"""The gate resampled over recorded processes: how often would it fail or stall on this
runner? (Named apart from the model's replay, model/replay/executor.py, which re-executes a user's
calls: nothing is executed here, the gate's decision is taken again on resampled records.)

Given N `--for-gate` runs of the same code, each its own process, every resampled gate draws
(without replacement) a baseline of m processes (pooled as `--baseline` repeated does), a
noise profile of p more (when p > 0), and a stage 1 and a stage 2 from two others - the
fresh-process stage 2 the gate uses - and runs the gate's pure decision (`evaluate`). With
injected runs (recorded with OPBENCH_INJECT_SLOWDOWN), the same baseline and profile also
judge two of those as stages 1 and 2: how often the slowdown is caught.

docs/gate.md's resampling table comes from it (NOISE_FLOOR_Z was chosen with the same loop);
`opbench resample` (formerly `opbench replay`, still accepted) runs it on your own recorded
runs. Pure: records in, counts out; seeded, so repeatable.
"""
from __future__ import annotations

import dataclasses
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

from opbench.gate.evaluate import GateResult, GateSettings, evaluate
from opbench.gate.noise import process_noise
from opbench.gate.pool import pool_baselines
from opbench.results.records import RunRecord

__all__ = ["ResampleTally", "resample_gates"]


@dataclass
class ResampleTally:
    """Outcomes of the resampled gates: exit codes per gate, verdicts per instance-gate."""

    exits: Counter = field(default_factory=Counter)
    verdicts: Counter = field(default_factory=Counter)

    @property
    def gates(self) -> int:
        return sum(self.exits.values())

    def gate_share(self, code: int) -> float:
        return self.exits[code] / self.gates if self.gates else 0.0

    def verdict_share(self, verdict: str) -> float:
        total = sum(self.verdicts.values())
        return self.verdicts[verdict] / total if total else 0.0

    def add(self, result: GateResult) -> None:
        self.exits[result.exit_code] += 1
        self.verdicts.update(i.verdict.value for i in result.instances)


def _two_stage(baseline: RunRecord, first: RunRecord, second: RunRecord,
               settings: GateSettings) -> GateResult:
    stage1 = evaluate(baseline, first, settings=settings)
    by_id = {inst.id: inst for inst in second.instances}
    remeasured = {i: by_id[i] for i in stage1.to_remeasure() if i in by_id}
    return evaluate(baseline, first, remeasured=remeasured, settings=settings)


def resample_gates(runs: Sequence[RunRecord], names: Sequence[str], *,
                   baseline_processes: int, profile_processes: int = 0, gates: int = 200,
                   seed: int = 0, injected: Sequence[RunRecord] = (),
                   settings: GateSettings = GateSettings()
                   ) -> tuple[ResampleTally, ResampleTally]:
    """(A/A tally, injected tally); the injected one is empty without injected runs (at
    least 2 are needed). Raises ValueError when there are too few runs for one gate, and
    pool/noise errors when the runs were not measured alike."""
    needed = baseline_processes + profile_processes + 2
    if baseline_processes < 1 or profile_processes < 0 or gates < 1:
        raise ValueError("baseline_processes >= 1, profile_processes >= 0, gates >= 1")
    if profile_processes and profile_processes < 3:
        raise ValueError("a noise profile needs at least 3 processes")
    if len(runs) < needed:
        raise ValueError(f"{len(runs)} runs given; a resampled gate draws {needed} distinct "
                         f"processes ({baseline_processes} baseline, {profile_processes} "
                         f"profile, stage 1, stage 2)")
    if len(injected) == 1:
        raise ValueError("injected runs: give at least 2 (stage 1 and stage 2 of one gate)")
    rng = random.Random(seed)
    same, slowed = ResampleTally(), ResampleTally()
    for _ in range(gates):
        order = rng.sample(range(len(runs)), needed)
        picked = [runs[i] for i in order]
        base_idx = order[:baseline_processes]
        baseline = pool_baselines([runs[i] for i in base_idx], [names[i] for i in base_idx])
        noise = None
        if profile_processes:
            prof_idx = order[baseline_processes:baseline_processes + profile_processes]
            noise = process_noise([runs[i] for i in prof_idx], [names[i] for i in prof_idx])
        gate_settings = dataclasses.replace(settings, noise=noise)
        same.add(_two_stage(baseline, picked[-2], picked[-1], gate_settings))
        if injected:
            first, second = rng.sample(range(len(injected)), 2)
            slowed.add(_two_stage(baseline, injected[first], injected[second], gate_settings))
    return same, slowed

"""The gate's early stop (runloop/gate_early_stop.py): a stage stops measuring an instance at
the end of the worker process after which the gate's own rules decide it, with the error rate
spent over the planned looks (verdicts/sequential.look_confidences).

On fake workers and a fake clock: an instance decided at the first look stops there; one at
the minimum effect runs in every process; a fixed protocol, --fail-on-slow or one process
never stop early. By simulation: with identical code the gate's false fail rate, and with
a slowdown of exactly the minimum effect its false pass rate, stay at or below the nominal
2.5% when every process is a look.
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence

import numpy as np
import pytest
from runner_fakes import OP_COST_S, FakeAdapter, binary_case, case_file, fake_config
from runner_fakes import fake_session_class, load_instances
from test_gate_processes import pooled, simulated_run
from worker_fakes import Spawner

from opbench.gate.decision import GateVerdict, RunSamples, decide, path_priors, staged
from opbench.runloop.gate_early_stop import (
                                             KIND_EARLY_STOP,
                                             LAST_LOOK_SHARE,
                                             confidences,
                                             stage1_stop,
                                             stage2_stop,
                                             stops_early,
                                             )
from opbench.gate.evaluate import GateSettings, evaluate
from opbench.runloop.gate_run import GateHooks, GateRequest, run_gate
from opbench.gate.serialize import result_as_dict
from opbench.runloop.recorded_run import run
from opbench.runner.workers import WorkerPool
from opbench.verdicts.rules import DEFAULT_MIN_EFFECT
from opbench.verdicts.sequential import look_confidences

PROCESSES = 4
# Each fake worker process's own speed for the `wobbly` op's MindSpore side: a 15-25%
# offset per process, as the noisiest instances here show (docs/measurement.md: 6-27%).
PROCESS_FACTORS = {1: 1.0, 2: 1.25, 3: 0.8, 4: 1.2}


def offset_session_class(slowdown: float = 1.0, steady_slowdown: float = 1.0):
    """A fake Session whose target's `mindspore.neg` (case `wobbly`) runs at its worker
    process's own speed, times `slowdown`; `mindspore.add` (case `steady`) at
    `steady_slowdown`, the same in every process."""
    base = fake_session_class()

    class OffsetSession(base):
        def __init__(self, config, clock=None, process_index=1, **kwargs):
            super().__init__(config, clock, process_index=process_index, **kwargs)
            self.factor = PROCESS_FACTORS.get(process_index, 1.0)

        def open(self) -> None:
            super().open()
            costs = {"mindspore.neg": OP_COST_S * self.factor * slowdown,
                     "mindspore.add": OP_COST_S * steady_slowdown}
            target = self.config.target_name
            self.adapters[target] = FakeAdapter(target, self.clock, costs=costs)
            self.adapters[target].setup(self.config.device, self.config.threads)

    return OffsetSession


@pytest.fixture
def instances(tmp_path):
    return load_instances(case_file(
        tmp_path, binary_case("steady"),
        binary_case("wobbly", torch_api="torch.neg", mindspore_api="mindspore.neg")
        .replace("args: [$x, $y]", "args: [$x]")))


def measured(instances, config, session_class, early_stop=None, tmp_path=None, on_pass=None):
    pool = WorkerPool(config, spawn=Spawner(session_class))
    pool.open()
    try:
        return run(instances, config, session=pool, early_stop=early_stop,
                   json_path=None if tmp_path is None else tmp_path / "current.json",
                   on_pass=on_pass)
    finally:
        pool.close()


def gate_config():
    return fake_config(processes=PROCESSES, passes=2)


def test_decided_at_the_first_look_stops_and_one_at_the_minimum_effect_runs_everywhere(
        instances, tmp_path):
    config = gate_config()
    baseline = measured(instances, config, offset_session_class())
    # `wobbly` is slower by exactly the minimum effect, within its processes' 20% spread;
    # `steady` is unchanged and steady
    current = measured(instances, config, offset_session_class(1 / (1 - DEFAULT_MIN_EFFECT)),
                       stage1_stop(baseline, config, GateSettings()), tmp_path)
    by_case = {inst.case: inst for inst in current.instances}
    steady, wobbly = by_case["steady"], by_case["wobbly"]
    assert steady.sequential.processes == 1 and steady.sequential.stopped == "decided"
    # the passes after process 1 measure only `wobbly`, and the progress callback says so
    passes = []
    measured(instances, config, offset_session_class(1 / (1 - DEFAULT_MIN_EFFECT)),
             stage1_stop(baseline, config, GateSettings()),
             on_pass=lambda *seen: passes.append(seen))
    assert passes[0] == (2, 2 * PROCESSES, 2, 0)           # process 1's second pass: both
    assert passes[1] == (3, 2 * PROCESSES, 1, 1)           # process 2: one decided
    assert steady.sequential.look_confidence == pytest.approx(0.995)
    assert set(steady.measurements["serial"].process_of_round) == {1}
    assert wobbly.sequential is None
    assert set(wobbly.measurements["serial"].process_of_round) == {1, 2, 3, 4}
    result = evaluate(baseline, current, confidence=confidences(config)[-1])
    verdicts = {inst.id: inst.verdict for inst in result.instances}
    assert verdicts == {steady.id: GateVerdict.PASS, wobbly.id: GateVerdict.INCONCLUSIVE}
    assert result.confidence == pytest.approx(0.965)


def test_a_clear_regression_stops_at_the_first_look_in_both_stages(instances):
    config = gate_config()
    baseline = measured(instances, config, offset_session_class())
    slower = offset_session_class(steady_slowdown=1.5)
    first = measured(instances, config, slower, stage1_stop(baseline, config, GateSettings()))
    steady = next(i for i in first.instances if i.case == "steady")
    assert steady.sequential.processes == 1
    result = evaluate(baseline, first, confidence=confidences(config)[-1])
    assert steady.id in result.to_remeasure()
    # stage 2 with its own rule: the re-measured regression stops at its first look too
    second_run = measured([i for i in instances if i.id == steady.id], config, slower,
                          stage2_stop(baseline, first, config, GateSettings()))
    again = second_run.instances[0]
    assert again.sequential.processes == 1
    final = evaluate(baseline, first, remeasured={steady.id: again},
                     confidence=confidences(config)[-1])
    assert next(i for i in final.instances if i.id == steady.id).verdict is \
        GateVerdict.REGRESSION


@pytest.mark.parametrize("options, settings, processes, expected", [
    ({}, GateSettings(), 4, True),
    ({"rounds": 40}, GateSettings(), 4, False),
    ({"processes": 4}, GateSettings(), 4, False),
    ({"passes": 5}, GateSettings(), 4, False),
    ({"rounds": None}, GateSettings(fail_on_slow=True), 4, False),
    ({}, GateSettings(), 1, False),
])
def test_a_protocol_the_user_fixed_is_kept(options, settings, processes, expected):
    assert stops_early(options, settings, fake_config(processes=processes)) is expected


class PoolFrontDoor:
    """Stage 1 on fake worker processes (the gate's 4), as the command's run path would."""

    def __init__(self, session_class):
        self.session_class = session_class
        self.early_stops = []

    def measure(self, instances, config, json_path, injection, early_stop):
        self.early_stops.append(early_stop)
        return measured(instances, config, self.session_class, early_stop)


@pytest.mark.parametrize("options", [{}, {"rounds": 16}])
def test_the_gate_stops_early_unless_the_protocol_is_fixed(instances, tmp_path, monkeypatch,
                                                           options):
    config = gate_config()
    baseline = measured(instances, config, offset_session_class())
    session_class = offset_session_class()
    # stage 2's fresh processes are fake workers too
    monkeypatch.setattr("opbench.runner.workers.spawn_worker", Spawner(session_class))
    door = PoolFrontDoor(session_class)
    request = GateRequest(baseline=baseline, baseline_path="base.json", instances=instances,
                          options=options, settings=GateSettings(),
                          json_path=str(tmp_path / "current.json"))
    gate = run_gate(request, GateHooks(measure=door.measure))
    steady = next(i for i in gate.record.instances if i.case == "steady")
    notes = [n for n in gate.result.notes if n.kind == KIND_EARLY_STOP]
    if options:
        assert door.early_stops == [None] and notes == []
        assert steady.sequential is None and gate.result.confidence == 0.95
        return
    assert door.early_stops[0] is not None
    assert steady.sequential.processes == 1
    assert gate.result.confidence == pytest.approx(0.965)
    assert result_as_dict(gate.result)["confidence"] == pytest.approx(0.965)
    (note,) = notes
    assert note.message.startswith("each stage stopped an instance once decided (4 planned "
                                   "looks: 99.50% after each process but the last, 96.50% "
                                   "at the end); stage 1: 1 after 1 process; 1 of 2 "
                                   "measured in all 4 processes")


# ------------------------------------------------------------------------- simulation

GATES = 12
INSTANCES = 15


def _upto(run_: RunSamples, processes: int) -> RunSamples:
    """The rounds of a run's first `processes` processes (labels 1..N)."""
    keep = [i for i, p in enumerate(run_.process) if int(p) <= processes]
    return RunSamples.of([run_.reference_s[i] for i in keep],
                         [run_.target_s[i] for i in keep], [run_.process[i] for i in keep])


def _stage(baselines, runs, confidences, used):
    """One stage measured process by process: each instance's decision at the look after
    which it is PASS or REGRESSION, or at the last; the priors at each look from every
    instance's rounds so far, as the gate's rule takes them. confidences: each look's, 4
    (a look after every process) or 1 (the fixed protocol: one look after all 4). used:
    counts the processes measured."""
    decisions: dict[int, object] = {}
    looks = len(confidences)
    for look in range(1, looks + 1):
        confidence = confidences[look - 1]
        processes = look * PROCESSES // looks
        now = {i: _upto(runs[i], processes) for i in runs if i not in decisions}
        so_far = {i: _upto(runs[i], processes) for i in runs}
        priors = path_priors([(baselines[i], so_far[i]) for i in runs])
        for i, cur in now.items():
            d = decide(baselines[i], cur, same_machine=True, priors=priors,
                       confidence=confidence)
            if look == looks or d.verdict in (GateVerdict.PASS, GateVerdict.REGRESSION):
                decisions[i] = d
                used[processes] += 1
    return decisions


def gate_rates(seed: int, slowdown: float, confidences: Sequence[float]
               ) -> tuple[Counter, Counter, Counter]:
    """(final verdicts, stage-1 verdicts, processes measured) per instance-gate: a baseline
    pooled from two runs, each stage of 4 processes looking len(confidences) times."""
    rng = np.random.default_rng(seed)
    final: Counter = Counter()
    first_stage: Counter = Counter()
    used: Counter = Counter()
    for _ in range(GATES):
        baselines = {i: pooled(simulated_run(rng, PROCESSES, prefix="1."),
                               simulated_run(rng, PROCESSES, prefix="2."))
                     for i in range(INSTANCES)}
        firsts = {i: simulated_run(rng, PROCESSES, slowdown=slowdown) for i in baselines}
        one = _stage(baselines, firsts, confidences, used)
        again = [i for i, d in one.items() if d.verdict is not GateVerdict.PASS]
        seconds = {i: simulated_run(rng, PROCESSES, slowdown=slowdown) for i in again}
        two = _stage(baselines, seconds, confidences, used) if again else {}
        for i, d in one.items():
            first_stage[d.verdict] += 1
            final[staged(d, two.get(i)).verdict] += 1
    total = GATES * INSTANCES
    return (Counter({k: v / total for k, v in final.items()}),
            Counter({k: v / total for k, v in first_stage.items()}), used)


NOMINAL = 0.025
SPENT = look_confidences(PROCESSES, last_share=LAST_LOOK_SHARE)


def test_the_looks_spend_the_error_rate_once():
    assert sum(1 - c for c in SPENT) == pytest.approx(0.05)
    assert SPENT == pytest.approx((0.995, 0.995, 0.995, 0.965))
    assert look_confidences(4) == pytest.approx((0.9875,) * 4)


def test_identical_code_fails_the_gate_no_more_often_than_nominal():
    final, first, _ = gate_rates(40, 1.0, SPENT)
    assert first[GateVerdict.REGRESSION] <= NOMINAL
    assert final[GateVerdict.REGRESSION] <= NOMINAL
    assert final[GateVerdict.PASS] >= 0.78


def test_a_slowdown_of_the_minimum_effect_passes_a_stage_no_more_often_than_nominal():
    """Each stage's false PASS stays under 2.5%; looking at 95% every time would not."""
    at_min_effect = 1 / (1 - DEFAULT_MIN_EFFECT)
    _, first, _ = gate_rates(41, at_min_effect, SPENT)
    assert first[GateVerdict.PASS] <= NOMINAL
    _, unspent, _ = gate_rates(41, at_min_effect, (0.95,) * PROCESSES)
    assert unspent[GateVerdict.PASS] > NOMINAL


def test_a_clear_regression_is_caught_as_often_with_fewer_processes():
    final, _, used = gate_rates(42, 1.25, SPENT)
    fixed, _, fixed_used = gate_rates(42, 1.25, (0.95,))
    assert final[GateVerdict.REGRESSION] >= fixed[GateVerdict.REGRESSION] - 0.01
    assert sum(k * n for k, n in used.items()) < 0.6 * sum(k * n for k, n in
                                                          fixed_used.items())

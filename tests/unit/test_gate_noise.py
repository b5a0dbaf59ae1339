"""The noise floor (gate/noise.py): the spread between processes, its shrinkage, the floor,
the noise file, what the gate does with it, and - by simulation - that it stops a noisy
instance's process offsets from failing or stalling gates while real slowdowns beyond the
floor are still caught."""
from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pytest
from test_gate_evaluate import evaluate, instance, measurement, record
from timing_simulation import SHARED_MACHINE, simulate_runs

from opbench.cli.gate import GATE_DEFAULT_ROUNDS
from opbench.gate.baseline import KIND_NOISE
from opbench.gate.decision import (
    PATH_RATIO,
    PATH_REFERENCE_TIME,
    PATH_TARGET_TIME,
    GateVerdict,
    RunSamples,
    decide,
    needs_remeasure,
    staged,
)
from opbench.gate.evaluate import GateSettings
from opbench.gate.evaluate import evaluate as evaluate_records
from opbench.gate.noise import (
    MIN_PROCESSES,
    NOISE_FLOOR_Z,
    PATHS,
    InstanceNoise,
    NoiseError,
    NoiseProfile,
    noise_floor,
    shrink,
)
from opbench.gate.noise import process_noise as process_noise_of_records
from opbench.gate.pool import pool_baselines
from opbench.results.records import RunRecord


def process_records(seed: int, processes: int, offsets_sd: dict[str, float],
                    machine_sd: float = 0.0) -> list[dict]:
    """One record per process; each instance's target time carries that process's own
    offset (log-normal, offsets_sd[id]); the machine factor, when given, scales both sides."""
    rng = np.random.default_rng(seed)
    runs = []
    for _ in range(processes):
        machine = math.exp(rng.normal(0.0, machine_sd))
        runs.append(record([instance(i, i.split("[")[0], measurement(
            rng, 1e-3 * machine, 1e-3 * machine * math.exp(rng.normal(0.0, sd))))
            for i, sd in offsets_sd.items()]))
    return runs


def process_noise(runs: list[dict], names: list[str]) -> NoiseProfile:
    """process_noise over runs given as their results files' dicts."""
    return process_noise_of_records([RunRecord.from_dict(r) for r in runs], names)


def profile_of(sd_by_id: dict[str, float], processes: int = 5) -> NoiseProfile:
    return NoiseProfile({i: InstanceNoise(processes, {"serial": {p: sd for p in PATHS}})
                         for i, sd in sd_by_id.items()}, ("n1", "n2", "n3"))


# --------------------------------------------------------------------------- the spread

def test_the_spread_between_processes_is_recovered():
    runs = process_records(1, 40, {"add[a]": 0.08, "add[b]": 0.02})
    raw = process_noise(runs, [f"r{i}" for i in range(40)])
    # shrinkage moves a 40-process estimate only a little (39 df against 4)
    assert raw.instances["add[a]"].sd() == pytest.approx(0.08, rel=0.25)
    assert raw.instances["add[b]"].sd() == pytest.approx(0.02 + 0.005, rel=0.4)
    assert raw.instances["add[a]"].sd() > 2 * raw.instances["add[b]"].sd()
    assert raw.instances["add[a]"].processes == 40


def test_a_machine_speed_change_moves_the_times_but_not_the_ratio():
    runs = process_records(2, 30, {"add[a]": 0.0}, machine_sd=0.10)
    noise = process_noise(runs, [f"r{i}" for i in range(30)]).instances["add[a]"]
    assert noise.sd(PATH_RATIO) < 0.01
    assert noise.sd(PATH_TARGET_TIME) == pytest.approx(0.10, rel=0.3)
    assert noise.sd(PATH_REFERENCE_TIME) == pytest.approx(0.10, rel=0.3)


def test_fewer_than_three_runs_give_no_spread():
    runs = process_records(3, MIN_PROCESSES - 1, {"add[a]": 0.05})
    with pytest.raises(NoiseError, match="at least 3"):
        process_noise(runs, ["a.json", "b.json"])


def test_runs_measured_differently_are_refused_by_name():
    runs = process_records(4, 3, {"add[a]": 0.05})
    runs[2]["config"]["settings"]["rounds"] = 7
    with pytest.raises(NoiseError, match="c.json: settings.rounds is 7"):
        process_noise(runs, ["a.json", "b.json", "c.json"])


def test_an_instance_measured_in_too_few_runs_gets_no_figure():
    runs = process_records(5, 4, {"add[a]": 0.05, "add[b]": 0.05})
    for run in runs[1:3]:
        run["instances"] = [i for i in run["instances"] if i["id"] != "add[b]"]
    profile = process_noise(runs, ["a", "b", "c", "d"])
    assert set(profile.instances) == {"add[a]"}


def test_shrinkage_pulls_a_lucky_low_estimate_towards_the_typical_spread():
    instances = {"quiet": InstanceNoise(5, {"serial": {p: 0.01 for p in PATHS}}),
                 "loud": InstanceNoise(5, {"serial": {p: 0.07 for p in PATHS}})}
    pulled = shrink(instances, prior_df=4)
    typical = math.sqrt((0.01 ** 2 + 0.07 ** 2) / 2)
    assert pulled["quiet"].sd() == pytest.approx(math.sqrt((4 * 0.01 ** 2 + 4 * typical ** 2) / 8))
    assert 0.01 < pulled["quiet"].sd() < pulled["loud"].sd() < 0.07
    assert shrink(instances, prior_df=0)["quiet"].sd() == 0.01


def test_an_instance_gets_the_largest_spread_of_its_keys():
    noise = InstanceNoise(5, {"serial": {p: 0.02 for p in PATHS},
                              "async": {p: 0.06 for p in PATHS}})
    assert noise.sd() == 0.06


# --------------------------------------------------------------------------- the floor

def test_the_floor_formula():
    # z SDs of the difference between a current process and the mean of m baseline ones
    expected = 1 - math.exp(-NOISE_FLOOR_Z * 0.05 * math.sqrt(1.5))
    assert noise_floor(0.05, 2) == pytest.approx(expected)
    assert noise_floor(0.0, 1) == 0.0
    assert noise_floor(0.05, 1) > noise_floor(0.05, 2) > noise_floor(0.05, 8) > noise_floor(0.04, 8)
    with pytest.raises(ValueError):
        noise_floor(0.05, 0)


def test_the_noise_file_round_trips(tmp_path):
    runs = process_records(6, 4, {"add[a]": 0.05, "add[b]": 0.02})
    profile = process_noise(runs, ["a", "b", "c", "d"])
    path = tmp_path / "noise.json"
    path.write_text(json.dumps(profile.as_dict()))
    again = NoiseProfile.read(str(path))
    assert again.instances == profile.instances
    assert again.sources == ("a", "b", "c", "d")
    assert again.environment["machine_id"] == "m1"


@pytest.mark.parametrize("content, message", [
    ("{", "not JSON"),
    ('{"instances": {}}', "not an opbench noise file"),
    ('{"opbench_noise_version": 1, "instances": []}', "instances must map"),
    ('{"opbench_noise_version": 1, "instances": {"add[a]": {"sd": {"serial": {"ratio": -1}}}}}',
     r"instances.add\[a\].sd"),
])
def test_a_bad_noise_file_is_named_with_what_is_wrong(tmp_path, content, message):
    path = tmp_path / "noise.json"
    path.write_text(content)
    with pytest.raises(NoiseError, match=message) as info:
        NoiseProfile.read(str(path))
    assert str(path) in str(info.value)


def test_a_missing_noise_file_is_named(tmp_path):
    with pytest.raises(NoiseError, match="cannot read"):
        NoiseProfile.read(str(tmp_path / "absent.json"))


# --------------------------------------------------------------------------- in the gate

def _runs_with_drop(seed: int, drop: float, ids=("add[a]", "add[b]")):
    rng = np.random.default_rng(seed)
    base = record([instance(i, "add", measurement(rng, 1e-3, 1e-3)) for i in ids])
    cur = record([instance(i, "add", measurement(rng, 1e-3, 1e-3 / (1 - drop)))
                  for i in ids])
    return base, cur


def test_a_drop_within_an_instances_noise_floor_does_not_fail_the_gate():
    base, cur = _runs_with_drop(10, 0.15)
    plain = evaluate(base, cur)
    assert {i.verdict for i in plain.instances} == {GateVerdict.REGRESSION}
    floors = profile_of({"add[a]": 0.09, "add[b]": 0.01})
    result = evaluate(base, cur, settings=GateSettings(noise=floors))
    by_id = {i.id: i for i in result.instances}
    # add[a] moves 9% between processes: floor 1 - exp(-2.5 * 0.09 * sqrt(2)) = 27%
    assert by_id["add[a]"].min_effect == pytest.approx(noise_floor(0.09, 1))
    assert by_id["add[a]"].raised_by_noise
    assert by_id["add[a]"].verdict is GateVerdict.PASS
    assert "raised from 10% to this instance's noise floor" in by_id["add[a]"].reason
    # add[b] is quiet: its floor (3.5%) is below 10%, which stands, and the drop fails it
    assert by_id["add[b]"].min_effect == 0.10 and not by_id["add[b]"].raised_by_noise
    assert by_id["add[b]"].verdict is GateVerdict.REGRESSION
    note = next(n for n in result.notes if n.kind == KIND_NOISE)
    assert "min effect raised for 1 of 2 compared instances (add[a] 27.3%)" in note.message


def test_a_drop_beyond_the_floor_still_fails():
    base, cur = _runs_with_drop(11, 0.40)
    result = evaluate(base, cur, settings=GateSettings(noise=profile_of({"add[a]": 0.09,
                                                                          "add[b]": 0.09})))
    assert {i.verdict for i in result.instances} == {GateVerdict.REGRESSION}


def test_the_floor_uses_the_baselines_process_count():
    base, cur = (RunRecord.from_dict(r) for r in _runs_with_drop(12, 0.0))
    pooled = pool_baselines([base, base, base], ["b1", "b2", "b3"])
    floors = profile_of({"add[a]": 0.05, "add[b]": 0.05})
    one = evaluate_records(base, cur, settings=GateSettings(noise=floors)).instances[0]
    three = evaluate_records(pooled, cur, settings=GateSettings(noise=floors)).instances[0]
    assert one.min_effect == pytest.approx(noise_floor(0.05, 1))
    assert three.min_effect == pytest.approx(noise_floor(0.05, 3))


def test_instances_without_a_figure_and_another_machine_are_said():
    base, cur = _runs_with_drop(13, 0.0)
    floors = profile_of({"add[a]": 0.05})
    floors = NoiseProfile(floors.instances, floors.sources, {"machine_id": "elsewhere"})
    result = evaluate(base, cur, settings=GateSettings(noise=floors))
    note = next(n for n in result.notes if n.kind == KIND_NOISE)
    assert "1 have no figure in the profile" in note.message
    assert "measured on another machine" in note.message
    assert {i.id: i.noise_floor is None for i in result.instances} == {"add[a]": False,
                                                                         "add[b]": True}


def test_a_renamed_case_finds_its_figure_under_the_old_id():
    base, cur = _runs_with_drop(14, 0.15, ids=("add[a]",))
    cur["instances"][0]["id"] = "add[renamed]"
    result = evaluate(base, cur, settings=GateSettings(noise=profile_of({"add[a]": 0.09})))
    inst = result.instances[0]
    assert inst.renamed and inst.raised_by_noise


def test_the_absolute_paths_get_their_own_higher_floors():
    """A target 25% slower in absolute time: a regression of the target-time path at 10%,
    but not when the target's time moves 12% between processes (floor 34%)."""
    rng = np.random.default_rng(15)
    ref = 1e-3 * np.exp(rng.normal(0, 0.01, 30))
    base = RunSamples.of(ref, ref * np.exp(rng.normal(0, 0.01, 30)))
    cur = RunSamples.of(base.reference_s, tuple(t * 1.25 for t in base.target_s))
    plain = decide(base, cur, same_machine=True)
    floors = {PATH_RATIO: 0.05, PATH_TARGET_TIME: noise_floor(0.12, 2),
              PATH_REFERENCE_TIME: 0.3}
    raised = decide(base, cur, same_machine=True, floors=floors)
    assert plain.target_time.verdict.value == "REGRESSION"
    assert raised.target_time.min_effect == pytest.approx(floors[PATH_TARGET_TIME])
    assert raised.target_time.verdict.value != "REGRESSION"
    assert raised.ratio.min_effect == 0.10        # a floor below the configured one: no change
    assert f"(min effect {floors[PATH_TARGET_TIME]:.0%})" in raised.reason


# --------------------------------------------------------------------------- by simulation

LOUD_SD = 0.08        # add.bias[hidden=4096] here: the ratio moved 8.4% between processes
GATES = 600


def _process(rng, sd: float, slowdown: float = 1.0) -> RunSamples:
    ref, tgt = simulate_runs(rng, 1, GATE_DEFAULT_ROUNDS, 0.9, SHARED_MACHINE)
    return RunSamples.of(ref[0], tgt[0] * math.exp(rng.normal(0.0, sd)) * slowdown)


def noisy_instance_gates(seed: int, *, with_floor: bool, slowdown: float = 1.0,
                         sd: float = LOUD_SD) -> Counter:
    """Gates of one instance whose ratio moves `sd` between processes: baseline pooled from
    2 processes, stages 1 and 2 each in a fresh one; its floor, when used, comes from a
    profile of 5 other processes (sample SD, shrunk towards a typical 4% as with 18
    instances)."""
    rng = np.random.default_rng(seed)
    counts: Counter = Counter()
    for _ in range(GATES):
        floors = None
        if with_floor:
            medians = [np.median(np.log(p.ratios())) for p in
                       (_process(rng, sd) for _ in range(5))]
            own = float(np.std(medians, ddof=1))
            pulled = shrink({"x": InstanceNoise(5, {"s": {p: own for p in PATHS}}),
                             "typical": InstanceNoise(1000, {"s": {p: 0.04 for p in PATHS}})})
            floors = {PATH_RATIO: noise_floor(pulled["x"].sd(), 2)}
        parts = [_process(rng, sd) for _ in range(2)]
        baseline = RunSamples.of(np.concatenate([p.reference_s for p in parts]),
                                 np.concatenate([p.target_s for p in parts]))
        first = decide(baseline, _process(rng, sd, slowdown), floors=floors)
        second = (decide(baseline, _process(rng, sd, slowdown), floors=floors)
                  if needs_remeasure(first.verdict) else None)
        counts[staged(first, second).verdict] += 1
    return Counter({k: v / GATES for k, v in counts.items()})


def test_the_floor_stops_a_noisy_instance_from_failing_and_stalling_gates():
    without = noisy_instance_gates(120, with_floor=False)
    with_floor = noisy_instance_gates(120, with_floor=True)
    assert without[GateVerdict.REGRESSION] > 0.01
    assert with_floor[GateVerdict.REGRESSION] <= 0.01
    assert with_floor[GateVerdict.INCONCLUSIVE] < without[GateVerdict.INCONCLUSIVE] / 2
    assert with_floor[GateVerdict.PASS] >= 0.9


def test_a_slowdown_beyond_the_floor_is_still_caught():
    """The noisy instance's floor is ~22% (more when its 5-process SD reads high), and its
    offsets move each stage's reading by ~10%: a MindSpore side 60% slower (ratio -37.5%)
    clears the floor in both stages."""
    caught = noisy_instance_gates(121, with_floor=True, slowdown=1.6)
    assert caught[GateVerdict.REGRESSION] >= 0.95


def test_a_quiet_instance_keeps_the_default_and_its_power():
    """At 2% between processes the floor stays under 10%: a 20% slowdown is caught as
    without a profile."""
    caught = noisy_instance_gates(122, with_floor=True, slowdown=1.25, sd=0.02)
    assert caught[GateVerdict.REGRESSION] >= 0.95

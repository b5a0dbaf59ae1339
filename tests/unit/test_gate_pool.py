"""Several baseline runs pooled into one (gate/pool.py): rounds kept paired and concatenated,
statistics redone, runs measured differently refused, and the pool named in the notes."""
from __future__ import annotations

import numpy as np
import pytest
from test_gate_evaluate import instance, measurement, record

from opbench.gate.baseline import environment_notes, same_machine
from opbench.gate.evaluate import evaluate
from opbench.gate.pool import PoolError, pool_baselines
from opbench.results.records import RunRecord
from opbench.verdicts.stats import ratio_estimate


def run_record(seed: int, target_s: float = 2e-4, **kwargs) -> dict:
    """One run of add[4x4] as its results file holds it."""
    rng = np.random.default_rng(seed)
    return record([instance("add[4x4]", "add", measurement(rng, 1e-4, target_s))], **kwargs)


def typed(*runs: dict) -> list[RunRecord]:
    return [RunRecord.from_dict(r) for r in runs]


def pool(runs: list[dict], names: list[str]) -> RunRecord:
    return pool_baselines(typed(*runs), names)


def test_one_baseline_is_used_as_it_is():
    only = RunRecord.from_dict(run_record(1))
    assert pool_baselines([only], ["a.json"]) is only


def test_rounds_are_concatenated_in_run_order_and_the_ratio_is_redone():
    a, b = run_record(1), run_record(2)
    pooled = pool([a, b], ["a.json", "b.json"])
    m = pooled.instances[0].measurements["serial"]
    ma, mb = (r["instances"][0]["measurements"]["serial"] for r in (a, b))
    for side in ("torch", "mindspore"):
        assert list(m.samples_s[side]) == ma["samples_s"][side] + mb["samples_s"][side]
    assert m.rounds == 2 * ma["rounds"]
    assert list(m.run_of_round) == [0] * ma["rounds"] + [1] * mb["rounds"]
    # each run's process is a process of its own (the interval treats them as units)
    assert list(m.process_of_round) == ["1.1"] * ma["rounds"] + ["2.1"] * mb["rounds"]
    # every round keeps its pass (a bug kept only the first run's: shares were cut short)
    assert len(m.pass_of_round) == m.rounds
    expected = ratio_estimate(m.samples_s["torch"], m.samples_s["mindspore"],
                              groups=m.process_of_round)
    assert tuple(m.interval) == (expected.ratio, expected.ci_low, expected.ci_high)
    assert m.summary["mindspore"].median_s == pytest.approx(
        float(np.median(m.samples_s["mindspore"])))
    assert pooled.instances[0].pooled_runs == 2
    assert pooled.pooled_from == ("a.json", "b.json")
    # the inputs are not modified
    assert len(ma["samples_s"]["torch"]) == ma["rounds"]


def test_the_first_runs_interference_line_is_not_kept_in_the_pool():
    """A bug: the pool started from the first run's measurement and only overwrote the
    statistics the pool had, so run 1's "SLOW whatever the interference" line stood under
    the pooled interval, which found no interference at all."""
    a, b = run_record(1), run_record(2)
    a["instances"][0]["measurements"]["serial"]["interference_ruled_out"] = (
        "SLOW whatever the interference: with torch's clusters at its worst [0.4, 0.45]")
    m = pool([a, b], ["a.json", "b.json"]).instances[0].measurements["serial"]
    assert m.interference == () and m.interference_ruled_out is None
    assert not m.has("interference_ruled_out")


def test_process_offsets_average_out():
    """The reason to pool: one baseline process 12% fast, another 12% slow. Against either
    alone an unchanged current run looks changed by ~12%; against the pool it does not."""
    fast, slow = run_record(1, target_s=2e-4 / 1.12), run_record(2, target_s=2e-4 * 1.12)
    current = run_record(3)
    pooled = pool([fast, slow], ["fast.json", "slow.json"])
    ratio = pooled.instances[0].measurements["serial"].ratio
    assert ratio == pytest.approx(0.5, rel=0.03)
    fast, current = typed(fast, current)
    alone = evaluate(fast, current).instances[0]
    together = evaluate(pooled, current).instances[0]
    assert alone.verdict.value != "PASS"          # -12% against the fast process alone
    assert together.verdict.value == "PASS"


def test_an_instance_that_failed_in_one_run_pools_the_runs_that_measured_it():
    a = run_record(1)
    b = run_record(2)
    b["instances"][0] = instance("add[4x4]", "add", None, error="boom")
    pooled = pool([a, b], ["a.json", "b.json"])
    inst = pooled.instances[0]
    assert inst.pooled_runs == 1 and inst.verdict != "ERROR"
    assert (inst.measurements["serial"].samples_s
            == RunRecord.from_dict(a).instances[0].measurements["serial"].samples_s)


def test_an_instance_failed_everywhere_stays_failed():
    a, b = run_record(1), run_record(2)
    for r in (a, b):
        r["instances"][0] = instance("add[4x4]", "add", None, error="boom")
    inst = pool([a, b], ["a.json", "b.json"]).instances[0]
    assert inst.verdict == "ERROR" and inst.measurements == {}


@pytest.mark.parametrize("change, message", [
    (lambda r: r["config"].update(launch="blocking"), "b.json: launch is 'blocking'"),
    (lambda r: r["config"].update(threads=1), "b.json: threads is 1"),
    (lambda r: r["config"]["settings"].update(rounds=10), "b.json: settings.rounds is 10"),
    (lambda r: r["frameworks"]["mindspore"].update(version="2.11.0"),
     "b.json: mindspore 2.11.0, a.json has 2.10.0"),
])
def test_runs_not_measured_alike_are_refused_with_the_file_named(change, message):
    a, b = run_record(1), run_record(2)
    change(b)
    with pytest.raises(PoolError, match=message.replace("[", r"\[")):
        pool([a, b], ["a.json", "b.json"])


def test_two_builds_of_one_version_are_not_pooled():
    """A nightly and a patched build share the version string; their rounds measure
    different code, so pooling them would hide the very change a gate looks for."""
    a, b = run_record(1), run_record(2)
    a["frameworks"]["mindspore"]["build"] = "4bcfac44"
    b["frameworks"]["mindspore"]["build"] = "91d0e2aa"
    with pytest.raises(PoolError, match=r"b.json: mindspore 2.10.0 \(build 91d0e2aa\), "
                                        r"a.json has 2.10.0 \(build 4bcfac44\)"):
        pool([a, b], ["a.json", "b.json"])
    b["frameworks"]["mindspore"]["build"] = "4bcfac44"
    assert pool([a, b], ["a.json", "b.json"]).pooled_from == ("a.json", "b.json")


def test_a_build_named_by_one_run_only_pools():
    """A file older than the build key (or a framework that names none) cannot be told
    apart from a build: pooled, as before the key existed."""
    a, b = run_record(1), run_record(2)
    b["frameworks"]["mindspore"]["build"] = "91d0e2aa"
    assert pool([a, b], ["a.json", "b.json"]).pooled_from == ("a.json", "b.json")


def test_a_pool_from_several_machines_compares_ratios_only():
    a, b = run_record(1, machine="m1"), run_record(2, machine="m2")
    pooled = pool([a, b], ["a.json", "b.json"])
    (third,) = typed(run_record(3, machine="m1"))
    assert not same_machine(pooled, third)
    same = pool([a, run_record(2, machine="m1")], ["a.json", "b.json"])
    assert same_machine(same, third)


def test_the_notes_say_the_baseline_is_pooled():
    pooled = pool([run_record(1), run_record(2), run_record(3)],
                  ["a.json", "b.json", "c.json"])
    single, current = typed(run_record(1), run_record(4))
    notes = environment_notes(pooled, current)
    assert notes[0].kind == "pooled baseline"
    assert "pools 3 runs (a.json, b.json, c.json)" in notes[0].message
    assert not [n for n in environment_notes(single, current) if n.kind == "pooled baseline"]

"""The gate over whole records: pairing, hygiene, per-instance roll-up, stage 2, exit codes.

Records are built here in the results format (the same dicts `opbench run --json` writes),
with per-round samples drawn from a seeded generator, so the gate's inputs are realistic
without any framework; a test edits them as a file would differ, and the gate reads them
as records (RunRecord.from_dict), as `opbench gate` reads its files."""
from __future__ import annotations

import copy
from dataclasses import asdict
from typing import Any

import numpy as np
import pytest

from opbench.gate import baseline as hygiene
from opbench.gate.decision import GateVerdict
from opbench.gate.evaluate import GateSettings, gate_exit_code, min_effect_for
from opbench.gate.evaluate import evaluate as evaluate_records
from opbench.results.records import InstanceRecord, RunRecord
from opbench.verdicts.rules import EXIT_INCONCLUSIVE, EXIT_OK, EXIT_SLOW
from opbench.verdicts.stats import summarize

ROUNDS = 30
QUIET_SD = 0.01     # log-scale per-sample noise: decisive verdicts, deterministic tests


def measurement(rng, ref_s: float, target_s: float, sd: float = QUIET_SD) -> dict[str, Any]:
    ref = (ref_s * np.exp(rng.normal(0, sd, ROUNDS))).tolist()
    tgt = (target_s * np.exp(rng.normal(0, sd, ROUNDS))).tolist()
    ratios = np.array(ref) / np.array(tgt)
    ratio = float(np.median(ratios))
    return {"mode": "serial", "loops": 1, "rounds": ROUNDS, "rounds_requested": ROUNDS,
            "order": [], "confidence": 0.95, "coverage": 0.95, "method": "sign test",
            "too_few_rounds": False, "threshold": 0.8, "notes": [],
            "samples_s": {"torch": ref, "mindspore": tgt}, "ratio": ratio,
            "ci_low": float(ratios.min()), "ci_high": float(ratios.max()),
            "verdict": "PASS" if ratio >= 0.8 else "SLOW",
            "summary": {"torch": asdict(summarize(ref)), "mindspore": asdict(summarize(tgt))}}


def instance(id_: str, op: str, m: dict | None = None, *, verdict: str | None = None,
             shape=(4, 4), tags=("t",), error: str | None = None,
             api: str = "mindspore.mint.add") -> dict[str, Any]:
    return {"id": id_, "case": id_.split("[")[0], "op": op, "file": "cases/x.yaml",
            "line": 1, "tags": list(tags),
            "params": {"shape": list(shape)},
            "inputs": [{"name": "x", "shape": list(shape), "dtype": "float32",
                        "dist": "normal"}],
            "apis": {"torch": f"torch.{op}", "mindspore": api},
            "backward": False,
            "verdict": verdict or (m["verdict"] if m else "ERROR"),
            "error": error, "measurements": {"serial": m} if m else {}}


def record(instances, *, machine="m1", torch_version="2.13.0", ms_version="2.10.0",
           rounds=ROUNDS, complete=True) -> dict[str, Any]:
    return {"schema_version": 1, "created_utc": "2025-01-01T00:00:00+00:00",
            "complete": complete, "interrupted": False, "overhead": {},
            "environment": {"opbench": "0.1.0", "python": "3.11", "numpy": "1.26",
                            "machine_id": machine, "cpu_model": "cpu", "cpu_count": 2,
                            "git_commit": "abc"},
            "config": {"reference": "torch", "target": "mindspore", "device": "cpu",
                       "threads": 2, "modes": ["serial"], "threshold": 0.8,
                       "settings": {"rounds": rounds, "min_sample_time_s": 0.02,
                                    "warmup_time_s": 0.1}},
            "frameworks": {"torch": {"version": torch_version, "device": "cpu", "threads": 2},
                           "mindspore": {"version": ms_version, "device": "cpu",
                                         "threads": 2}},
            "instances": list(instances)}


def typed(instances: list[dict]) -> list[InstanceRecord]:
    return [InstanceRecord.from_dict(i) for i in instances]


def evaluate(base: dict, cur: dict, *, remeasured: dict | None = None, **options):
    """The gate over two records given as dicts, and stage-2 instances by id."""
    second = {i: InstanceRecord.from_dict(inst) for i, inst in (remeasured or {}).items()}
    return evaluate_records(RunRecord.from_dict(base), RunRecord.from_dict(cur),
                            remeasured=second, **options)


def match_instances(base: list[dict], cur: list[dict]):
    return hygiene.match_instances(typed(base), typed(cur))


def environment_notes(base: dict, cur: dict):
    return hygiene.environment_notes(RunRecord.from_dict(base), RunRecord.from_dict(cur))


def same_machine(base: dict, cur: dict) -> bool:
    return hygiene.same_machine(RunRecord.from_dict(base), RunRecord.from_dict(cur))


def instance_signature(inst: dict) -> str:
    return hygiene.instance_signature(InstanceRecord.from_dict(inst))


def pair_of_runs(seed: int, target_slowdown: dict[str, float] | None = None,
                 ids=("add[a]", "add[b]", "relu[a]")):
    """A baseline and a current record of the same instances; target_slowdown multiplies
    the current target time of the named instances."""
    rng = np.random.default_rng(seed)
    target_slowdown = target_slowdown or {}
    base = [instance(i, i.split("[")[0], measurement(rng, 1e-3, 1e-3)) for i in ids]
    cur = [instance(i, i.split("[")[0],
                    measurement(rng, 1e-3, 1e-3 * target_slowdown.get(i, 1.0))) for i in ids]
    return record(base), record(cur)


# --------------------------------------------------------------------------- baseline hygiene

def test_pairs_by_id_and_lists_missing_and_new():
    rng = np.random.default_rng(1)
    base = [instance("a", "add", measurement(rng, 1, 1)),
            instance("b", "add", measurement(rng, 1, 1), shape=(8,))]
    cur = [instance("a", "add", measurement(rng, 1, 1)),
           instance("c", "add", measurement(rng, 1, 1), shape=(16,))]
    m = match_instances(base, cur)
    assert [p.id for p in m.pairs] == ["a"]
    assert [i.id for i in m.missing] == ["b"]
    assert [i.id for i in m.new] == ["c"]
    kinds = [n.kind for n in m.notes()]
    assert kinds == ["missing", "new"]


def test_a_renamed_id_is_paired_and_listed():
    rng = np.random.default_rng(2)
    base = [instance("add[shape=4x4]", "add", measurement(rng, 1, 1))]
    cur = [instance("add.tensor[shape=4x4]", "add", measurement(rng, 1, 1))]
    # Same op, APIs, params and inputs under another id: a rename.
    base[0]["case"], cur[0]["case"] = "add", "add.tensor"
    m = match_instances(base, cur)
    assert len(m.pairs) == 1 and m.pairs[0].renamed
    assert m.pairs[0].baseline_id == "add[shape=4x4]"
    assert not m.missing and not m.new
    assert "'add[shape=4x4]' -> 'add.tensor[shape=4x4]'" in m.notes()[0].message


def test_ambiguous_renames_are_not_guessed():
    rng = np.random.default_rng(3)
    base = [instance(i, "add", measurement(rng, 1, 1)) for i in ("x1", "x2")]
    cur = [instance(i, "add", measurement(rng, 1, 1)) for i in ("y1", "y2")]
    m = match_instances(base, cur)
    assert not m.pairs and len(m.missing) == 2 and len(m.new) == 2
    assert m.ambiguous_renames == ((("x1", "x2"), ("y1", "y2")),)
    assert any("ambiguous" in n.message for n in m.notes())


def test_signature_sees_apis_and_inputs():
    rng = np.random.default_rng(4)
    a = instance("a", "add", measurement(rng, 1, 1))
    assert instance_signature(a) == instance_signature(copy.deepcopy(a) | {"id": "z"})
    assert instance_signature(a) != instance_signature(
        instance("a", "add", measurement(rng, 1, 1), api="mindspore.ops.add"))
    assert instance_signature(a) != instance_signature(
        instance("a", "add", measurement(rng, 1, 1), shape=(5, 4)))


def test_selection_filters_the_baseline_like_the_run():
    rng = np.random.default_rng(5)
    recs = [instance("add[f32]", "add", measurement(rng, 1, 1), tags=("elementwise",)),
            instance("relu[f32]", "relu", measurement(rng, 1, 1), tags=("activation",))]
    recs = typed(recs)
    assert [r.id for r in hygiene.select_records(recs, ops=("relu",))] == ["relu[f32]"]
    assert [r.id for r in hygiene.select_records(recs, keyword="ADD")] == ["add[f32]"]
    assert [r.id for r in hygiene.select_records(recs, tags=("activation",))] == ["relu[f32]"]
    assert len(hygiene.select_records(recs)) == 2


def test_environment_differences_are_spelled_out():
    base = record([], machine="m1", torch_version="2.12.0", rounds=15, complete=False)
    cur = record([], machine="m2", torch_version="2.13.0", rounds=30)
    cur["config"]["threads"] = 4
    notes = environment_notes(base, cur)
    text = "\n".join(f"{n.kind}: {n.message}" for n in notes)
    assert "setup: the baseline run did not complete" in text
    assert "machine: different machine: baseline m1" in text
    assert ("framework version: torch 2.12.0 in the baseline, 2.13.0 now (the reference "
            "moved") in text
    assert "config: threads: 2 in the baseline, 4 now" in text
    assert "15 rounds per measurement, this run 30" in text
    assert not same_machine(base, cur)
    assert environment_notes(record([]), record([])) == []


def test_another_build_of_one_version_is_a_note():
    """Two builds of MindSpore 2.10.0 (a nightly against a patched one) are different code
    under one version string: the notes name both builds, and a build named by one run only
    is said to be unknown rather than passed over."""
    base, cur = record([]), record([])
    base["frameworks"]["mindspore"]["build"] = "4bcfac44"
    cur["frameworks"]["mindspore"]["build"] = "91d0e2aa"
    (note,) = environment_notes(base, cur)
    assert note.kind == "framework version"
    assert note.message == ("mindspore 2.10.0 (build 4bcfac44) in the baseline, "
                            "2.10.0 (build 91d0e2aa) now")
    del base["frameworks"]["mindspore"]["build"]
    (note,) = environment_notes(base, cur)
    assert note.message == ("mindspore 2.10.0 in the baseline, 2.10.0 (build 91d0e2aa) now: "
                            "one run names no build, so whether the builds differ is unknown")
    cur["frameworks"]["mindspore"]["build"] = base["frameworks"]["mindspore"]["build"] = "4bcfac44"
    assert environment_notes(base, cur) == []


# --------------------------------------------------------------------------- whole gate

def test_synthetic_records_follow_the_results_schema():
    from opbench.results.io import validate_record

    base, cur = pair_of_runs(9)
    validate_record(base)
    validate_record(cur)


def test_identical_runs_pass():
    base, cur = pair_of_runs(10)
    result = evaluate(base, cur)
    assert {i.verdict for i in result.instances} == {GateVerdict.PASS}
    assert result.exit_code == EXIT_OK
    assert result.same_machine and result.notes == ()
    assert result.to_remeasure() == []


def test_a_slowdown_asks_for_stage_2_and_fails_when_confirmed():
    base, cur = pair_of_runs(11, {"add[b]": 1.25})
    first = evaluate(base, cur)
    assert first.to_remeasure() == ["add[b]"]
    assert first.exit_code == EXIT_SLOW           # stage 1 alone already says regression
    _, again = pair_of_runs(12, {"add[b]": 1.25})
    second = {"add[b]": again["instances"][1]}
    final = evaluate(base, cur, remeasured=second)
    inst = {i.id: i for i in final.instances}["add[b]"]
    assert inst.verdict is GateVerdict.REGRESSION and inst.remeasured
    assert inst.stage1_verdict is GateVerdict.REGRESSION
    assert inst.decided_by == "ratio + target time"
    assert "stage 1 REGRESSION" in inst.reason and "stage 2 REGRESSION" in inst.reason
    assert final.exit_code == EXIT_SLOW
    assert final.worst_first()[0].id == "add[b]"
    assert final.to_remeasure() == []


def test_an_unconfirmed_regression_passes():
    base, cur = pair_of_runs(13, {"add[b]": 1.25})
    _, clean = pair_of_runs(14)
    final = evaluate(base, cur, remeasured={"add[b]": clean["instances"][1]})
    assert {i.id: i for i in final.instances}["add[b]"].verdict is GateVerdict.PASS
    assert final.exit_code == EXIT_OK


def test_a_stage_2_for_a_passing_instance_is_refused():
    base, cur = pair_of_runs(15)
    with pytest.raises(ValueError, match="no second stage"):
        evaluate(base, cur, remeasured={"add[a]": cur["instances"][0]})


def test_missing_instances_make_the_gate_inconclusive_new_ones_do_not():
    base, cur = pair_of_runs(16)
    cur_missing = copy.deepcopy(cur)
    cur_missing["instances"] = cur_missing["instances"][:2]
    result = evaluate(base, cur_missing)
    assert {i.id: i.verdict for i in result.instances}["relu[a]"] is GateVerdict.MISSING
    assert result.exit_code == EXIT_INCONCLUSIVE
    assert any(n.kind == "missing" for n in result.notes)
    # Deselected on purpose (--op add): not missing.
    assert evaluate(base, cur_missing, settings=GateSettings(ops=("add",))).exit_code == EXIT_OK
    # A new instance is listed but cannot fail the gate.
    base_fewer = copy.deepcopy(base)
    base_fewer["instances"] = base_fewer["instances"][:2]
    base_fewer["instances"][1]["inputs"][0]["shape"] = [9, 9]   # not a rename of relu
    base_fewer["instances"][1]["params"] = {"shape": [9, 9]}
    result = evaluate(base_fewer, cur)
    verdicts = {i.id: i.verdict for i in result.instances}
    assert verdicts["relu[a]"] is GateVerdict.NEW
    assert result.exit_code == EXIT_OK
    assert any(n.kind == "new" for n in result.notes)


def test_a_case_broken_now_fails_the_gate_a_flaky_one_is_inconclusive():
    base, cur = pair_of_runs(17)
    cur["instances"][0] = instance("add[a]", "add", verdict="ERROR", error="RuntimeError: x")
    result = evaluate(base, cur)
    assert result.instances[0].verdict is GateVerdict.BROKEN
    assert result.to_remeasure() == ["add[a]"]
    broken_again = evaluate(base, cur, remeasured={"add[a]": cur["instances"][0]})
    assert broken_again.instances[0].verdict is GateVerdict.BROKEN
    assert broken_again.exit_code == EXIT_SLOW
    _, fine = pair_of_runs(18)
    flaky = evaluate(base, cur, remeasured={"add[a]": fine["instances"][0]})
    assert flaky.instances[0].verdict is GateVerdict.INCONCLUSIVE
    assert "flaky" in flaky.instances[0].reason
    assert flaky.exit_code == EXIT_INCONCLUSIVE


def test_a_baseline_without_measurement_gives_new_or_inconclusive():
    base, cur = pair_of_runs(19)
    base["instances"][0] = instance("add[a]", "add", verdict="MISMATCH")
    assert evaluate(base, cur).instances[0].verdict is GateVerdict.NEW
    cur["instances"][0] = instance("add[a]", "add", verdict="MISMATCH")
    assert evaluate(base, cur).instances[0].verdict is GateVerdict.INCONCLUSIVE


def test_different_machine_compares_ratios_only_and_says_so():
    base, cur = pair_of_runs(20, {"add[b]": 1.25})
    cur["environment"]["machine_id"] = "m2"
    for inst in cur["instances"]:      # the other machine is 40% slower on both sides
        for side in ("torch", "mindspore"):
            s = inst["measurements"]["serial"]["samples_s"]
            s[side] = [t * 1.4 for t in s[side]]
    result = evaluate(base, cur)
    verdicts = {i.id: i for i in result.instances}
    assert verdicts["add[a]"].verdict is GateVerdict.PASS
    assert verdicts["add[b]"].verdict is GateVerdict.REGRESSION
    assert verdicts["add[b]"].decided_by == "ratio"
    assert not result.same_machine
    assert result.notes[0].kind == "machine"


def test_per_case_min_effect_override():
    settings = GateSettings(min_effect=0.1, min_effect_overrides=(("add", 0.3),
                                                                  ("add[b*", 0.2)))
    assert min_effect_for("add[a]", "add", settings) == 0.3
    assert min_effect_for("add[b]", "add", settings) == 0.2       # last match wins
    assert min_effect_for("relu[a]", "relu", settings) == 0.1
    base, cur = pair_of_runs(21, {"add[b]": 1.25})
    relaxed = evaluate(base, cur, settings=GateSettings(min_effect_overrides=(("add", 0.3),)))
    assert {i.id: i.verdict for i in relaxed.instances}["add[b]"] is GateVerdict.PASS
    assert {i.id: i.min_effect for i in relaxed.instances}["add[b]"] == 0.3
    with pytest.raises(ValueError, match="min_effect"):
        GateSettings(min_effect_overrides=(("x", 1.5),))


def test_min_effect_precedence_pattern_then_case_then_global():
    settings = GateSettings(min_effect=0.1, min_effect_overrides=(("add", 0.3),))
    assert min_effect_for("add[a]", "add", settings, case_min_effect=0.2) == 0.3
    assert min_effect_for("relu[a]", "relu", settings, case_min_effect=0.2) == 0.2
    assert min_effect_for("relu[a]", "relu", settings, case_min_effect=None) == 0.1
    assert min_effect_for("relu[a]", "relu", settings) == 0.1


def with_case_min_effect(run: dict, id_: str, value) -> dict:
    next(i for i in run["instances"] if i["id"] == id_)["min_effect"] = value
    return run


def gated(base, cur, id_: str = "add[b]", **settings):
    inst = {i.id: i for i in evaluate(base, cur, settings=GateSettings(**settings)).instances}
    return inst[id_].verdict, inst[id_].min_effect


def test_the_case_min_effect_recorded_in_the_run_relaxes_the_gate():
    # A 25% slowdown: a regression at the default 10%, not at the case's own 30%.
    base, cur = pair_of_runs(24, {"add[b]": 1.25})
    assert gated(base, cur) == (GateVerdict.REGRESSION, 0.1)
    with_case_min_effect(cur, "add[b]", 0.3)
    assert gated(base, cur) == (GateVerdict.PASS, 0.3)
    # The case's value beats --min-effect, in either direction ...
    assert gated(base, cur, min_effect=0.05) == (GateVerdict.PASS, 0.3)
    with_case_min_effect(cur, "add[b]", 0.05)
    assert gated(base, cur, min_effect=0.3) == (GateVerdict.REGRESSION, 0.05)
    # ... and a matching --min-effect-for beats the case's value.
    assert gated(base, cur, min_effect_overrides=(("add", 0.3),)) == (GateVerdict.PASS, 0.3)
    assert gated(base, cur, min_effect_overrides=(("relu", 0.3),)) == (
        GateVerdict.REGRESSION, 0.05)


def test_the_baseline_min_effect_applies_only_to_records_without_the_key():
    base, cur = pair_of_runs(25, {"add[b]": 1.25})
    with_case_min_effect(base, "add[b]", 0.3)
    # The current record predates the key: the baseline's value is all there is.
    assert gated(base, cur) == (GateVerdict.PASS, 0.3)
    # The current run says the case sets none (null): the case file no longer asks for it.
    with_case_min_effect(cur, "add[b]", None)
    assert gated(base, cur) == (GateVerdict.REGRESSION, 0.1)
    # The current run's own value wins over the baseline's.
    with_case_min_effect(cur, "add[b]", 0.2)
    assert gated(base, cur)[1] == 0.2


@pytest.mark.parametrize("bad", [0, 1.0, -0.5, "0.2", True])
def test_a_bad_recorded_min_effect_names_the_instance(bad):
    base, cur = pair_of_runs(26)
    with_case_min_effect(cur, "add[b]", bad)
    with pytest.raises(ValueError, match=r"^add\[b\]: min_effect in this run must be"):
        evaluate(base, cur)


def test_fail_on_slow_makes_the_cross_framework_verdict_gate():
    base, cur = pair_of_runs(22)
    cur["instances"][0]["verdict"] = "SLOW"
    assert evaluate(base, cur).exit_code == EXIT_OK
    assert [i.id for i in evaluate(base, cur).slow_now()] == ["add[a]"]
    strict = evaluate(base, cur, settings=GateSettings(fail_on_slow=True))
    assert gate_exit_code(strict) == EXIT_SLOW


def test_a_mode_missing_now_is_listed():
    base, cur = pair_of_runs(23)
    extra = copy.deepcopy(base["instances"][0]["measurements"]["serial"])
    base["instances"][0]["measurements"]["async"] = extra
    result = evaluate(base, cur)
    inst = result.instances[0]
    assert inst.verdict is GateVerdict.MISSING
    assert "async: in the baseline, not measured now" in inst.reason
    assert result.exit_code == EXIT_INCONCLUSIVE

"""The self-check beside MindSpore's speed modes (model/impact/mode_match.py): the replay
rounds whose speed probe reads within MODE_FACTOR of the capture's, a step's calls summed per
round, and the self-check over those rounds (pipeline.ModelImpact.self_check_in_capture_mode);
what the views say (report/model.py)."""
from __future__ import annotations

import jsonschema
import pytest

from opbench.model.impact.mode_match import MODE_FACTOR, mode_match, round_sums
from opbench.model.impact.record import ModelRecord, model_schema
from opbench.report.model import model_lines


def test_a_rounds_calls_are_each_calls_median_over_its_passes_summed():
    # two calls, 2 passes x 2 rounds each; the second call is not counted (a stand-in)
    per_call = [(1.0, 3.0, 10.0, 30.0), (100.0, 100.0, 100.0, 100.0)]
    assert round_sums(per_call, [True, False], passes=2, rounds=2) == [2.0, 20.0]
    assert round_sums(per_call, [True, True], passes=2, rounds=2) == [102.0, 120.0]


def test_rounds_within_the_factor_of_the_capture_probe_are_in_its_mode():
    capture = 0.4e-3
    probes = [0.41e-3, 3.9e-3, capture * MODE_FACTOR, capture / MODE_FACTOR * 0.99]
    match = mode_match(capture, probes, [1.0, 9.0, 3.0, 5.0])
    assert match.in_mode == (True, False, True, False)
    assert match.rounds == 4 and match.rounds_in_mode == 2 and match.matched
    assert match.in_mode_call_sum_s == pytest.approx(2.0)     # median of 1.0 and 3.0


def test_no_round_in_the_capture_mode_leaves_no_like_for_like_sum():
    match = mode_match(4e-3, [0.4e-3, 0.45e-3], [1.0, 1.1])
    assert not match.matched and match.in_mode_call_sum_s is None


@pytest.mark.parametrize("capture, probes, sums", [
    (None, [1e-3], [1.0]),          # torch, or a capture from before the probe
    (1e-3, [], []),                 # replay rounds without a probe
    (1e-3, [1e-3, 1e-3], [1.0]),    # rounds and sums that do not pair
])
def test_without_both_probes_there_is_no_mode_match(capture, probes, sums):
    assert mode_match(capture, probes, sums) is None


def _record(**model) -> dict:
    base = {"format": 1, "reference": "torch", "target": "mindspore",
            "traced_framework": "mindspore", "traced_s": 0.10, "coverage": 1.0,
            "covered_traced_s": 0.10, "own_traced_s": 0.10, "self_check": 1.85,
            "projected_s": {}, "apis": [],
            "region": {"rule": "automatic", "steps": 7, "calls_per_step": 9,
                       "excluded_calls": 0, "excluded_s": 0.0, "note": ""}}
    base.update(model)
    return {"model": base}


def _text(record: dict) -> str:
    jsonschema.Draft202012Validator(model_schema()).validate(record)
    return "\n".join(model_lines(ModelRecord.from_json(record)))


def test_the_view_says_the_replay_ran_in_another_mode():
    """ms_cell_mlp_sgd, 2026-11-27: capture probe 404 us, replay rounds 3.5-4.4 ms, +185%."""
    text = _text(_record(speed_modes={
        "capture_probe_s": 404e-6, "replay_probe_s": [3.88e-3, 3.52e-3, 4.38e-3],
        "rounds_in_capture_mode": 0, "rounds": 3, "mode_factor": MODE_FACTOR,
        "self_check_in_capture_mode": None}))
    assert "speed probe: capture 404 us a call" in text
    assert "no round ran in the capture's mode" in text


def test_the_view_gives_the_self_check_over_the_rounds_in_the_capture_mode():
    text = _text(_record(self_check=0.44, speed_modes={
        "capture_probe_s": 3.98e-3, "replay_probe_s": [1.6e-3, 2.9e-3, 3.0e-3],
        "rounds_in_capture_mode": 2, "rounds": 3, "mode_factor": MODE_FACTOR,
        "self_check_in_capture_mode": 0.23}))
    assert "over the 2 of 3 rounds in the capture's mode (within 2x) the self-check reads +23%" \
        in text


def test_a_record_without_a_probe_reads_and_says_nothing_of_modes():
    text = _text(_record())
    assert ModelRecord.from_json(_record()).speed_modes is None
    assert "speed probe" not in text


def test_a_jit_step_says_plainly_the_self_check_does_not_apply_to_it():
    """ms_jit_train_step: the @jit step is 99.2% of the region and no replay runs it."""
    text = _text(_record(traced_s=0.0467, own_traced_s=0.000378, self_check=-0.94,
                         coverage=0.008, not_covered=[{
                             "api": "mindspore.jit", "reason": "a @mindspore.jit-compiled "
                             "function (train_step): no replay can rebuild it",
                             "calls": 4, "traced_s": 0.0463, "share": 0.992}]))
    assert "the self-check does not apply to 99.2% of the region" in text
    assert "mindspore.jit x4" in text
    assert "judge by the projection" not in text


def test_the_pipeline_pairs_each_replay_round_with_its_probe():
    """Two replay processes of two rounds: per-call latencies `passes` per round in order, a
    stand-in (not ok) left out of the sums; the capture's probe from the program."""
    from types import SimpleNamespace

    from opbench.model.impact.pipeline import ModelOptions, _mode_match
    from opbench.model.replay.executor import CallStatus
    from opbench.runner import ipc

    status = [CallStatus(0, "a", True), CallStatus(1, "b", False, stand_in=True)]
    impact = SimpleNamespace(traced_framework="mindspore", status={"mindspore": status},
                             program=SimpleNamespace(speed_probe_s=0.4e-3), windows={})

    def result(probes, first_call):
        return ipc.ReplayResult(framework="mindspore", version="2.10", threads=1,
                                launch="queued", status=tuple(status), pid=1,
                                per_call_s=(first_call, (9.0,) * 4), probe_s=probes)
    runs = [result((0.4e-3, 4e-3), (1.0, 1.0, 5.0, 5.0)),
            result((0.5e-3, 0.41e-3), (2.0, 2.0, 3.0, 3.0))]
    match = _mode_match(impact, runs, ModelOptions(passes=2, rounds=2))
    assert match.in_mode == (True, False, True, True)
    assert match.in_mode_call_sum_s == pytest.approx(2.0)       # median of 1, 2, 3
    # an alias whose window holds unseen work (alias_windows.py) is out of the sums too
    impact.windows = {0: "an alias whose window holds ..."}
    assert _mode_match(impact, runs, ModelOptions(passes=2, rounds=2)).in_mode_call_sum_s \
        == pytest.approx(0.0)
    impact.windows = {}
    # a replay process without its probes (an older replay): no match at all
    assert _mode_match(impact, [result((), (1.0,) * 4)], ModelOptions(passes=2, rounds=2)) \
        is None


def _projection(launch: str) -> dict:
    return {"estimate": 0.07, "ci_low": 0.06, "ci_high": 0.08, "processes": 3,
            "launch": launch}


def test_a_blocking_replay_reading_low_is_told_as_the_scripts_context():
    """hf_bert_inference, 2026-11-28: torch's replay -35% of its trace; a call inside the
    script took 1.5-4.2x its back-to-back time with no tracer (tools/context_effect.py)."""
    text = _text(_record(traced_framework="torch", self_check=-0.35,
                         projected_s={"torch": _projection("blocking")}))
    assert "cost more inside the script, between its Python" in text
    assert "another speed" not in text


def test_a_queued_replay_far_off_is_told_as_the_processes_speed():
    text = _text(_record(self_check=-0.55, projected_s={"mindspore": _projection("queued")}))
    assert "its replay's 3 processes ran at another speed" in text
    assert "inside the script" not in text


def test_a_blocking_replay_reading_high_is_not_the_context():
    text = _text(_record(traced_framework="torch", self_check=0.40,
                         projected_s={"torch": _projection("blocking")}))
    assert "another speed" in text and "inside the script" not in text

"""The runner wired to fake frameworks on a fake clock: verdicts, failures, the record and
its file, deterministically and without torch or MindSpore."""
from __future__ import annotations

import json

import jsonschema
import pytest
from runner_fakes import binary_case, case_file, fake_config, fake_session, load_instances

from opbench.config import RunConfig
from opbench.results.io import validate_record
from opbench.results.records import load_results
from opbench.runloop.recorded_run import check_only, run
from opbench.runner.raw_records import instance_header
from opbench.runner.session import ApiError


def run_fake(tmp_path, *cases, config=None, json_path=None, on_progress=None, **target):
    """The record as the results file holds it (plain JSON data), and the session."""
    config = config or fake_config()
    session = fake_session(config, **target)
    instances = load_instances(case_file(tmp_path, *cases))
    record = run(instances, config, session=session, json_path=json_path,
                 on_progress=on_progress)
    return record.to_dict(), session


def only(record):
    (inst,) = record["instances"]
    return inst


# --------------------------------------------------------------------------- verdicts

def test_equal_cost_passes_with_a_ratio_near_one(tmp_path):
    record, _ = run_fake(tmp_path, binary_case("add"))
    validate_record(record)
    inst = only(record)
    assert inst["verdict"] == "PASS"
    assert inst["check"]["ok"] and inst["check"]["max_abs_err"] == 0.0
    m = inst["measurements"]["serial"]
    assert m["ratio"] == pytest.approx(1.0, rel=1e-3)
    assert m["ci_low"] <= m["ratio"] <= m["ci_high"]
    assert m["rounds"] == 6 and m["loops"] > 1
    assert len(m["samples_s"]["torch"]) == len(m["samples_s"]["mindspore"]) == 6
    assert m["order"][0] == ["torch", "mindspore"] and m["order"][1] == ["mindspore", "torch"]
    assert record["complete"] is True and record["interrupted"] is False
    assert inst["output_shapes"] == [4, 8]
    assert inst["apis"] == {"torch": "torch.add", "mindspore": "mindspore.add"}


def test_target_twice_as_slow_is_slow(tmp_path):
    record, _ = run_fake(tmp_path, binary_case("add"), cost_s=2e-4)
    validate_record(record)
    inst = only(record)
    assert inst["verdict"] == "SLOW"
    m = inst["measurements"]["serial"]
    assert m["ratio"] == pytest.approx(0.5, rel=1e-3)
    assert m["ci_high"] < m["threshold"] == 0.8
    summary = m["summary"]
    assert summary["mindspore"]["median_s"] == pytest.approx(2e-4, rel=1e-3)
    assert summary["torch"]["median_s"] == pytest.approx(1e-4, rel=1e-3)


def test_a_case_threshold_overrides_the_run_threshold(tmp_path):
    record, _ = run_fake(tmp_path, binary_case("add", extra="threshold: 0.4"), cost_s=2e-4)
    inst = only(record)
    assert inst["threshold"] == 0.4
    assert inst["measurements"]["serial"]["threshold"] == 0.4
    assert inst["verdict"] == "PASS"


def test_wrong_values_are_a_mismatch_and_are_not_timed(tmp_path):
    wrong = {"mindspore.add": lambda x, y: x + y + 1.0}
    record, session = run_fake(tmp_path, binary_case("add"), functions=wrong)
    validate_record(record)
    inst = only(record)
    assert inst["verdict"] == "MISMATCH"
    assert "measurements" not in inst
    assert inst["check"]["ok"] is False
    assert inst["check"]["max_abs_err"] == pytest.approx(1.0)
    assert "32 of 32 values differ" in inst["check"]["detail"]
    # called once for the correctness check, never in a timing loop
    assert session.adapters["mindspore"].calls["mindspore.add"] == 1


def test_a_raising_target_is_an_error_and_the_run_goes_on(tmp_path):
    record, _ = run_fake(tmp_path, binary_case("broken", mindspore_api="mindspore.boom"),
                         binary_case("add"))
    validate_record(record)
    broken, add = record["instances"]
    assert broken["verdict"] == "ERROR"
    assert broken["error"].startswith("mindspore failed calling mindspore.boom: RuntimeError")
    assert "fake kernel failed" in broken["error"]
    assert "RuntimeError" in broken["traceback"]
    assert "measurements" not in broken
    assert add["verdict"] == "PASS"
    assert record["complete"] is True


def test_expected_mismatch_is_recorded_and_still_timed(tmp_path):
    wrong = {"mindspore.add": lambda x, y: x + y + 1.0}
    record, _ = run_fake(tmp_path, binary_case("add", extra='expect_mismatch: "known offset"'),
                         functions=wrong)
    validate_record(record)
    inst = only(record)
    assert inst["check"]["ok"] is False
    assert inst["check"]["expected_mismatch"] == "known offset"
    assert inst["verdict"] == "PASS"
    assert "serial" in inst["measurements"]


def test_selected_output_of_a_tuple_api(tmp_path):
    case = """
  - name: halves
    inputs:
      x: {shape: [4, 2]}
    torch: {api: torch.split2, args: [$x], output: 1}
    mindspore: {api: mindspore.split2, args: [$x], output: 1}
"""
    record, _ = run_fake(tmp_path, case, config=check_only(fake_config()))
    inst = only(record)
    assert inst["verdict"] == "PASS"
    assert inst["output_shapes"] == [2, 2]


def test_both_modes_are_measured_and_explained(tmp_path):
    record, _ = run_fake(tmp_path, binary_case("add"),
                         config=fake_config(modes=("serial", "async")))
    validate_record(record)
    inst = only(record)
    assert set(inst["measurements"]) == {"serial", "async"}
    assert inst["measurements"]["async"]["mode"] == "async"
    assert isinstance(inst["explanation"], list)


def test_dispatch_bound_ops_are_explained_from_the_overheads(tmp_path):
    # an op costing about its framework's trivial-op floor measures overhead, not a kernel
    record, _ = run_fake(tmp_path, binary_case("add"), cost_s=2.5e-5)
    overhead = record["overhead"]
    assert set(overhead) == {"torch", "mindspore"}
    assert overhead["mindspore"]["dispatch_floor_serial_s"] == pytest.approx(2e-5, rel=1e-2)
    notes = only(record)["measurements"]["serial"]["notes"]
    assert any(n.startswith("mindspore is dispatch-bound") for n in notes)
    assert not any(n.startswith("torch is dispatch-bound") for n in notes)


def test_check_only_runs_no_timing_and_no_overhead(tmp_path):
    record, session = run_fake(tmp_path, binary_case("add"), config=check_only(fake_config()))
    validate_record(record)
    inst = only(record)
    assert inst["verdict"] == "PASS"
    assert "measurements" not in inst
    assert record["overhead"] == {}
    assert session.adapters["torch"].calls["torch.add"] == 1


# --------------------------------------------------------------------------- backward

BACKWARD_CASE = """
  - name: sine
    backward: true
    inputs:
      x: {shape: [3]}
    torch: {api: torch.sin, args: [$x]}
    mindspore: {api: mindspore.sin, args: [$x]}
"""


def test_backward_gradients_are_compared_and_timed(tmp_path):
    record, _ = run_fake(tmp_path, BACKWARD_CASE)
    validate_record(record)
    inst = only(record)
    assert inst["verdict"] == "PASS"
    assert inst["grad_check"]["ok"] is True
    assert set(inst["measurements"]) == {"serial", "serial+backward"}


def test_wrong_gradients_are_a_mismatch(tmp_path):
    record, _ = run_fake(tmp_path, BACKWARD_CASE, grad_scale=2.0)
    validate_record(record)
    inst = only(record)
    assert inst["verdict"] == "MISMATCH"
    assert inst["check"]["ok"] is True
    assert inst["grad_check"]["ok"] is False
    assert inst["error"].startswith("gradients differ")
    assert "measurements" not in inst


def test_no_backward_option_skips_the_gradients(tmp_path):
    record, _ = run_fake(tmp_path, BACKWARD_CASE, config=fake_config(backward=False),
                         grad_scale=2.0)
    inst = only(record)
    assert inst["verdict"] == "PASS"
    assert "grad_check" not in inst
    assert set(inst["measurements"]) == {"serial"}


# --------------------------------------------------------------------------- APIs

def test_unknown_apis_are_reported_with_file_and_line_before_any_timing(tmp_path):
    path = case_file(tmp_path, binary_case("add"),
                     binary_case("typo", mindspore_api="mindspore.ad"))
    config = fake_config()
    session = fake_session(config)
    instances = load_instances(path)
    problems = session.check_apis(instances)
    assert len(problems) == 1
    api_line = next(i for i, line in enumerate(path.read_text().splitlines(), start=1)
                    if "mindspore.ad," in line)
    assert problems[0].startswith(f"{path}:{api_line} case 'typo': key 'mindspore.api': ")
    assert "mindspore.ad" in problems[0]
    with pytest.raises(ApiError, match="mindspore.ad"):
        run(instances, config, session=session)
    assert sum(session.adapters["torch"].calls.values()) == 0


def test_a_missing_framework_section_is_reported(tmp_path):
    path = case_file(tmp_path, """
  - name: numpy_only
    inputs:
      x: {shape: [2]}
    torch: {api: torch.neg, args: [$x]}
    numpy: {api: numpy.negative, args: [$x]}
""")
    session = fake_session(fake_config())
    (problem,) = session.check_apis(load_instances(path))
    assert problem.startswith(f"{path}:2 case 'numpy_only': no 'mindspore' section")


def test_run_config_refuses_the_same_framework_twice_and_unknown_modes():
    # one framework on both sides runs in a process per side, never both in one
    with pytest.raises(ValueError, match="one per side"):
        RunConfig(reference="numpy", target="numpy")
    with pytest.raises(ValueError, match="modes"):
        RunConfig(modes=("fast",))
    with pytest.raises(ValueError, match="modes"):
        RunConfig(modes=())


# --------------------------------------------------------------------------- the file

def test_the_json_file_is_rewritten_after_every_instance(tmp_path):
    out = tmp_path / "out" / "run.json"
    seen: list[tuple[int, bool, int]] = []

    def on_progress(i, n, inst, result):
        saved = json.loads(out.read_text())
        seen.append((i, result is None, len(saved["instances"])))

    record, _ = run_fake(tmp_path, binary_case("a"), binary_case("b"), json_path=out,
                         on_progress=on_progress)
    # before instance i the file holds i instances; after it, i + 1
    assert seen == [(0, True, 0), (0, False, 1), (1, True, 1), (1, False, 2)]
    saved = load_results(out)
    assert saved.to_dict() == json.loads(json.dumps(record))
    assert saved.complete is True and saved.has("finished_utc")


def test_an_interrupt_keeps_the_finished_instances_in_a_valid_file(tmp_path):
    out = tmp_path / "run.json"
    config = fake_config()
    session = fake_session(config)
    instances = load_instances(case_file(
        tmp_path, binary_case("first"), binary_case("second", mindspore_api="mindspore.interrupt"),
        binary_case("third")))
    with pytest.raises(KeyboardInterrupt):
        run(instances, config, session=session, json_path=out)
    saved = json.loads(out.read_text())
    validate_record(saved)
    assert saved["interrupted"] is True and saved["complete"] is False
    assert [inst["id"] for inst in saved["instances"]] == ["first"]
    assert saved["instances"][0]["verdict"] == "PASS"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_the_record_describes_the_run(tmp_path):
    record, _ = run_fake(tmp_path, binary_case("add", extra="tags: [math]"))
    assert record["config"]["reference"] == "torch"
    assert record["config"]["modes"] == ["serial"]
    assert record["config"]["settings"]["rounds"] == 6
    assert record["frameworks"]["mindspore"] == {"name": "mindspore", "version": "0.0-fake",
                                                 "device": "cpu", "threads": 2,
                                                 "launch": "queued"}
    assert record["config"]["launch"] == "blocking" and record["config"]["passes"] == 1
    inst = only(record)
    assert inst["tags"] == ["math"]
    assert inst["inputs"][0] == {"name": "x", "shape": [4, 8], "dtype": "float32",
                                 "dist": "normal"}
    assert inst["duration_s"] > 0


def test_non_finite_parameter_values_still_give_a_valid_json_file(tmp_path):
    # `inf` is a legitimate sweep value (clamp bounds, fill values) and shows in the id as
    # `inf`; JSON has no inf, so the record must not carry it as a number
    case = """
  - name: shift
    params:
      by: [.inf, 1.5]
    inputs:
      x: {shape: [3]}
    torch: {api: torch.add, args: [$x, $by]}
    mindspore: {api: mindspore.add, args: [$x, $by]}
"""
    out = tmp_path / "run.json"
    record, _ = run_fake(tmp_path, case, json_path=out, config=check_only(fake_config()))
    saved = load_results(out)
    assert [i.id for i in saved.instances] == ["shift[by=inf]", "shift[by=1.5]"]
    assert [i.verdict for i in saved.instances] == ["PASS", "PASS"]
    assert saved.instances[0].params == {"by": "inf"}
    assert saved.instances[1].params == {"by": 1.5}
    assert saved.complete is True


def test_the_header_records_the_case_min_effect_for_the_gate(tmp_path):
    # The gate decides from records alone, so the case's min_effect must be in them; null
    # (not absent) when the case sets none, which the gate reads as "none now".
    cases = (binary_case("relaxed", extra="min_effect: 0.2"), binary_case("plain"))
    record, _ = run_fake(tmp_path, *cases, config=check_only(fake_config()))
    validate_record(record)
    by_id = {inst["id"]: inst for inst in record["instances"]}
    assert by_id["relaxed"]["min_effect"] == 0.2
    assert "min_effect" in by_id["plain"] and by_id["plain"]["min_effect"] is None
    header = instance_header(load_instances(case_file(tmp_path, cases[0], name="one.yaml"))[0],
                             fake_config())
    assert header["min_effect"] == 0.2


def test_records_without_min_effect_still_validate_and_bad_ones_do_not(tmp_path):
    record, _ = run_fake(tmp_path, binary_case("add"), config=check_only(fake_config()))
    del only(record)["min_effect"]      # as written before the key existed
    validate_record(record)
    only(record)["min_effect"] = 1.0
    with pytest.raises(jsonschema.ValidationError):
        validate_record(record)

"""The gate's second stage in a fresh process (opbench/gate/fresh_stage.py): the spec, the
child's work on fake frameworks in-process, and the parent's handling of a child that
fails. One test starts a real child interpreter on a spec that needs no framework."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from runner_fakes import binary_case, case_file, fake_session_class

from opbench.gate.fresh_stage import (FreshStageError, StageSpec, main,
                                      remeasure_in_fresh_process, run_child_process, run_stage)

FAST_OPTIONS = {"mode": None, "threshold": None, "device": "cpu", "threads": 2,
                "reference": "torch", "target": "mindspore", "rounds": 6,
                "min_sample_time_s": 0.002, "max_time_s": 1.0, "no_backward": True,
                "launch": None, "passes": 2}


# open() installs FakeAdapters on a fake clock instead of importing frameworks.
FakeOpeningSession = fake_session_class()


@pytest.fixture
def cases(tmp_path):
    return case_file(tmp_path, binary_case("add"), binary_case("sub", shape="[2, 3]"))


def spec_for(cases: Path, ids, output="", **overrides) -> StageSpec:
    return StageSpec(paths=(str(cases),), ids=tuple(ids), config_options=dict(FAST_OPTIONS),
                     output=output, quiet=True, **overrides)


def test_the_spec_survives_json_and_refuses_another_version(cases):
    spec = spec_for(cases, ["add"], ops=("add",), keyword="a", tags=("math",))
    assert StageSpec.from_json(spec.to_json()) == spec
    data = json.loads(spec.to_json())
    data["version"] = 99
    with pytest.raises(ValueError, match="version"):
        StageSpec.from_json(json.dumps(data))


def test_the_child_measures_only_the_ids_asked_for_in_every_pass(cases):
    records = run_stage(spec_for(cases, ["sub"]), FakeOpeningSession)
    assert list(records) == ["sub"]
    m = records["sub"]["measurements"]["serial"]
    assert m["passes"] == 2 and m["rounds"] == 6 and m["rounds_per_pass"] == 3
    assert m["ratio"] == pytest.approx(1.0)


def test_an_id_gone_from_the_selection_is_an_error_not_a_silent_skip(cases):
    with pytest.raises(FreshStageError, match="not in the selection any more: mul"):
        run_stage(spec_for(cases, ["add", "mul"]), FakeOpeningSession)
    # the selection options apply in the child as in the parent
    with pytest.raises(FreshStageError, match="sub"):
        run_stage(spec_for(cases, ["sub"], ops=("add",)), FakeOpeningSession)


def test_the_child_entry_point_writes_the_records_file(cases, tmp_path):
    spec_path = tmp_path / "spec.json"
    out = tmp_path / "records.json"
    spec_path.write_text(spec_for(cases, ["add"], output=str(out)).to_json())
    assert main([str(spec_path)], session_factory=FakeOpeningSession) == 0
    assert list(json.loads(out.read_text())) == ["add"]
    assert main([], session_factory=FakeOpeningSession) == 2


def in_process_child(spec_path: str) -> subprocess.CompletedProcess:
    code = main([spec_path], session_factory=FakeOpeningSession)
    return subprocess.CompletedProcess(["child"], code, "", "")


def test_the_parent_reads_back_the_childs_records(cases):
    records = remeasure_in_fresh_process(spec_for(cases, ["sub", "add"]), in_process_child)
    assert list(records) == ["sub", "add"]
    assert records["add"]["measurements"]["serial"]["passes"] == 2


def test_a_failed_child_is_an_error_carrying_its_last_stderr_lines(cases):
    def crashed(spec_path):
        lines = "".join(f"line {i}\n" for i in range(40)) + "Segmentation fault\n"
        return subprocess.CompletedProcess(["child"], -11, "", lines)

    with pytest.raises(FreshStageError) as info:
        remeasure_in_fresh_process(spec_for(cases, ["add"]), crashed)
    message = str(info.value)
    assert "exited -11" in message and "Segmentation fault" in message
    assert "line 39" in message and "line 3 " not in message   # only the tail


@pytest.mark.parametrize("written, expected", [
    (None, "no readable records"),
    ("not json", "no readable records"),
    ('{"sub": {}}', "left out add"),
])
def test_a_child_that_exits_0_without_every_record_is_an_error(cases, written, expected):
    def child(spec_path):
        output = StageSpec.from_json(Path(spec_path).read_text()).output
        if written is not None:
            Path(output).write_text(written)
        return subprocess.CompletedProcess(["child"], 0, "", "")

    with pytest.raises(FreshStageError, match=expected):
        remeasure_in_fresh_process(spec_for(cases, ["add"]), child)


def test_a_real_child_process_runs_and_reports_a_bad_spec(cases, tmp_path, capfd,
                                                          monkeypatch):
    """The real `python -m opbench.gate.fresh_stage`: a spec naming an id the cases do not
    have fails before any framework is imported, with exit 2 and the reason on stderr."""
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(spec_for(cases, ["nope"], output=str(tmp_path / "r.json")).to_json())
    root = str(Path(__file__).resolve().parents[2])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (root, os.environ.get("PYTHONPATH")) if p))
    done = run_child_process(str(spec_path))
    assert done.returncode == 2
    assert "not in the selection any more: nope" in done.stderr
    assert "Traceback" not in done.stderr
    assert "not in the selection" in capfd.readouterr().err   # passed through as it came

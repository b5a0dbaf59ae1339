"""tools/conformance.py and its manifest (tests/conformance/manifest.yaml): every corpus
script has one entry with measured floors, a crash is told from a script's own noise, and
the docs table row says what a record holds. Framework-free: no script is run here
(tests/integration/test_conformance.py runs them)."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import conformance  # noqa: E402  (tools/ is not a package)

ENTRIES = conformance.load_manifest()
# MindSpore's Cell.__del__ at interpreter exit (mindcv's models, 2026-11-27): printed by the
# script, ignored by Python, not opbench's crash.
SCRIPT_NOISE = ("Exception ignored in: <function Cell.__del__ at 0x7f>\n"
                "Traceback (most recent call last):\n"
                '  File "/venv/lib/python3.11/site-packages/mindspore/nn/cell.py", line 1039, '
                "in __del__\nAttributeError: 'NoneType' object has no attribute 'x'\n")
OPBENCH_CRASH = ("Traceback (most recent call last):\n"
                 '  File "/work/main/opbench/model/replay.py", line 12, in run\n'
                 "KeyError: 'complex64'\n")


def _run(returncode=0, stderr="", record=None) -> conformance.Run:
    return conformance.Run(ENTRIES[0], returncode, 12.3, stderr, record)


def test_manifest_names_every_script_once_with_measured_floors():
    scripts = sorted(p.name for p in conformance.CORPUS.glob("*.py"))
    named = [e.script for e in ENTRIES]
    assert sorted(named) == scripts and len(set(named)) == len(named)
    assert len(scripts) >= 25
    for entry in ENTRIES:
        assert entry.framework in ("torch", "mindspore"), entry.script
        assert 0.0 <= entry.coverage_floor <= 1.0, entry.script
        assert entry.self_check_bound > 0, entry.script
        assert "2026-" in entry.measured, f"{entry.script}: its floors name no measurement"


def test_both_frameworks_and_both_mindspore_styles_are_in_the_corpus():
    by_framework = {e.framework for e in ENTRIES}
    assert by_framework == {"torch", "mindspore"}
    texts = {e.script: e.path.read_text() for e in ENTRIES}
    assert any("value_and_grad" in t and "nn.Cell" in t for t in texts.values())
    assert any("mint." in t and "nn.Cell" not in t for t in texts.values())
    assert sum("transformers import" in t for t in texts.values()) >= 6


def test_corpus_scripts_do_not_import_opbench():
    """They stand for a user's own scripts, which `opbench model` traces from outside."""
    for entry in ENTRIES:
        assert "opbench" not in entry.path.read_text(), entry.script


def test_a_traceback_through_opbench_is_a_crash_a_scripts_exit_noise_is_not():
    assert not _run(0, SCRIPT_NOISE).crashed
    assert not _run(3, SCRIPT_NOISE).crashed
    assert _run(2, "error: no steady state").crashed
    assert _run(1, OPBENCH_CRASH).crashed
    assert _run(3, SCRIPT_NOISE + OPBENCH_CRASH).crashed


def test_an_absent_interpreter_is_why_a_script_is_skipped(tmp_path):
    entry = conformance.Entry(script="x.py", framework="mindspore", exercises="x",
                              coverage_floor=0.5, self_check_bound=0.3, measured="2026-11-27",
                              interpreter=str(tmp_path / "no-venv" / "bin" / "python"))
    assert "is absent" in entry.missing()
    needs_nothing = conformance.Entry(script="x.py", framework="torch", exercises="x",
                                      coverage_floor=0.5, self_check_bound=0.3,
                                      measured="2026-11-27", needs=("no_such_module_xyz",))
    assert needs_nothing.missing() == "no_such_module_xyz is not installed"


def test_a_present_interpreter_is_checked_as_opbench_model_checks_it(tmp_path, monkeypatch):
    """Fixed bug: the tool called the model's interpreter check by an old name, which after a
    rename resolved to the runner's (a path, not an Interpreter) and crashed the corpus run
    on the first entry with a venv (TypeError: ... not Interpreter)."""
    from opbench.model.impact import processes

    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n")
    seen = []

    def refuse(interpreter, frameworks):
        seen.append((interpreter.path, tuple(frameworks)))
        raise processes.ModelError("mindspore is not installed in it")

    monkeypatch.setattr(processes, "interpreter_version", refuse)
    entry = conformance.Entry(script="x.py", framework="mindspore", exercises="x",
                              coverage_floor=0.5, self_check_bound=0.3, measured="2026-11-27",
                              interpreter=str(python))
    assert entry.missing() == ("its interpreter cannot hold the run: mindspore is not "
                               "installed in it")
    assert seen and seen[0][0] == str(python)


def test_table_row_of_a_record_names_its_figures_and_heaviest_uncovered_first():
    record = {"region": {"calls_per_step": 61}, "coverage": 0.55, "self_check": -0.4,
              "mismatches": [{"call": 3, "api": "a", "mapped_api": "b", "detail": "d"}],
              "not_covered": [
                  {"api": "torch.light", "reason": "no mapping", "calls": 5, "traced_s": 0.001,
                   "share": 0.01},
                  {"api": "torch.heavy", "reason": "size_average", "calls": 5,
                   "traced_s": 0.02, "share": 0.44}]}
    row = conformance.table_row(_run(3, "", record))
    first = ENTRIES[0]
    assert row.startswith(f"| `{first.script}` | {first.framework} | 61 | 55.0% | -40% | 1 |")
    assert row.index("torch.heavy") < row.index("torch.light")
    assert "`torch.heavy` x5 (44.0%): size_average" in row
    assert row.endswith("| 12 s (exit 3) |")


def test_table_row_without_a_record_gives_the_exit_and_the_last_error():
    row = conformance.table_row(_run(2, "capturing\nerror: the script exited 1: ValueError: x\n"))
    assert "exit 2: error: the script exited 1: ValueError: x" in row
    assert row.endswith("| 12 s |")


def test_a_saved_run_is_read_back_for_the_table(tmp_path):
    entry = ENTRIES[0]
    stem = entry.path.stem
    assert conformance.saved_run(entry, tmp_path) is None
    (tmp_path / f"{stem}.exit.json").write_text('{"returncode": 3, "wall_s": 21.5}')
    (tmp_path / f"{stem}.stderr").write_text(SCRIPT_NOISE)
    (tmp_path / f"{stem}.json").write_text(
        '{"model": {"coverage": 0.9, "self_check": 0.1, "region": {"calls_per_step": 7}}}')
    run = conformance.saved_run(entry, tmp_path)
    assert (run.returncode, run.wall_s, run.figure("coverage")) == (3, 21.5, 0.9)
    assert not run.crashed
    assert conformance.table_row(run).endswith("| 22 s (exit 3) |")


def _modes(capture_ms, replay_ms, in_mode, in_mode_check):
    return {"capture_probe_s": capture_ms / 1e3, "replay_probe_s": [r / 1e3 for r in replay_ms],
            "rounds_in_capture_mode": in_mode, "rounds": len(replay_ms), "mode_factor": 2.0,
            "self_check_in_capture_mode": in_mode_check}


def test_a_torch_self_check_is_judged_over_every_round():
    judged = _run(record={"self_check": -0.31}).judged_self_check()
    assert judged.judged and judged.value == -0.31 and judged.basis == "every replay round"
    assert judged.within(0.85) and not judged.within(0.3)
    assert not _run(record={"self_check": None}).judged_self_check().within(10.0)


def test_a_mindspore_self_check_is_judged_over_the_rounds_in_the_captures_mode():
    # the CI reading of 2026-11-28 (+756% over every round) against a like-for-like -4%
    record = {"self_check": 7.56, "speed_modes": _modes(0.64, [0.77, 0.44, 3.9], 2, -0.04)}
    judged = _run(record=record).judged_self_check()
    assert judged.judged and judged.value == -0.04 and judged.within(0.5)
    assert "2 of 3 rounds in the capture's speed mode" in judged.basis
    assert "0.64 ms a call" in judged.basis and "+7.56" not in judged.text()


def test_no_round_in_the_captures_mode_is_not_judged_against_a_bound():
    record = {"self_check": 7.56, "speed_modes": _modes(0.40, [3.1, 2.9, 3.4], 0, None)}
    judged = _run(record=record).judged_self_check()
    assert not judged.judged and judged.value is None and judged.within(0.1)
    assert judged.text().startswith("not judged over no round in the capture's speed mode")

"""The calls measured alone through the replay run each side in its own interpreter
(opbench/model/impact/alone_programs.py): `--target mindspore@envs/ms29/bin/python` times
MindSpore alone in that interpreter, as its in-context replay did, not in the script's.
Framework-free: the interpreters are paths that are never started (run_replay stood in for)."""
from __future__ import annotations

from pathlib import Path

from test_model_steady import ProgramBuilder

from opbench.config.sides import Side
from opbench.model.impact import alone_programs
from opbench.model.impact.processes import Interpreter, side_interpreter
from opbench.model.replay.executor import CallStatus
from opbench.model.steady import find_region, step_program
from opbench.runner.ipc import ReplayResult

SCRIPT = Interpreter("/fake/script-venv/bin/python", True)
MS29 = "/fake/ms29/bin/python"


def _step():
    builder = ProgramBuilder()
    builder.set_up()
    for _ in range(3):
        builder.step()
    program = builder.program()
    return step_program(program, find_region(program))


def _recording_replays(started: list[tuple[str, str]]):
    """run_replay stood in for: records (interpreter, framework) of every process started,
    each answering 1 ms per call."""
    def run(python, request, work, index=1):
        started.append((python, request.framework))
        calls = len(request.program.calls)
        return ReplayResult(request.framework, "fake", 1, "blocking",
                            tuple(CallStatus(i, "x", True) for i in range(calls)), 1,
                            per_call_s=tuple((1e-3,) * 8 for _ in range(calls)))
    return run


def test_a_side_with_its_own_interpreter_is_measured_alone_in_it(monkeypatch, tmp_path):
    started: list[tuple[str, str]] = []
    monkeypatch.setattr(alone_programs, "run_replay", _recording_replays(started))
    sides = {"torch": Side("torch"), "mindspore": Side("mindspore", MS29)}
    found = alone_programs.replay_alone(SCRIPT, sides, _step(), [1], "torch", "mindspore", 1,
                                        "cpu", (), 2, Path(tmp_path), lambda message: None)
    # A B B A over two processes each: torch in the script's interpreter, MindSpore in ms29's
    assert started == [(SCRIPT.path, "torch"), (MS29, "mindspore"),
                       (MS29, "mindspore"), (SCRIPT.path, "torch")]
    assert found[1]["verdict"] == "PASS"


def test_sides_without_an_interpreter_run_in_the_scripts(monkeypatch, tmp_path):
    started: list[tuple[str, str]] = []
    monkeypatch.setattr(alone_programs, "run_replay", _recording_replays(started))
    sides = {"torch": Side("torch"), "mindspore": Side("mindspore")}
    alone_programs.replay_alone(SCRIPT, sides, _step(), [1], "torch", "mindspore", 1, "cpu",
                                (), 1, Path(tmp_path), lambda message: None)
    assert started == [(SCRIPT.path, "torch"), (SCRIPT.path, "mindspore")]


def test_the_alone_processes_follow_the_in_context_replays_rule():
    # one rule for where a side's processes run (the in-context replay's, pipeline.py)
    assert side_interpreter(Side("mindspore", MS29), SCRIPT) == Interpreter(MS29, True)
    assert side_interpreter(Side("torch"), SCRIPT) is SCRIPT

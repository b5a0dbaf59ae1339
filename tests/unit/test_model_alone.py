"""Calls measured alone through the replay (opbench/model/impact/alone_programs.py): each call of a
step taken out with its own external tensors, and the ratio and verdict from per-call
medians. Framework-free: replay processes are stood in for."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from test_model_steady import ProgramBuilder

from opbench.model.impact import alone_programs as alone_replay
from opbench.model.impact.processes import Interpreter
from opbench.model.program import Ext, Ref
from opbench.model.replay.executor import CallStatus
from opbench.model.steady import find_region, step_program
from opbench.runner.ipc import REPLAY_TIME, ReplayResult


def _step():
    builder = ProgramBuilder()
    builder.set_up()
    for _ in range(3):
        builder.step()
    program = builder.program()
    return step_program(program, find_region(program))


def test_each_lone_call_reads_only_externals_of_the_shapes_it_was_given():
    step = _step()
    lone = alone_replay.lone_calls(step, [1, 2])        # relu(matmul), sum(relu)
    assert [c.api for c in lone.calls] == ["torch.relu", "torch.sum"]
    assert [c.index for c in lone.calls] == [0, 1]
    for call in lone.calls:
        assert not any(isinstance(a, Ref) for a in call.args)
        (arg,) = call.args
        assert isinstance(arg, Ext)
        made = lone.externals[arg.id]
        assert made.shape == (4, 8) and made.dtype == "float32" and made.role == "input"
    assert lone.source_index == (1, 2)
    assert lone.traced_ns == (step.traced_ns[1], step.traced_ns[2])


HERE = Interpreter(sys.executable, False)


def _fake_replays(per_call: dict[str, list[list[float]]], ok: bool = True):
    """run_replay stood in for: each request takes its framework's next process's times."""
    def run(python, request, work, index=1):
        times = per_call[request.framework].pop(0)
        assert request.launch == "blocking" and request.kind == REPLAY_TIME
        return ReplayResult(request.framework, "fake", 1, "blocking",
                            tuple(CallStatus(i, "x", ok) for i in range(len(times))), 1,
                            per_call_s=tuple(tuple(t) for t in times))
    return run


def test_the_ratio_and_verdict_come_from_the_per_call_medians(monkeypatch, tmp_path):
    step = _step()
    # torch 1 ms, mindspore 4 ms for call 1; call 2 on par; three processes each
    per_call = {"torch": [[[1e-3] * 8, [2e-3] * 8]] * 3,
                "mindspore": [[[4e-3] * 8, [2e-3] * 8]] * 3}
    per_call = {k: [list(p) for p in v] for k, v in per_call.items()}
    run = _fake_replays(per_call)
    monkeypatch.setattr(alone_replay, "run_replay", run)
    found = alone_replay.replay_alone(HERE, {}, step, [1, 2], "torch", "mindspore", 1, "cpu", (),
                                      3, Path(tmp_path), lambda message: None)
    assert found[1]["ratio"] == pytest.approx(0.25) and found[1]["verdict"] == "SLOW"
    assert found[1]["reference_s"] == pytest.approx(1e-3)
    assert found[1]["target_s"] == pytest.approx(4e-3)
    assert found[2]["ratio"] == pytest.approx(1.0) and found[2]["verdict"] == "PASS"


def test_a_call_that_did_not_run_alone_says_so(monkeypatch, tmp_path):
    step = _step()
    per_call = {"torch": [[[1e-3] * 8]], "mindspore": [[[1e-3] * 8]]}
    run = _fake_replays(per_call, ok=False)
    monkeypatch.setattr(alone_replay, "run_replay", run)
    found = alone_replay.replay_alone(HERE, {}, step, [1], "torch", "mindspore", 1, "cpu", (), 1,
                                      Path(tmp_path), lambda message: None)
    assert "did not run alone" in found[1]["reason"]


def test_the_apis_that_lose_most_are_measured_alone_first():
    from types import SimpleNamespace as Row

    from opbench.model.impact.alone_cases import measuring_order

    rows = [Row(api="linear", mapped_api="m.linear", lost_s=5.0, traced_s=9.0),
            Row(api="linear", mapped_api="m.linear", lost_s=1.0, traced_s=8.0),
            Row(api="view", mapped_api="m.view", lost_s=0.3, traced_s=0.01),
            Row(api="view", mapped_api="m.view", lost_s=0.3, traced_s=0.01),
            Row(api="big", mapped_api="m.big", lost_s=0.0, traced_s=20.0)]
    order = measuring_order(rows)
    # each API's signature losing most, the APIs by their total (view's 0.6 s beats a lone
    # signature of it), then the rest by traced time; equal rows stay distinct
    assert [id(r) for r in order] == [id(rows[i]) for i in (0, 2, 4, 1, 3)]


def _instance(**fields):
    from opbench.results.records import InstanceRecord
    from opbench.verdicts.rules import Verdict
    base = dict(id="i1", case="c", op="layer_norm", file="isolated_cases.yaml",
                apis={"torch": "torch.nn.functional.layer_norm"}, verdict=Verdict.ERROR)
    return InstanceRecord(**{**base, **fields})


def test_a_case_that_failed_alone_carries_its_error_not_a_stock_phrase():
    # issue 32: layer_norm read "not measured alone (the measurement failed)" with no reason
    from types import SimpleNamespace
    from opbench.model.impact.alone_cases import _measured, cause_of, IsolatedRow
    inst = _instance(error="Traceback (most recent call last):\n  File \"x\", line 1\n"
                           "TypeError: layer_norm() got an unexpected keyword argument 'bias'")
    record = SimpleNamespace(instances=[inst])
    *_, why = _measured(record, "i1", "torch", "mindspore")
    assert why == "ERROR: TypeError: layer_norm() got an unexpected keyword argument 'bias'"
    row = IsolatedRow(("torch.nn.functional.layer_norm", "sig", "mindspore.mint.nn.functional"
                       ".layer_norm"), "i1", "ERROR", None, None, None, None, why)
    cause, text = cause_of(SimpleNamespace(), row, None)
    assert cause == "unknown" and "unexpected keyword argument 'bias'" in text


def test_a_mismatch_alone_says_the_outputs_differ():
    from types import SimpleNamespace
    from opbench.model.impact.alone_cases import _measured
    from opbench.results.records import Check
    from opbench.verdicts.rules import Verdict
    check = Check(ok=False, max_abs_err=0.5, rtol=1e-3, atol=1e-5, detail="")
    record = SimpleNamespace(instances=[_instance(verdict=Verdict.MISMATCH, check=check)])
    *_, why = _measured(record, "i1", "torch", "mindspore")
    assert why == "MISMATCH: the frameworks' outputs differ alone (max abs error 0.5)"
    *_, why = _measured(SimpleNamespace(instances=[]), "i1", "torch", "mindspore")
    assert "did not run it" in why


def test_a_case_draws_a_one_signed_float_input_in_the_script_s_range():
    """A float input whose observed range lies on one side of zero (a binary cross-entropy's
    target in [0, 1]) is drawn uniformly in it; a range across zero, an unknown or constant
    one keeps the case's normal draw; integers keep their randint range."""
    from types import SimpleNamespace

    from opbench.model.impact.alone_cases import _CaseBuilder
    from opbench.model.program import ExternalTensor, Lit
    externals = [ExternalTensor(0, (8,), "float32", "input", low=0.0, high=1.0),
                 ExternalTensor(1, (8,), "float32", "input", low=-3.0, high=2.0),
                 ExternalTensor(2, (8,), "float32", "input"),
                 ExternalTensor(3, (8,), "float32", "parameter", low=1.0, high=1.0),
                 ExternalTensor(4, (8,), "float32", "input", low=-5.0, high=-0.5),
                 ExternalTensor(5, (8,), "int64", "input", low=0, high=9)]
    builder = _CaseBuilder(SimpleNamespace(externals=externals, calls=()))
    call = builder.call("torch.f", [Ext(i) for i in range(6)], [("reduction", Lit("sum"))])
    assert call["args"] == [f"$x{i}" for i in range(6)]
    assert call["kwargs"] == {"reduction": "sum"}
    inputs = builder.inputs
    assert inputs["x0"] == {"shape": [8], "dtype": "float32", "dist": "uniform", "low": 0.0,
                            "high": 1.0}
    assert all("dist" not in inputs[f"x{i}"] for i in (1, 2, 3))
    assert inputs["x4"]["dist"] == "uniform" and inputs["x4"]["high"] == -0.5
    assert inputs["x5"] == {"shape": [8], "dtype": "int64", "dist": "randint", "low": 0,
                            "high": 10}


def test_an_input_of_a_dtype_no_case_file_holds_is_not_measured_alone_and_says_why():
    """issue 45: an int8 input (replayed in the model) made the case file invalid, and the
    whole alone pass failed ("'int8' is not one of float16, ..."); now that one signature
    is not measured alone, with the reason."""
    from types import SimpleNamespace

    from opbench.model.impact.alone_cases import _CaseBuilder
    from opbench.model.program import ExternalTensor
    externals = [ExternalTensor(0, (8,), "int8", "input", low=0, high=3)]
    builder = _CaseBuilder(SimpleNamespace(externals=externals, calls=()))
    with pytest.raises(ValueError, match="int8 tensor, not a case file's dtype"):
        builder.call("torch.Tensor.sum", [Ext(0)], [])

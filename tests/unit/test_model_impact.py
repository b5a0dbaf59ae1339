"""`opbench model` after the capture, framework-free: a synthetic torch program measured by
measure_program with its replay processes served in this process (replay/main.serve_request
on numpy fake adapters and fake clocks). Checks the parts between the pure modules: the
probes' statuses make the coverage and the skip list, a wrong counterpart is a mismatch
(and calls fed by a stand-in are not compared), the projection finds the slower API, and
the record impact_json writes is valid against the model schema and renders."""
from __future__ import annotations

import sys
from dataclasses import replace

import jsonschema
import numpy as np
import pytest
from runner_fakes import FakeAdapter, FakeClock

import opbench.frameworks
import opbench.model.impact.pipeline as impact_module
import opbench.model.replay.executor as replay_module
from opbench.config.sides import Side
from opbench.model.impact.pipeline import ModelError, ModelOptions, measure_program
from opbench.model.impact.processes import Interpreter, ReplayFailed
from opbench.model.program import Call, Ext, ExternalTensor, Lit, Program, Ref, Seq
from opbench.model.impact.record import ModelRecord, impact_json, model_schema
from opbench.model.replay.executor import CallStatus
from opbench.model.replay.main import serve_request
from opbench.report.model import render_model_html, render_model_markdown

HIDDEN = ("tensor", (4, 8), "float32")
STEPS = 4                         # captured; the first is the warm-up
TORCH_COST = {"torch.matmul": 3e-4, "torch.relu": 1e-4, "torch.tanh": 1e-4,
              "torch.flip": 1e-4}
MINDSPORE_COST = {"mindspore.mint.matmul": 6e-4,                  # twice torch's
                  "mindspore.mint.nn.functional.relu": 1e-4, "mindspore.mint.tanh": 1e-4,
                  "mindspore.mint.flip": 1e-4}
STEP_API = ["torch.matmul", "torch.relu", "torch.nn.Bilinear", "torch.tanh", "torch.flip"]


def _program() -> Program:
    calls = [Call(index=0, framework="torch", api="torch.manual_seed", kind="function",
                  replay_api="torch.manual_seed", args=(Lit(0),), kwargs=(),
                  outputs=("other", "Generator"), duration_ns=40_000, start_ns=0)]

    def add(api, args, replay_api="same", problem=None, ns=100_000):
        calls.append(Call(index=len(calls), framework="torch", api=api, kind="function",
                          replay_api=api if replay_api == "same" else replay_api,
                          args=args, kwargs=(), outputs=HIDDEN, duration_ns=ns,
                          start_ns=len(calls) * 1_000_000, problem=problem))
        return len(calls) - 1

    for _ in range(STEPS):
        mm = add("torch.matmul", (Ext(0), Ext(1)), ns=300_000)
        relu = add("torch.relu", (Ref(mm),))
        bilinear = add("torch.nn.Bilinear", (Ref(relu), Ref(relu)), replay_api=None,
                       problem="no function form for the layer torch.nn.Bilinear here")
        add("torch.tanh", (Ref(bilinear),))
        add("torch.flip", (Ref(relu), Seq("list", (Lit(1),))))
    externals = (ExternalTensor(0, (4, 16), "float32", "input"),
                 ExternalTensor(1, (16, 8), "float32", "parameter", "w"))
    return Program(framework="torch", version="2.5-fake", threads=2, launch="blocking",
                   device="cpu", timing="serial", calls=tuple(calls), externals=externals)


def _functions(prefix: str, flip_axis: int | None) -> dict:
    return {f"{prefix}matmul": np.matmul,
            f"{prefix}{'nn.functional.' if prefix != 'torch.' else ''}relu":
                lambda x: np.maximum(x, 0.0),
            f"{prefix}tanh": np.tanh,
            f"{prefix}flip": lambda x, dims: np.flip(
                x, axis=tuple(dims) if flip_axis is None else flip_axis)}


@pytest.fixture
def replays_here(monkeypatch):
    """Replay processes served in this process; `wrong_flip` makes MindSpore's flip turn
    the wrong axis. Returns the requests made."""
    requests = []
    settings = {"wrong_flip": False, "mindspore_without_tanh": False}

    def adapter(name: str) -> FakeAdapter:
        if name == "torch":
            return FakeAdapter("torch", FakeClock(), costs=TORCH_COST,
                               functions=_functions("torch.", None))
        functions = _functions("mindspore.mint.", 0 if settings["wrong_flip"] else None)
        if settings["mindspore_without_tanh"]:
            del functions["mindspore.mint.tanh"]
        return FakeAdapter("mindspore", FakeClock(), costs=MINDSPORE_COST,
                           functions=functions)

    real_replayer = replay_module.Replayer

    def replayer_on_the_fake_clock(step, framework, adapter, mapping, **options):
        return real_replayer(step, framework, adapter, mapping, clock=adapter.clock,
                             **options)

    def run_replay(python, request, workdir, index=1):
        requests.append(request)
        return serve_request(request)

    monkeypatch.setattr(opbench.frameworks, "get_adapter", adapter)
    monkeypatch.setattr(replay_module, "Replayer", replayer_on_the_fake_clock)
    monkeypatch.setattr(impact_module, "run_replay", run_replay)
    return requests, settings


# isolated_budget_s=0: measuring signatures alone runs opbench's case runner in worker
# processes with the real frameworks (isolated.py), which a unit test must not start.
OPTIONS = ModelOptions(processes=2, samples=3, passes=2, rounds=2, isolated_budget_s=0)


def _measure(tmp_path):
    return measure_program(_program(), OPTIONS, Interpreter(sys.executable, False),
                           ["python", "train.py"], tmp_path)


def test_probes_and_timed_replays_run_interleaved_with_the_probes_choices(replays_here,
                                                                           tmp_path):
    requests, _ = replays_here
    impact = _measure(tmp_path)
    kinds = [(r.kind, r.framework) for r in requests]
    assert kinds == [("probe", "torch"), ("probe", "mindspore"),
                     ("time", "torch"), ("time", "mindspore"),
                     ("time", "mindspore"), ("time", "torch")]
    timed = requests[2]
    assert timed.skip == (2,)                         # Bilinear: not replayable anywhere
    assert timed.launch == "blocking" and requests[3].launch == "queued"
    assert impact.covered == [True, True, False, True, True]
    assert impact.errors == [] and impact.mismatches == []


def test_the_projection_finds_the_api_the_target_is_slower_at(replays_here, tmp_path):
    impact = _measure(tmp_path)
    steady = STEPS - 1
    assert impact.steps == steady
    torch_step, ms_step = 6e-4, 9e-4
    assert impact.step_time["torch"].value == pytest.approx(torch_step, rel=1e-4)
    assert impact.step_time["mindspore"].value == pytest.approx(ms_step, rel=1e-4)
    assert impact.projected_s("torch").value == pytest.approx(steady * torch_step, rel=1e-4)
    assert impact.step_ratio["ratio"] == pytest.approx(torch_step / ms_step, rel=1e-4)
    assert impact.scale["torch"] == pytest.approx(1.0, rel=1e-4)
    top = impact.apis[0]
    assert (top.api, top.mapped_api) == ("torch.matmul", "mindspore.mint.matmul")
    assert top.calls == steady
    assert top.lost_s == pytest.approx(steady * (6e-4 - 3e-4), rel=1e-3)
    assert top.share == pytest.approx(1.0, abs=1e-3)
    # the traced times equal the fake costs: the traced framework's replay checks out
    assert impact.self_check == pytest.approx(0.0, abs=1e-3)
    (uncovered,) = impact.uncovered
    assert uncovered["api"] == "torch.nn.Bilinear" and uncovered["calls"] == steady
    assert uncovered["reason"].startswith("no function form")
    assert impact.coverage == pytest.approx(600 / 700)


def test_a_counterpart_that_computes_something_else_is_a_mismatch(replays_here, tmp_path):
    _, settings = replays_here
    settings["wrong_flip"] = True
    impact = _measure(tmp_path)
    (mismatch,) = impact.mismatches
    assert mismatch["call"] == 4 and mismatch["api"] == "torch.flip"
    assert mismatch["mapped_api"] == "mindspore.mint.flip"
    assert mismatch["detail"].startswith("values differ")


def test_the_record_is_valid_against_the_schema_and_renders(replays_here, tmp_path):
    _, settings = replays_here
    settings["wrong_flip"] = True
    record = impact_json(_measure(tmp_path))
    jsonschema.Draft202012Validator(model_schema()).validate({"model": record})
    assert record["region"] == {"rule": "automatic", "steps": 3, "calls_per_step": 5,
                                "excluded_calls": 1 + 5, "excluded_s": 40e-6 + 700e-6,
                                "note": "", "traced_base": "observed"}
    assert [a["api"] for a in record["apis"]][0] == "torch.matmul"
    markdown = render_model_markdown(ModelRecord.from_json(record))
    assert "MISMATCH: call 4 torch.flip -> mindspore.mint.flip" in markdown
    page = render_model_html(ModelRecord.from_json(record))
    assert "<svg" in page and page.count("<tr>") == len(record["apis"]) + 1
    assert "not covered: torch.nn.Bilinear x3" in markdown


def test_the_record_says_which_run_the_traced_times_come_from(replays_here, tmp_path):
    # the light timing pass (model/capture/light.py): where its calls did not match the
    # captured ones, every view says the traced times are the observed ones, and why
    from dataclasses import replace
    program = _program()
    fell_back = replace(program, light_note="the script failed in its second run (E: x)")
    record = impact_json(measure_program(fell_back, OPTIONS,
                                         Interpreter(sys.executable, False),
                                         ["python", "train.py"], tmp_path))
    jsonschema.Draft202012Validator(model_schema()).validate({"model": record})
    assert record["region"]["traced_base"] == "observed"
    said = ("traced times as observed under the capture: the script failed in its second "
            "run (E: x)")
    assert record["region"]["note"] == said
    read = ModelRecord.from_json(record)
    assert read.region.traced_base == "observed"
    assert said in render_model_markdown(read)
    # the light durations used (here equal to the observed ones): no note, base "light"
    lit = replace(program, light_ns=tuple(c.duration_ns for c in program.calls))
    record = impact_json(measure_program(lit, OPTIONS, Interpreter(sys.executable, False),
                                         ["python", "train.py"], tmp_path / "lit"))
    assert record["region"]["traced_base"] == "light" and record["region"]["note"] == ""


def test_a_replay_that_cannot_start_is_a_model_error(replays_here, tmp_path, monkeypatch):
    def cannot_start(python, request, workdir, index=1):
        raise ReplayFailed("ImportError: no")

    monkeypatch.setattr(impact_module, "run_replay", cannot_start)
    with pytest.raises(ModelError, match="the torch replay could not start: ImportError"):
        _measure(tmp_path)


def test_failed_timing_processes_are_recorded_and_all_failing_is_an_error(replays_here,
                                                                         tmp_path,
                                                                         monkeypatch):
    served = impact_module.run_replay
    failing = {"n": 0}

    def first_mindspore_timing_dies(python, request, workdir, index=1):
        if request.kind == "time" and request.framework == "mindspore":
            failing["n"] += 1
            if failing["n"] == 1:
                raise ReplayFailed("the mindspore replay process killed by signal 9")
        return served(python, request, workdir)

    monkeypatch.setattr(impact_module, "run_replay", first_mindspore_timing_dies)
    impact = _measure(tmp_path)
    assert impact.errors == ["mindspore replay process 2: the mindspore replay process "
                             "killed by signal 9"]
    assert impact.step_time["mindspore"].processes == 1

    def every_mindspore_timing_dies(python, request, workdir, index=1):
        if request.kind == "time" and request.framework == "mindspore":
            raise ReplayFailed("died")
        return served(python, request, workdir)

    monkeypatch.setattr(impact_module, "run_replay", every_mindspore_timing_dies)
    with pytest.raises(ModelError, match="no replay process of mindspore finished"):
        _measure(tmp_path)


def test_a_framework_whose_processes_run_in_modes_gets_more_processes(replays_here, tmp_path,
                                                                      monkeypatch):
    """MindSpore's second process runs 3x slower (a mode, as here): MindSpore is topped up
    to max_processes after the interleaved pairs; torch, whose processes agree, is not."""
    requests, _ = replays_here
    served = impact_module.run_replay
    seen = {"mindspore": 0}

    def second_mindspore_process_slow(python, request, workdir, index=1):
        result = served(python, request, workdir)
        if request.kind == "time" and request.framework == "mindspore":
            seen["mindspore"] += 1
            if seen["mindspore"] == 2:
                result = replace(result, samples_s=tuple(3 * v for v in result.samples_s))
        return result

    monkeypatch.setattr(impact_module, "run_replay", second_mindspore_process_slow)
    options = replace(OPTIONS, max_processes=5)
    impact = measure_program(_program(), options, Interpreter(sys.executable, False),
                             ["python", "train.py"], tmp_path)
    timed = [r.framework for r in requests if r.kind == "time"]
    assert timed == ["torch", "mindspore", "mindspore", "torch"] + ["mindspore"] * 3
    assert impact.step_time["mindspore"].processes == 5
    assert impact.step_time["torch"].processes == 2
    medians = impact.step_time["mindspore"].process_medians
    assert max(medians) == pytest.approx(3 * min(medians))
    # the mean counts the slow process by its share: 1 of 5
    assert impact.step_time["mindspore"].value == pytest.approx(min(medians) * 7 / 5)


def test_processes_that_agree_are_not_topped_up(replays_here, tmp_path):
    requests, _ = replays_here
    _measure(tmp_path)                  # OPTIONS: max_processes is the default 16
    assert sum(r.kind == "time" for r in requests) == 4


def test_a_step_no_call_of_which_replays_in_both_is_an_error(replays_here, tmp_path):
    """Steps made only of unmappable layer calls: nothing to project."""
    seed, *bilinears = [c for c in _program().calls
                        if c.api in ("torch.manual_seed", "torch.nn.Bilinear")]
    calls = (seed,) + tuple(replace(c, index=i, args=(Ext(0), Ext(0)))
                            for i, c in enumerate(bilinears, 1))
    with pytest.raises(ModelError, match="no call of the step replays in both torch and "
                                         "mindspore: torch.nn.Bilinear: no function form"):
        measure_program(replace(_program(), calls=calls), OPTIONS,
                        Interpreter(sys.executable, False), ["python"], tmp_path)


def test_a_call_only_the_other_framework_cannot_run_still_replays_in_the_traced_one(
        replays_here, tmp_path):
    """The traced framework is the script's: it replays every call it can run, so its
    self-check covers the call MindSpore could not run, and coverage is what MindSpore
    replayed."""
    requests, settings = replays_here
    settings["mindspore_without_tanh"] = True
    impact = _measure(tmp_path)
    timed = {r.framework: r for r in requests if r.kind == "time"}
    assert timed["torch"].skip == (2,)               # Bilinear: torch cannot run it either
    assert timed["mindspore"].skip == (2, 3)        # and tanh, which MindSpore cannot
    assert impact.status["torch"][3].ok and impact.status["mindspore"][3].stand_in
    assert impact.covered == [True, True, False, False, True]
    assert impact.coverage == pytest.approx(500 / 700)
    # torch's step holds its tanh: 3e-4 + 1e-4 + 1e-4 + 1e-4
    assert impact.step_time["torch"].value == pytest.approx(6e-4, rel=1e-4)
    assert impact.own_traced_s("torch") == pytest.approx(impact.steps * 600e-6)
    assert impact.self_check == pytest.approx(0.0, abs=1e-3)
    assert [row["api"] for row in impact.uncovered] == ["torch.nn.Bilinear", "torch.tanh"]


def test_replay_skips_leave_the_traced_framework_only_its_own_failures():
    def status(*ok):
        return [CallStatus(i, "api", flag, stand_in=not flag) for i, flag in enumerate(ok)]
    skips = impact_module.replay_skips({"torch": status(True, False, True, True),
                                        "mindspore": status(False, True, True, False)},
                                       "torch", "mindspore")
    assert skips == {"torch": [1], "mindspore": [0, 1, 3]}


def test_the_stand_in_share_is_the_stand_ins_part_of_the_replayed_step():
    status = [CallStatus(0, "a", True), CallStatus(1, "b", False, stand_in=True),
              CallStatus(2, "c", True)]
    assert impact_module.stand_in_share([3e-3, 1e-3, 6e-3], status) == pytest.approx(0.1)
    assert impact_module.stand_in_share([0.0, 0.0, 0.0], status) == 0.0


def test_the_record_says_each_frameworks_stand_in_share(replays_here, tmp_path):
    record = impact_json(_measure(tmp_path))
    jsonschema.Draft202012Validator(model_schema()).validate({"model": record})
    assert set(record["stand_in_share"]) == {"torch", "mindspore"}
    assert ModelRecord.from_json(record).stand_in_share == record["stand_in_share"]


def test_an_adam_updates_tolerance_lets_weights_moved_apart_by_rounding_agree():
    a = {"shape": [2], "n": 2, "mean": 0.0, "mean_abs": 0.01, "points": [0.01, -0.01]}
    b = {"shape": [2], "n": 2, "mean": 0.0, "mean_abs": 0.01, "points": [-0.01, 0.01]}
    assert impact_module._compare(a, b) is not None
    assert impact_module._compare(a, b, atol=0.02) is None


OLD_BUILD = "/envs/torch_old/bin/python"


@pytest.fixture
def two_torch_builds(monkeypatch):
    """Replays served here, torch in two interpreters: the one at OLD_BUILD (version
    "old-fake") runs matmul in half the time this interpreter's build takes. Returns the
    (interpreter, request) pairs made."""
    asked = []
    where = {"python": None}

    def adapter(name: str) -> FakeAdapter:
        old = where["python"] == OLD_BUILD
        costs = {**TORCH_COST, "torch.matmul": 1.5e-4 if old else 3e-4}
        fake = FakeAdapter(name, FakeClock(), costs=costs, functions=_functions("torch.", None))
        fake.version = lambda: "old-fake" if old else "new-fake"
        return fake

    real_replayer = replay_module.Replayer

    def replayer_on_the_fake_clock(step, framework, adapter, mapping, **options):
        return real_replayer(step, framework, adapter, mapping, clock=adapter.clock,
                             **options)

    def run_replay(python, request, workdir, index=1):
        asked.append((python, request))
        where["python"] = python
        return serve_request(request)

    monkeypatch.setattr(opbench.frameworks, "get_adapter", adapter)
    monkeypatch.setattr(replay_module, "Replayer", replayer_on_the_fake_clock)
    monkeypatch.setattr(impact_module, "run_replay", run_replay)
    return asked


def test_two_builds_of_one_framework_replay_every_call_each_in_its_interpreter(
        two_torch_builds, tmp_path):
    options = replace(OPTIONS, reference=Side("torch", OLD_BUILD), target=Side("torch"))
    impact = measure_program(_program(), options, Interpreter(sys.executable, False),
                             ["python", "train.py"], tmp_path)
    # the sides go by their labels; the target runs in the script's interpreter (it names
    # none), so it is the side that replays as the script ran
    assert (impact.reference, impact.target) == ("torch@torch_old", "torch")
    assert impact.traced_framework == "torch" and impact.other == "torch@torch_old"
    pythons = {request.kind + ":" + path for path, request in two_torch_builds}
    assert pythons == {f"probe:{OLD_BUILD}", f"probe:{sys.executable}",
                       f"time:{OLD_BUILD}", f"time:{sys.executable}"}
    # the same framework in both: each call as the script made it, the script's launch mode
    assert {request.framework for _, request in two_torch_builds} == {"torch"}
    assert {request.launch for _, request in two_torch_builds} == {"blocking"}
    assert all(s.api == impact.step.calls[s.index].api
               for s in impact.status["torch@torch_old"] if s.ok)
    assert impact.covered == [True, True, False, True, True]     # what both ran
    assert impact.versions == {"torch@torch_old": "old-fake", "torch": "new-fake"}
    # the newer build loses the matmul time: 3 steps x (3e-4 - 1.5e-4)
    top = impact.apis[0]
    assert (top.api, top.mapped_api) == ("torch.matmul", "torch.matmul")
    assert top.ratio == pytest.approx(0.5, rel=1e-3)
    assert top.lost_s == pytest.approx(3 * 1.5e-4, rel=1e-3)


def test_two_builds_are_named_in_every_view_of_the_record(two_torch_builds, tmp_path):
    options = replace(OPTIONS, reference=Side("torch", OLD_BUILD), target=Side("torch"))
    written = impact_json(measure_program(_program(), options,
                                          Interpreter(sys.executable, False),
                                          ["python", "train.py"], tmp_path))
    jsonschema.Draft202012Validator(model_schema()).validate({"model": written})
    assert written["sides"] == {
        "torch@torch_old": {"framework": "torch", "python": OLD_BUILD, "version": "old-fake",
                            "label": "torch old-fake (/envs/torch_old)"},
        "torch": {"framework": "torch", "python": None, "version": "new-fake",
                  "label": "torch new-fake"}}
    record = ModelRecord.from_json(written)
    assert record.one_framework
    sides = ("sides: reference torch@torch_old = torch old-fake (/envs/torch_old); target "
             "torch = torch new-fake (two builds of one framework")
    markdown = render_model_markdown(record)
    assert markdown.startswith("### opbench model: torch new-fake against torch old-fake "
                               "(/envs/torch_old)")
    assert sides in markdown and "replayed in both builds" in markdown
    page = render_model_html(record)
    assert "<title>opbench model: torch new-fake against torch old-fake (/envs/torch_old)" \
        in page and sides in page


def test_a_model_record_written_before_sides_reads_its_names_as_frameworks(replays_here,
                                                                          tmp_path):
    written = impact_json(_measure(tmp_path))
    del written["sides"]
    record = ModelRecord.from_json(written)
    assert record.sides == {} and not record.one_framework
    assert record.described("mindspore") == "mindspore"
    assert "sides:" not in render_model_markdown(record)


def test_two_builds_of_one_framework_are_not_measured_alone_and_the_record_says_why(
        two_torch_builds, tmp_path, monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("the alone stage builds two-framework cases")

    monkeypatch.setattr(impact_module, "_measure_alone", never)
    options = replace(OPTIONS, reference=Side("torch", OLD_BUILD), target=Side("torch"),
                      isolated_budget_s=60.0)
    impact = measure_program(_program(), options, Interpreter(sys.executable, False),
                             ["python", "train.py"], tmp_path)
    assert impact.isolated_note.startswith("not measured alone: both sides run torch")
    assert "opbench run --reference torch@torch_old --target torch" in impact.isolated_note
    record = ModelRecord.from_json(impact_json(impact))
    assert f"measured alone: {impact.isolated_note}" in render_model_markdown(record)


def test_sides_neither_of_which_runs_the_script_s_framework_are_a_model_error(
        two_torch_builds, tmp_path):
    options = replace(OPTIONS, reference=Side("mindspore", "/envs/ms29/bin/python"),
                      target=Side("mindspore"))
    with pytest.raises(ModelError, match=r"the script ran torch, and neither side does "
                                         r"\(mindspore@ms29 and mindspore\)"):
        measure_program(_program(), options, Interpreter(sys.executable, False),
                        ["python", "train.py"], tmp_path)
    assert two_torch_builds == []                  # nothing replayed


def test_a_signature_measured_alone_reaches_the_record_and_reads_back(replays_here, tmp_path,
                                                                      monkeypatch):
    """The alone stage's findings (alone_cases.IsolatedFinding, one per row) are written in
    the signature and API rows and read back as typed fields."""
    import opbench.model.impact.alone_cases as alone_module
    from opbench.model.impact.alone_cases import IsolatedRow

    def measured(impact, budget_s, workdir, processes, on_progress):
        rows = [IsolatedRow((r.api, r.signature, r.mapped_api), "i1", "SLOW", 0.5,
                            (0.4, 0.6), r.reference_s / 2, r.target_s / 4)
                for r in impact.signatures if r.api == "torch.matmul"]
        return rows, None, 0.5

    monkeypatch.setattr(alone_module, "measure_isolated", measured)
    impact = measure_program(_program(), replace(OPTIONS, isolated_budget_s=60.0),
                             Interpreter(sys.executable, False), ["python", "train.py"],
                             tmp_path)
    written = impact_json(impact)
    jsonschema.Draft202012Validator(model_schema()).validate({"model": written})
    (sig,) = [s for s in written["signatures"] if s["api"] == "torch.matmul"]
    assert sig["isolated_ratio"] == 0.5 and sig["isolated_ratio_ci"] == [0.4, 0.6]
    assert sig["verdict"] == "SLOW"
    assert sig["context_factor"] == {"torch": pytest.approx(2.0), "mindspore": pytest.approx(4.0)}
    assert sig["cause"] == "context" and "4x its time alone" in sig["cause_detail"]
    record = ModelRecord.from_json(written)
    top = record.apis[0]
    assert top.api == "torch.matmul" and top.isolated_signature == sig["signature"]
    assert top.isolated_ratio_ci == (0.4, 0.6) and top.cause == "context"
    assert dict(top.context_factor) == sig["context_factor"]

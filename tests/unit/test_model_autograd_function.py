"""A custom torch.autograd.Function in a captured program (model/autograd_function.py): the
capture's recording rule (observer.py function_applied, torch_function.py's wrapper), the
program's field in the capture file (old files still load), the light pass leaving the
added calls out, the straight-through route in both frameworks and the report's note.
Fake torch; the real one is tests/integration/test_model_autograd_function.py."""
from __future__ import annotations

import json
import sys
import types
from dataclasses import replace

import numpy as np
import pytest

from opbench.frameworks.apimap import load_mapping
from opbench.model.autograd_function import (FUNCTION_APPLY, STRAIGHT_THROUGH_RULE,
                                             straight_through_note)
from opbench.model.capture.light import NO_LIGHT_NS, light_pass, with_untimed
from opbench.model.capture.observer import Capture
from opbench.model.capture.torch_function import TorchFunctionApply
from opbench.model.program import Call, Ext, FunctionForward, Program, Ref, Seq
from opbench.model.replay.function_routes import straight_through, straight_through_route
from opbench.model.replay.routes import route_for
from opbench.model.steady import own_time_ns
from tests.unit.test_model_capture import (FLOAT16, Feeder, FakeParameter, FakeTensor, _event,
                                           torch)  # noqa: F401  (torch: a fixture)
from tests.unit.test_model_light import FakeTracer
from trace_helpers import TickClock


def _grad(tensor: FakeTensor) -> FakeTensor:
    tensor.requires_grad = True
    return tensor


def _applied(capture: Capture, feed: Feeder, x: FakeTensor, result_shape=(4, 8),
             inputs=None, name="StraightThroughRound") -> FakeTensor:
    """A Function's apply whose forward makes two captured calls (x * s, round)."""
    first = capture.next_position()
    scaled = feed.function("torch.Tensor.__mul__", (x, 16.0), result=FakeTensor(result_shape))
    out = feed.function("torch.round", (scaled,), result=FakeTensor(result_shape))
    capture.function_applied(name, inputs if inputs is not None else (x, 16.0), {}, out, first)
    return out


# -- the recording rule ------------------------------------------------------------------------

def test_a_function_s_output_is_a_call_on_its_forward_s_result_and_inputs(torch):
    capture = Capture()
    feed = Feeder(capture)
    w = FakeParameter((8, 16))
    h = _grad(feed.function("torch.matmul", (FakeTensor((4, 16)), w), result=FakeTensor((4, 8))))
    out = _applied(capture, feed, h)
    feed.function("torch.sum", (out,), result=FakeTensor(()))
    calls = capture.calls([_event(0, 100, 50), _event(1, 200, 20), _event(2, 300, 30),
                           _event(3, 500, 10)])
    function = calls[3]
    assert function.api == function.replay_api == FUNCTION_APPLY and function.replayable
    assert function.function == FunctionForward("StraightThroughRound", 2)
    # the forward's result (round's) and the input that required grad; not the scale
    assert function.args == (Ref(2), Seq("tuple", (Ref(0),)))
    assert function.outputs == ("tensor", (4, 8), "float32")
    # no time of its own, placed where the forward's last call ended
    assert (function.start_ns, function.duration_ns) == (330, 0)
    # the script's later calls read the Function's output from it, not from round
    assert calls[4].args == (Ref(3),)
    assert capture.function_positions() == frozenset({3})
    # the forward's own calls are kept as they ran
    assert [c.api for c in calls[1:3]] == ["torch.Tensor.__mul__", "torch.round"]


def test_a_weight_input_is_an_external_and_a_keyword_input_counts(torch):
    capture = Capture()
    feed = Feeder(capture)
    w = _grad(FakeParameter((4, 8)))
    first = capture.next_position()
    out = feed.function("torch.mul", (w, 2.0), result=FakeTensor((4, 8)))
    capture.function_applied("Scale", (), {"weight": w, "bias": _grad(FakeTensor((8,)))}, out,
                             first)
    function = capture.calls([])[1]
    # the bias is of another shape: no identity gradient to it
    assert function.args == (Ref(0), Seq("tuple", (Ext(0),)))


@pytest.mark.parametrize("case", ["grad off", "no call inside", "no input requires grad",
                                  "result made outside", "another dtype", "not a tensor"])
def test_nothing_is_added_where_no_gradient_chain_is_needed_or_possible(torch, case):
    """The forward's calls then replay as they ran, as before the rule."""
    capture = Capture()
    feed = Feeder(capture)
    x = FakeTensor((4, 8))
    if case != "no input requires grad":
        _grad(x)
    if case == "grad off":
        torch.grad_enabled = False
    first = capture.next_position()
    if case == "no call inside":
        capture.function_applied("F", (x,), {}, FakeTensor((4, 8)), first)
    elif case == "result made outside":
        made = feed.function("torch.relu", (x,), result=FakeTensor((4, 8)))
        first = capture.next_position()
        feed.function("torch.sum", (made,), result=FakeTensor(()))
        capture.function_applied("F", (x,), {}, made, first)
    else:
        result = FakeTensor((4, 8), FLOAT16) if case == "another dtype" else FakeTensor((4, 8))
        out = feed.function("torch.round", (x,), result=result)
        capture.function_applied("F", (x,), {}, 1.5 if case == "not a tensor" else out, first)
    assert all(c.function is None for c in capture.calls([]))
    assert capture.function_positions() == frozenset()


def test_after_the_steps_wanted_nothing_is_added(torch):
    capture = Capture()
    feed = Feeder(capture)
    x = _grad(FakeTensor((4, 8)))
    capture.enough = True
    _applied(capture, feed, x)
    assert capture.calls([]) == []


# -- the wrapper around Function.apply ---------------------------------------------------------

def test_the_wrapper_reports_each_apply_and_uninstall_restores_it(monkeypatch):
    class Function:
        @classmethod
        def apply(cls, *args, **kwargs):
            return ("ran", cls.__name__, args, kwargs)

    class Round(Function):
        pass

    fake = types.ModuleType("torch")
    fake.autograd = types.SimpleNamespace(function=types.SimpleNamespace(Function=Function))
    monkeypatch.setitem(sys.modules, "torch", fake)
    original = vars(Function)["apply"]

    class Recorder:
        seen: list = []

        def next_position(self) -> int:
            return 7

        def function_applied(self, name, args, kwargs, result, first) -> None:
            self.seen.append((name, args, kwargs, result, first))

    recorder = Recorder()
    wrapper = TorchFunctionApply(recorder)
    wrapper.install()
    try:
        assert Round.apply(1, k=2) == ("ran", "Round", (1,), {"k": 2})
    finally:
        wrapper.uninstall()
    assert recorder.seen == [(Round.__qualname__, (1,), {"k": 2},
                              ("ran", "Round", (1,), {"k": 2}), 7)]
    assert vars(Function)["apply"] is original
    Round.apply()
    assert len(recorder.seen) == 1


def test_torch_s_own_functions_are_not_reported(monkeypatch):
    """The reentrant checkpoint's CheckpointFunction recomputes the real gradient: it is no
    straight-through estimator, and its calls stay as they were."""
    class Function:
        @classmethod
        def apply(cls, *args):
            return "ran"

    class CheckpointFunction(Function):
        pass
    CheckpointFunction.__module__ = "torch.utils.checkpoint"
    fake = types.ModuleType("torch")
    fake.autograd = types.SimpleNamespace(function=types.SimpleNamespace(Function=Function))
    monkeypatch.setitem(sys.modules, "torch", fake)
    seen = []
    recorder = types.SimpleNamespace(next_position=lambda: 0,
                                     function_applied=lambda *a: seen.append(a))
    wrapper = TorchFunctionApply(recorder)
    wrapper.install()
    try:
        assert CheckpointFunction.apply(1) == "ran"
    finally:
        wrapper.uninstall()
    assert seen == []


# -- the capture file --------------------------------------------------------------------------

def _program(calls) -> Program:
    return Program(framework="torch", version="2", threads=1, launch="blocking", device="cpu",
                   timing="serial", calls=tuple(calls), externals=())


def _function_call(index: int = 1) -> Call:
    return Call(index=index, framework="torch", api=FUNCTION_APPLY, kind="function",
                replay_api=FUNCTION_APPLY, args=(Ref(0), Seq("tuple", (Ext(0),))), kwargs=(),
                outputs=("tensor", (4, 8), "float32"), duration_ns=0, start_ns=10,
                function=FunctionForward("StraightThroughRound", 1))


def _plain_call() -> Call:
    return Call(index=0, framework="torch", api="torch.round", kind="function",
                replay_api="torch.round", args=(Ext(0),), kwargs=(),
                outputs=("tensor", (4, 8), "float32"), duration_ns=5, start_ns=0)


def test_the_function_field_round_trips_and_other_calls_write_no_key():
    program = _program([_plain_call(), _function_call()])
    data = json.loads(json.dumps(program.to_json()))
    assert "fn" not in data["calls"][0]
    assert data["calls"][1]["fn"] == ["StraightThroughRound", 1]
    assert Program.from_json(data) == program


def test_a_capture_file_from_before_the_field_still_loads():
    data = json.loads(json.dumps(_program([_plain_call()]).to_json()))
    assert Program.from_json(data).calls[0].function is None


# -- the light pass ----------------------------------------------------------------------------

def test_the_light_pass_leaves_the_added_calls_out_and_keeps_their_observed_time():
    def script(fw) -> None:
        for _ in range(2):
            fw.add(100)
            fw.mul(300)
    captured = ["fake.add", None, "fake.mul", "fake.add", None, "fake.mul"]
    made = []

    def make(sink):
        made.append(FakeTracer(sink))
        return made[0]

    def run():
        script(made[0].fw)
        return types.SimpleNamespace(status=0)
    timing = light_pass(captured, run, "fake", False, make_tracer=make, clock=TickClock(),
                        untimed=frozenset({1, 4}))
    assert timing.note is None
    assert timing.durations_ns == (101, NO_LIGHT_NS, 301, 101, NO_LIGHT_NS, 301)
    program = replace(_program([_plain_call(), _function_call()]), light_ns=(5, NO_LIGHT_NS))
    assert own_time_ns(program)(program.calls[1]) == 0


def test_the_light_durations_are_spread_back_around_the_untimed_calls():
    assert with_untimed((), 3, frozenset({1})) == ()
    assert with_untimed((7, 8), 3, frozenset({0})) == (NO_LIGHT_NS, 7, 8)


# -- the replay --------------------------------------------------------------------------------

def test_straight_through_is_the_forward_s_value_plus_a_zero_per_input():
    stop = np.copy
    inner = np.array([[1.0, 2.0]], dtype=np.float32)
    x = np.array([[0.97, 2.2]], dtype=np.float32)
    out = straight_through(stop)(inner, (x, x * 3))
    np.testing.assert_array_equal(out, inner)


@pytest.mark.parametrize("target", ["torch", "mindspore"])
def test_both_frameworks_replay_the_call_as_the_straight_through_route(target):
    route = route_for(_function_call(), target, load_mapping())
    assert route.api == f"{STRAIGHT_THROUGH_RULE} for StraightThroughRound"
    assert route.args == (Ref(0), Seq("tuple", (Ext(0),)))
    broken = replace(_function_call(), args=(Ref(0),))
    assert "without its forward's result" in straight_through_route(broken, target).reason


def test_the_report_names_each_function_once():
    assert straight_through_note([]) is None
    note = straight_through_note(["Round", "Round", "Clip"])
    assert note.startswith("custom autograd.Function Clip, Round: its backward is the "
                           "script's Python; replayed as straight-through")

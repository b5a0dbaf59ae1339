"""MindSpore's ops.GradOperation (nn.TrainOneStepCell's backward) and nn.AdamWeightDecay (its
optimizer) captured and replayed, framework-free: the wrapper the capture installs
(opbench/model/capture/ms_grad_operation.py) on a FAKE `mindspore` module, the capture's
search for a forward output MindSpore hands back as a new object over the same memory, the
optimizer's lowering and its routes (opbench/model/replay/adam_weight_decay_route.py) on fake
tensors and optimizers."""
from __future__ import annotations

import math
import sys
import types

import numpy as np
import pytest

from opbench.frameworks.apimap import load_mapping
from opbench.model.capture.lowering import lower
from opbench.model.capture.ms_grad_operation import (GRAD_OPERATION_API,
                                                     MindSporeGradOperation)
from opbench.model.capture.observer import Capture
from opbench.model.program import Call, Ext, Ref, Seq
from opbench.model.replay.adam_weight_decay_route import (adam_weight_decay_route,
                                                          torch_settings_at)
from opbench.model.replay.optimizer_fold import (adam_update_tolerances,
                                                 adam_weight_decay_step_bound)
from opbench.model.replay.route import Unmapped
from opbench.model.replay.routes import route_for
from opbench.trace.events import FUNCTION, CallSite

PYNATIVE, GRAPH = 1, 0


class Recorder:
    """What the wrapper tells the capture."""

    def __init__(self):
        self.backwards = []

    def next_position(self):
        return 5

    def backward(self, *args, **kwargs):
        self.backwards.append((args, kwargs))


@pytest.fixture
def mindspore(monkeypatch):
    """A fake mindspore whose GradOperation runs its forward through base's
    `_pynative_func_grad_forward` (or returns the forward output of an earlier run, as a new
    object, as MindSpore 2.10 does after the network ran with grad on) and, like the real
    one, calls an inner GradOperation of its own."""
    base = types.ModuleType("mindspore.ops.composite.base")
    ran = []

    def _pynative_func_grad_forward(fn, *args):
        ran.append(args)
        return ("fresh", fn(*args))

    base._pynative_func_grad_forward = _pynative_func_grad_forward

    class GradOperation:
        def __init__(self, get_all=False, get_by_list=False, sens_param=False):
            self.get_all, self.get_by_list, self.sens_param = get_all, get_by_list, sens_param

        def __call__(self, fn, weights=None):
            inner = GradOperation(self.get_all, self.get_by_list, self.sens_param)

            def after_grad(*args):
                inner(fn, weights)                 # the real one's inner grad_(fn, weights)
                base._pynative_func_grad_forward(fn, *args)
                grads = tuple(f"grad of {w}" for w in weights or ())
                return (("input grad",), grads) if self.get_all else grads
            return after_grad

    fake = types.ModuleType("mindspore")
    fake.ops = types.SimpleNamespace(GradOperation=GradOperation)
    fake.PYNATIVE_MODE = PYNATIVE
    fake.mode = PYNATIVE
    fake.get_context = lambda name: fake.mode
    monkeypatch.setitem(sys.modules, "mindspore", fake)
    monkeypatch.setitem(sys.modules, "mindspore.ops.composite.base", base)
    fake.base = base
    return fake


def _installed(mindspore, recorder=None, synced=None):
    wrapper = MindSporeGradOperation(recorder or Recorder(),
                                     sync=lambda: (synced if synced is not None else []).append(1))
    wrapper.install()
    return wrapper


def test_the_grad_function_reports_a_backward_with_the_forwards_output(mindspore):
    recorder, synced = Recorder(), []
    wrapper = _installed(mindspore, recorder, synced)
    try:
        grad_fn = mindspore.ops.GradOperation(get_by_list=True)(lambda x: x * 3, ["w1", "w2"])
        grads = grad_fn(2)
    finally:
        wrapper.uninstall()
    assert grads == ("grad of w1", "grad of w2")          # the script sees MindSpore's
    assert synced == [1]                                   # the backward's end, waited for
    # one backward: the inner GradOperation the real one calls is not a second
    [(args, kwargs)] = recorder.backwards
    loss, weights, grad_position, result, first, elapsed = args
    assert loss == ("fresh", 6) and weights == ["w1", "w2"] and grad_position is None
    assert result == (("fresh", 6), grads) and first == 5 and elapsed >= 0
    assert kwargs == {"api": GRAD_OPERATION_API, "problem": None}


def test_get_all_is_value_and_grads_form_under_a_grad_position(mindspore):
    recorder = Recorder()
    wrapper = _installed(mindspore, recorder)
    try:
        mindspore.ops.GradOperation(get_all=True, get_by_list=True)(lambda x: x, ["w"])(1)
    finally:
        wrapper.uninstall()
    (loss, _, grad_position, result, _, _), _ = recorder.backwards[0]
    assert grad_position == 0 and result == (loss, (("input grad",), ("grad of w",)))


@pytest.mark.parametrize("settings, reason", [
    (dict(get_by_list=True, sens_param=True), "sens_param=True"),
    (dict(get_all=True), "without get_by_list"),
])
def test_a_seeded_backward_or_one_over_the_inputs_only_says_why(mindspore, settings, reason):
    recorder = Recorder()
    wrapper = _installed(mindspore, recorder)
    try:
        mindspore.ops.GradOperation(**settings)(lambda x: x, ["w"])(1)
    finally:
        wrapper.uninstall()
    (args, kwargs), = recorder.backwards
    assert reason in kwargs["problem"]


def test_in_graph_mode_the_grad_function_is_left_alone(mindspore):
    recorder = Recorder()
    wrapper = _installed(mindspore, recorder)
    mindspore.mode = GRAPH
    try:
        assert mindspore.ops.GradOperation(get_by_list=True)(lambda x: x, ["w"])(1) \
            == ("grad of w",)
    finally:
        wrapper.uninstall()
    assert recorder.backwards == []


def test_uninstall_gives_mindspore_its_own_functions_back(mindspore):
    call, forward = mindspore.ops.GradOperation.__call__, mindspore.base._pynative_func_grad_forward
    wrapper = _installed(mindspore)
    assert mindspore.ops.GradOperation.__call__ is not call
    assert mindspore.base._pynative_func_grad_forward is not forward
    wrapper.uninstall()
    assert mindspore.ops.GradOperation.__call__ is call
    assert mindspore.base._pynative_func_grad_forward is forward


# -- the capture: the forward's output found by memory ------------------------------------------

class FakeMsTensor:
    """A MindSpore tensor as the capture reads it: shape, dtype, and where its data lives."""

    def __init__(self, shape, pointer, dtype="Float32"):
        self.shape, self.dtype, self.pointer = tuple(shape), dtype, pointer

    def _data_ptr(self):
        return self.pointer


class FakeMsParameter(FakeMsTensor):
    pass


@pytest.fixture
def ms_tensors(monkeypatch):
    fake = types.ModuleType("mindspore")
    fake.Tensor, fake.Parameter = FakeMsTensor, FakeMsParameter
    monkeypatch.setitem(sys.modules, "mindspore", fake)
    monkeypatch.delitem(sys.modules, "torch", raising=False)


def _feed(capture, index, api, args, result):
    capture.on_call(index, CallSite("mindspore", api, FUNCTION), tuple(args), {}, result)
    return result


def test_a_loss_handed_back_as_a_new_object_is_found_by_its_memory(ms_tensors):
    """TrainOneStepCell ran `loss = self.network(*inputs)` before GradOperation's call, which
    then returns that output as a new tensor over the same memory: the backward's loss is the
    call that made it, not "not made by a captured call"."""
    capture = Capture()
    w = FakeMsParameter((8, 16), pointer=1)
    x = FakeMsTensor((4, 16), pointer=2)
    h = _feed(capture, 0, "mindspore.ops.matmul", (x, w), FakeMsTensor((4, 8), pointer=3))
    # a decoy of the loss's shape elsewhere in memory
    _feed(capture, 1, "mindspore.ops.mean", (h,), FakeMsTensor((), pointer=9))
    loss = _feed(capture, 2, "mindspore.ops.sum", (h,), FakeMsTensor((), pointer=4))
    handed_back = FakeMsTensor((), pointer=4)
    grads = (FakeMsTensor((8, 16), pointer=5),)
    capture.backward(handed_back, [w], None, (handed_back, grads), 3, 1000,
                     api=GRAD_OPERATION_API)
    _feed(capture, 4, "mindspore.mint.nn.Identity", (grads,), grads)
    backward = capture.calls([])[3]
    assert backward.api == GRAD_OPERATION_API and backward.replay_api == "mindspore.value_and_grad"
    assert backward.replayable and backward.backward
    assert backward.args == (Ref(2), Seq("list", (Ext(1),)))
    # the forward's output the replay returns is that call's too, not an external
    assert dict(backward.kwargs) == {"forward_out": Ref(2)}
    assert capture.calls([])[4].args == (Seq("tuple", (Ref(3, (1, 0)),)),)
    assert loss is not handed_back


def test_a_loss_in_no_captured_calls_memory_is_still_not_replayed(ms_tensors):
    capture = Capture()
    w = FakeMsParameter((8,), pointer=1)
    _feed(capture, 0, "mindspore.ops.sum", (w,), FakeMsTensor((), pointer=4))
    other = FakeMsTensor((), pointer=7)
    capture.backward(other, [w], None, (other, (FakeMsTensor((8,), pointer=8),)), 1, 10,
                     api=GRAD_OPERATION_API)
    backward = capture.calls([])[1]
    assert not backward.replayable
    assert backward.problem == ("the loss GradOperation differentiated was not made by a "
                                "captured call")


def test_a_problem_the_wrapper_found_is_the_calls(ms_tensors):
    capture = Capture()
    w = FakeMsParameter((8,), pointer=1)
    loss = _feed(capture, 0, "mindspore.ops.sum", (w,), FakeMsTensor((), pointer=4))
    capture.backward(loss, [w], None, (loss, (FakeMsTensor((8,), pointer=8),)), 1, 10,
                     api=GRAD_OPERATION_API, problem="seeded: why")
    assert capture.calls([])[1].problem == "seeded: why"


# -- nn.AdamWeightDecay: lowering, routes --------------------------------------------------------

class FakeAdamWeightDecay:
    """What the lowering reads of nn.AdamWeightDecay (its hyperparameters are 1-element
    tensors of shape (1,), its decay flags False for LayerNorm's gamma and beta)."""

    def __init__(self, **overrides):
        self.parameters = ("fc.weight", "norm.gamma", "norm.beta", "fc.bias")
        self.learning_rate = _Number(1e-3)
        self.beta1, self.beta2, self.eps = _Number(0.9), _Number(0.999), _Number(1e-6)
        self.weight_decay = _Number(0.01)
        self.decay_flags = (True, False, False, True)
        self.dynamic_lr = self.is_group_lr = self.dynamic_weight_decay = False
        self.loss_scale = 1.0
        vars(self).update(overrides)


class _Number:
    def __init__(self, value):
        self.value = value

    def asnumpy(self):
        return np.array([self.value], dtype=np.float32)


def test_adam_weight_decay_lowers_to_its_weights_gradients_and_per_weight_decays():
    lowered = lower("mindspore.nn.AdamWeightDecay", FakeAdamWeightDecay(), ("grads",), {})
    assert lowered.api == "mindspore.nn.AdamWeightDecay"
    assert lowered.args == (["fc.weight", "norm.gamma", "norm.beta", "fc.bias"], "grads")
    init = dict(lowered.init)
    assert init["weight_decays"] == pytest.approx((0.01, 0.0, 0.0, 0.01))
    assert (init["learning_rate"], init["beta1"], init["beta2"], init["eps"]) == \
        pytest.approx((1e-3, 0.9, 0.999, 1e-6))


@pytest.mark.parametrize("overrides, reason", [
    (dict(dynamic_lr=True), "schedule"),
    (dict(loss_scale=1024.0), "loss scaling"),
    (dict(decay_flags=(True,)), "do not match"),
])
def test_adam_weight_decay_that_is_not_replayed_says_why(overrides, reason):
    problem = lower("mindspore.nn.AdamWeightDecay", FakeAdamWeightDecay(**overrides), ("g",), {})
    assert isinstance(problem, str) and reason in problem


def _adamw_call(**init) -> Call:
    settings = dict(learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-6,
                    weight_decays=(0.01, 0.0, 0.01))
    return Call(index=3, framework="mindspore", api="mindspore.nn.AdamWeightDecay",
                kind="module", replay_api="mindspore.nn.AdamWeightDecay",
                args=(Seq("list", (Ext(0), Ext(1), Ext(2))), Ref(2, (1,))), kwargs=(),
                outputs=None, duration_ns=1, start_ns=0,
                init=tuple({**settings, **init}.items()))


def test_adam_weight_decay_replays_as_itself_and_as_torch_adamw():
    call = _adamw_call()
    assert route_for(call, "mindspore", load_mapping()).api == "mindspore.nn.AdamWeightDecay"
    other = route_for(call, "torch", load_mapping())
    assert other.api.startswith("torch.optim.AdamW.step") and other.args == call.args
    partial = Call(**{**vars(call), "init": (("learning_rate", 1e-3),)})
    assert "weight_decays" in adam_weight_decay_route(partial, "torch").reason
    assert isinstance(adam_weight_decay_route(call, "jax"), Unmapped)


def test_in_mindspore_it_is_the_cell_over_decay_groups_in_the_weights_order():
    built, called = [], []

    class FakeCell:
        def __init__(self, groups, **settings):
            built.append((groups, settings))

        def __call__(self, grads):
            called.append(grads)

    update = adam_weight_decay_route(_adamw_call(), "mindspore").make(
        lambda name: {"mindspore.nn.AdamWeightDecay": FakeCell}[name])
    weights = ["w1", "w2", "w3"]
    assert update(weights, ["g1", "g2", "g3"]) == ("w1", "w2", "w3")
    update(weights, ["g4", "g5", "g6"])
    [(groups, settings)] = built                          # built once, kept
    assert groups == [{"params": ["w1", "w3"], "weight_decay": 0.01},
                      {"params": ["w2"], "weight_decay": 0.0}, {"order_params": weights}]
    assert settings == dict(learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-6)
    assert called == [("g1", "g2", "g3"), ("g4", "g5", "g6")]


def _mindspore_adam_weight_decay(w, grads, lr, beta1, beta2, eps, decay):
    """The AdamWeightDecay kernel's arithmetic (no bias correction), in numpy."""
    m, v = np.zeros_like(w), np.zeros_like(w)
    for g in grads:
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        w = w - lr * (m / (np.sqrt(v) + eps) + decay * w)
    return w


def _torch_adamw(w, grads, settings_at, beta1, beta2):
    """torch.optim.AdamW's single-tensor step (bias corrected), in numpy, with the lr, eps and
    weight decay of each step given."""
    m, v = np.zeros_like(w), np.zeros_like(w)
    for t, g in enumerate(grads, start=1):
        lr, eps, decay = settings_at(t)
        w = w * (1 - lr * decay)
        m = m + (g - m) * (1 - beta1)
        v = beta2 * v + (1 - beta2) * g * g
        bc1, bc2 = 1 - beta1 ** t, 1 - beta2 ** t
        w = w - lr / bc1 * m / (np.sqrt(v) / math.sqrt(bc2) + eps)
    return w


def test_torch_adamw_with_the_step_settings_computes_mindspores_update():
    rng = np.random.default_rng(0)
    w = rng.standard_normal(50)
    grads = [rng.standard_normal(50) * 10 ** -k for k in range(6)]
    lr, beta1, beta2, eps, decay = 1e-3, 0.9, 0.999, 1e-6, 0.01
    expected = _mindspore_adam_weight_decay(w, grads, lr, beta1, beta2, eps, decay)
    got = _torch_adamw(w, grads, lambda t: torch_settings_at(t, lr, beta1, beta2, eps, decay),
                       beta1, beta2)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)
    # plain AdamW (a port's, bias corrected) moves the weights elsewhere: the settings matter
    plain = _torch_adamw(w, grads, lambda t: (lr, eps, decay), beta1, beta2)
    assert np.abs(plain - expected).max() > 1e-4


def test_in_torch_it_is_adamw_with_decay_groups_and_each_steps_settings():
    built, seen = [], []

    class FakeAdamW:
        def __init__(self, groups, **settings):
            built.append(([(g["weight_decay"], [w.name for w in g["params"]]) for g in groups],
                          settings))
            self.param_groups = [dict(g) for g in groups]

        def step(self):
            seen.append([(g["lr"], g["eps"], g["weight_decay"]) for g in self.param_groups]
                        + [w.grad for g in self.param_groups for w in g["params"]])

    class Weight:
        def __init__(self, name):
            self.name, self.grad = name, None

    update = adam_weight_decay_route(_adamw_call(), "torch").make(
        lambda name: {"torch.optim.AdamW": FakeAdamW}[name])
    weights = [Weight("w1"), Weight("w2"), Weight("w3")]
    assert update(weights, ("g1", "g2", "g3")) == tuple(weights)
    update(weights, ("g4", "g5", "g6"))
    assert built == [([(0.01, ["w1", "w3"]), (0.0, ["w2"])],
                      dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-6))]
    for t, step in enumerate(seen, start=1):
        assert step[0] == pytest.approx(torch_settings_at(t, 1e-3, 0.9, 0.999, 1e-6, 0.01))
        assert step[1] == pytest.approx(torch_settings_at(t, 1e-3, 0.9, 0.999, 1e-6, 0.0))
    assert seen[0][2:] == ["g1", "g3", "g2"] and seen[1][2:] == ["g4", "g6", "g5"]


def test_the_output_check_allows_a_zero_gradients_rounding_to_move_the_weight():
    """A bias before a LayerNorm has a gradient 0 up to rounding: each framework's update
    moves it by up to the bound in the direction of its rounding."""
    assert adam_weight_decay_step_bound(dict(learning_rate=1.0, beta1=0.9, beta2=0.999)) \
        == pytest.approx(7.2703, abs=1e-4)
    assert adam_weight_decay_step_bound(dict(learning_rate=1.0, beta1=0.99, beta2=0.9)) is None
    # a constant gradient (the worst case in practice) stays under the bound
    m = v = peak = 0.0
    for _ in range(3000):
        m, v = 0.9 * m + 0.1, 0.999 * v + 0.001
        peak = max(peak, m / math.sqrt(v))
    assert 6.5 < peak < 7.2703
    assert adam_update_tolerances([_adamw_call()]) == {3: pytest.approx(2 * 7.2703e-3,
                                                                        rel=1e-4)}

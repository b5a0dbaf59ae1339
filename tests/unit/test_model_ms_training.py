"""A MindSpore training step's own parts, framework-free: the value_and_grad wrapper the
capture installs (opbench/model/capture/ms_backward.py) on a FAKE `mindspore` module, and the routes
of the backward and the optimizer Cell (opbench/model/replay/training_routes.py) on fake tensors and
optimizers."""
from __future__ import annotations

import sys
import types
from dataclasses import replace

import pytest

from opbench.model.capture.ms_backward import MindSporeBackward
from opbench.model.program import Call, Ref, Seq
from opbench.frameworks.apimap import load_mapping
from opbench.model.replay.momentum_route import momentum_route
from opbench.model.replay.route import Route, Unmapped
from opbench.model.replay.routes import route_for
from opbench.model.replay.training_routes import optimizer_route, torch_backward


class Recorder:
    """What the wrapper tells the capture."""

    def __init__(self):
        self.position = 7
        self.backwards = []

    def next_position(self):
        return self.position

    def backward(self, *args):
        self.backwards.append(args)


@pytest.fixture
def mindspore(monkeypatch):
    def value_and_grad(fn, grad_position=0, weights=None, has_aux=False):
        def grad_fn(*args):
            out = fn(*args)
            loss = out[0] if isinstance(out, tuple) else out
            return loss * 10, tuple(f"grad of {w}" for w in weights or ())
        return grad_fn

    fake = types.ModuleType("mindspore")
    fake.value_and_grad = value_and_grad
    fake.ops = types.SimpleNamespace(value_and_grad=value_and_grad)
    monkeypatch.setitem(sys.modules, "mindspore", fake)
    return fake


def test_the_grad_function_reports_its_loss_weights_result_and_time(mindspore):
    recorder, synced = Recorder(), []
    backward = MindSporeBackward(recorder, sync=lambda: synced.append(True))
    backward.install()
    try:
        assert mindspore.ops.value_and_grad is mindspore.value_and_grad
        grad_fn = mindspore.value_and_grad(lambda x: x + 1, None, ["w1", "w2"])
        result = grad_fn(2)
    finally:
        backward.uninstall()
    assert result == (30, ("grad of w1", "grad of w2"))       # the script sees MindSpore's
    assert synced == [True]                                    # the backward's end, waited
    loss, weights, grad_position, returned, first, elapsed = recorder.backwards[0]
    assert (loss, weights, grad_position, returned, first) == (3, ["w1", "w2"], None, result,
                                                               7)
    assert elapsed >= 0


def test_with_aux_outputs_the_loss_is_the_first(mindspore):
    recorder = Recorder()
    backward = MindSporeBackward(recorder, sync=lambda: None)
    backward.install()
    try:
        mindspore.value_and_grad(lambda x: (x * 2, "aux"), None, ["w"], True)(4)
    finally:
        backward.uninstall()
    assert recorder.backwards[0][0] == 8


def test_uninstall_gives_mindspore_its_own_function_back(mindspore):
    original = mindspore.value_and_grad
    backward = MindSporeBackward(Recorder(), sync=lambda: None)
    backward.install()
    assert mindspore.value_and_grad is not original
    backward.uninstall()
    assert mindspore.value_and_grad is original and mindspore.ops.value_and_grad is original


# -- routes ----------------------------------------------------------------------------------

class FakeTorchTensor:
    def __init__(self, name):
        self.name, self.grad, self.backwards = name, "stale", 0

    def backward(self):
        self.backwards += 1


def _backward_call(*args) -> Call:
    return Call(index=3, framework="mindspore", api="mindspore.value_and_grad", kind="function",
                replay_api="mindspore.value_and_grad", args=args, kwargs=(), outputs=("none",),
                duration_ns=0, start_ns=0, backward=True)


def test_the_backward_in_torch_clears_the_grads_and_returns_loss_and_grads():
    route = torch_backward(_backward_call(Ref(2), Seq("list", ())))
    assert isinstance(route, Route) and route.api == "torch.Tensor.backward"
    loss, weights = FakeTorchTensor("loss"), [FakeTorchTensor("w1"), FakeTorchTensor("w2")]
    weights[0].grad = "stale grad"
    fn = route.make(lambda name: None)
    assert route.args == (Ref(2), Seq("list", ()), Ref(2))    # no has_aux: out is the loss
    value = fn(loss, weights, loss)
    assert loss.backwards == 1
    assert value == (loss, (None, None))     # cleared first, as zero_grad(set_to_none) does


def test_with_has_aux_the_torch_backward_returns_the_forward_s_whole_output():
    """`(loss, logits), grads = grad_fn(x, y)`: the script reads the logits at (0, 1) of the
    backward's output, so the replay returns the forward's output there, not the loss."""
    from dataclasses import replace
    out = Seq("tuple", (Ref(2), Ref(1)))
    route = torch_backward(replace(_backward_call(Ref(2), Seq("list", ())),
                                   kwargs=(("forward_out", out),)))
    assert route.args == (Ref(2), Seq("list", ()), out)
    loss, logits = FakeTorchTensor("loss"), FakeTorchTensor("logits")
    value = route.make(lambda name: None)(loss, [FakeTorchTensor("w")], (loss, logits))
    assert value == ((loss, logits), (None,))


def test_a_backward_without_weights_has_no_torch_route():
    assert isinstance(torch_backward(_backward_call(Ref(2))), Unmapped)


def _optimizer_call(api, **init) -> Call:
    return Call(index=5, framework="mindspore", api=api, kind="module", replay_api=api,
                args=(Seq("list", ()), Ref(3, (1,))), kwargs=(), outputs=("none",),
                duration_ns=0, start_ns=0, init=tuple(init.items()))


def test_the_optimizer_routes_name_what_they_step_in_each_framework():
    sgd = _optimizer_call("mindspore.nn.SGD", learning_rate=0.1, momentum=0.9, dampening=0.0,
                          nesterov=False)
    adam = _optimizer_call("mindspore.nn.Adam", learning_rate=0.1, beta1=0.9, beta2=0.999,
                           eps=1e-8)
    assert optimizer_route(sgd, "torch").api == "torch.optim.SGD.step"
    assert optimizer_route(adam, "torch").api == "torch.optim.Adam.step"
    assert optimizer_route(sgd, "mindspore").api == "mindspore.nn.SGD"
    assert optimizer_route(sgd, "torch").args == sgd.args
    assert isinstance(optimizer_route(sgd, "jax"), Unmapped)


def test_the_torch_optimizer_is_built_once_per_set_of_weights_and_stepped_with_the_grads(
        monkeypatch):
    built, stepped = [], []

    class FakeSGD:
        def __init__(self, weights, **settings):
            built.append((len(weights), settings))
            self.weights = weights

        def step(self):
            stepped.append([w.grad for w in self.weights])

    fake_torch = types.ModuleType("torch")
    fake_torch.optim = types.SimpleNamespace(SGD=FakeSGD)
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    call = _optimizer_call("mindspore.nn.SGD", learning_rate=0.1, momentum=0.9, dampening=0.0,
                           nesterov=False)
    update = optimizer_route(call, "torch").make(lambda name: None)
    weights = [FakeTorchTensor("w1"), FakeTorchTensor("w2")]
    assert update(weights, ("g1", "g2")) == tuple(weights)
    update(weights, ("g3", "g4"))
    assert built == [(2, dict(lr=0.1, momentum=0.9, dampening=0.0, nesterov=False))]
    assert stepped == [["g1", "g2"], ["g3", "g4"]]


def _momentum_call(**init) -> Call:
    settings = dict(learning_rate=0.1, momentum=0.9, nesterov=False,
                    weight_decays=(1e-4, 0.0, 1e-4))
    return _optimizer_call("mindspore.nn.Momentum", **{**settings, **init})


def test_momentum_replays_as_itself_and_as_torch_sgd_and_says_what_it_misses():
    call = _momentum_call()
    assert route_for(call, "mindspore", load_mapping()).api == "mindspore.nn.Momentum"
    other = route_for(call, "torch", load_mapping())
    assert other.api.startswith("torch.optim.SGD.step") and other.args == call.args
    partial = replace(call, init=(("learning_rate", 0.1),))
    assert "weight_decays" in route_for(partial, "torch", load_mapping()).reason
    assert isinstance(momentum_route(call, "jax"), Unmapped)


def test_momentum_in_torch_is_sgd_with_its_decay_groups_built_once_and_stepped():
    built, stepped = [], []

    class FakeSGD:
        def __init__(self, groups, **settings):
            built.append(([(g["weight_decay"], [w.name for w in g["params"]]) for g in groups],
                          settings))
            self.weights = [w for g in groups for w in g["params"]]

        def step(self):
            stepped.append(sorted(w.grad for w in self.weights))

    update = momentum_route(_momentum_call(nesterov=True), "torch").make(
        lambda name: {"torch.optim.SGD": FakeSGD}[name])
    weights = [FakeTorchTensor("w1"), FakeTorchTensor("w2"), FakeTorchTensor("w3")]
    assert update(weights, ("g1", "g2", "g3")) == tuple(weights)
    update(weights, ("g4", "g5", "g6"))
    assert built == [([(1e-4, ["w1", "w3"]), (0.0, ["w2"])],
                      dict(lr=0.1, momentum=0.9, nesterov=True))]
    assert stepped == [["g1", "g2", "g3"], ["g4", "g5", "g6"]]


def test_momentum_in_mindspore_is_the_cell_over_decay_groups_in_the_weights_order():
    built, called = [], []

    class FakeMomentum:
        def __init__(self, groups, **settings):
            built.append((groups, settings))

        def __call__(self, grads):
            called.append(grads)

    update = momentum_route(_momentum_call(), "mindspore").make(
        lambda name: {"mindspore.nn.Momentum": FakeMomentum}[name])
    weights = ["w1", "w2", "w3"]
    assert update(weights, ["g1", "g2", "g3"]) == ("w1", "w2", "w3")
    [(groups, settings)] = built
    assert groups == [{"params": ["w1", "w3"], "weight_decay": 1e-4},
                      {"params": ["w2"], "weight_decay": 0.0},
                      {"order_params": weights}]
    assert settings == dict(learning_rate=0.1, momentum=0.9, use_nesterov=False)
    assert called == [("g1", "g2", "g3")]

"""A call's arguments bound to its parameters' names (opbench/model/bound_args.py), and the
rules that read them so: the training routes' optimizers built from a MindSpore optimizer
Cell's recorded settings (model/replay/training_routes.py), with FAKE torch and MindSpore
modules in sys.modules that record what they were built with."""
from __future__ import annotations

import sys
import types

import pytest

from opbench.model.bound_args import bind
from opbench.model.program import Call, Ext, Lit, Seq
from opbench.model.replay.training_routes import ADAM, SGD, TRAINING_TORCH_TO_MINDSPORE, \
    optimizer_route, torch_backward


def test_positional_then_keyword_then_default_then_none():
    bound = bind(("input", "target", "weight", "reduction"), ("x",), {"target": "y"},
                 reduction="mean")
    assert bound == ("x", "y", None, "mean")
    assert (bound.input, bound.target, bound.weight, bound.reduction) == ("x", "y", None,
                                                                          "mean")


def test_keyword_pairs_bind_like_a_mapping_and_unnamed_keywords_are_not_bound():
    bound = bind(("value",), (), (("value", 3), ("other", 4)))
    assert bound.value == 3 and bound._fields == ("value",)


def test_a_record_is_frozen():
    with pytest.raises(AttributeError):
        bind(("a",), (1,)).a = 2


def _optimizer_call(api, init):
    return Call(index=7, framework="mindspore", api=api, kind="module", replay_api=api,
                args=(Seq("list", (Ext(0),)), Seq("tuple", (Ext(1),))), kwargs=(),
                outputs=("none",), duration_ns=1, start_ns=0, init=init)


SGD_INIT = (("learning_rate", 0.1), ("momentum", 0.9), ("dampening", 0.0), ("nesterov", True))
ADAM_INIT = (("learning_rate", 0.01), ("beta1", 0.8), ("beta2", 0.99), ("eps", 1e-6))


class _Built:
    """What a fake optimizer class was constructed with."""
    made: list = []

    def __init__(self, weights, **settings):
        _Built.made.append((type(self).__name__, settings))

    def step(self):            # torch.optim's
        pass

    def __call__(self, grads):     # a MindSpore optimizer Cell's
        pass


@pytest.fixture
def fake_frameworks(monkeypatch):
    _Built.made = []
    torch = types.ModuleType("torch")
    torch.optim = types.SimpleNamespace(SGD=type("SGD", (_Built,), {}),
                                        Adam=type("Adam", (_Built,), {}))
    mindspore = types.ModuleType("mindspore")
    mindspore.nn = types.SimpleNamespace(SGD=type("SGD", (_Built,), {}),
                                         Adam=type("Adam", (_Built,), {}))
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "mindspore", mindspore)
    return _Built.made


@pytest.mark.parametrize("api, init, target, expected", [
    (SGD, SGD_INIT, "torch", ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.0,
                                      "nesterov": True})),
    (ADAM, ADAM_INIT, "torch", ("Adam", {"lr": 0.01, "betas": (0.8, 0.99), "eps": 1e-6})),
    (SGD, SGD_INIT, "mindspore", ("SGD", dict(SGD_INIT))),
    (ADAM, ADAM_INIT, "mindspore", ("Adam", dict(ADAM_INIT))),
])
def test_an_optimizer_is_built_with_the_recorded_settings(fake_frameworks, api, init, target,
                                                          expected):
    route = optimizer_route(_optimizer_call(api, init), target)
    update = route.make(lambda name: None)
    weight = types.SimpleNamespace(grad=None)
    assert update([weight], ["g"]) == (weight,)
    assert update([weight], ["g"]) == (weight,)          # built once, kept
    assert fake_frameworks == [expected]


def _torch_call(api, args, kwargs=()):
    return Call(index=0, framework="torch", api=api, kind="function", replay_api=api,
                args=args, kwargs=kwargs, outputs=("none",), duration_ns=1, start_ns=0)


def test_foreach_norm_takes_its_order_by_position_keyword_or_default():
    rule = TRAINING_TORCH_TO_MINDSPORE["torch._foreach_norm"]
    tensors = Seq("list", (Ext(0),))
    for call in (_torch_call("torch._foreach_norm", (tensors, Lit(2.0))),
                 _torch_call("torch._foreach_norm", (tensors,), (("ord", Lit(2.0)),)),
                 _torch_call("torch._foreach_norm", (tensors,))):
        assert rule(call).args == (tensors,)
    refused = rule(_torch_call("torch._foreach_norm", (tensors,), (("ord", Lit("fro")),)))
    assert "not a number" in refused.reason


def test_addcmul_takes_its_value_by_keyword_and_refuses_other_keywords():
    rule = TRAINING_TORCH_TO_MINDSPORE["torch.Tensor.addcmul_"]
    three = (Ext(0), Ext(1), Ext(2))
    assert rule(_torch_call("torch.Tensor.addcmul_", three, (("value", Lit(0.5)),))).args \
        == three
    assert rule(_torch_call("torch.Tensor.addcmul_", three)).args == three
    assert hasattr(rule(_torch_call("torch.Tensor.addcmul_", three, (("out", Ext(3)),))),
                   "reason")


def test_the_backward_returns_the_forward_output_written_by_keyword_else_the_loss():
    loss, weights, out = Ext(0), Seq("tuple", (Ext(1),)), Ext(5)
    with_out = _torch_call("mindspore.value_and_grad", (loss, weights),
                           (("forward_out", out),))
    assert torch_backward(with_out).args == (loss, weights, out)
    assert torch_backward(_torch_call("mindspore.value_and_grad", (loss, weights))).args \
        == (loss, weights, loss)

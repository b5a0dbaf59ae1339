"""MindSpore layers as the function or primitive call they perform (opbench/model/capture/lowering.py),
read from the layer's own attributes, so a MindSpore script replays in torch. The layers are
stand-ins with MindSpore's attribute names (checked against MindSpore 2.10's classes)."""
from __future__ import annotations

import types

import pytest

from opbench.model.capture.lowering import Lowered, lower, primitive_init

X = object()          # the layer's input tensor (passed through untouched)


def _layer(**attributes):
    return types.SimpleNamespace(training=False, **attributes)


class Primitive:
    def __init__(self, **init_attrs):
        self.init_attrs = init_attrs


def test_mint_linear_is_mints_functional_linear_with_its_parameters():
    layer = _layer(weight="W", bias="B")
    assert lower("mindspore.mint.nn.Linear", layer, (X,), {}) == Lowered(
        "mindspore.mint.nn.functional.linear", (X, "W", "B"))


def test_conv2d_takes_pad_mode_and_equal_pairs_as_one_int():
    layer = _layer(data_format="NCHW", pad_mode="pad", padding=1, stride=(1, 1),
                   dilation=(2, 2), group=1, has_bias=False, weight="W", bias=None)
    found = lower("mindspore.nn.Conv2d", layer, (X,), {})
    assert found == Lowered("mindspore.ops.conv2d", (X, "W", None, 1, "pad", 1, 2, 1))


def test_conv2d_without_explicit_padding_and_with_unequal_strides():
    layer = _layer(data_format="NCHW", pad_mode="same", padding=3, stride=(1, 2),
                   dilation=(1, 1), group=2, has_bias=True, weight="W", bias="B")
    found = lower("mindspore.nn.Conv2d", layer, (X,), {})
    assert found.args == (X, "W", "B", (1, 2), "same", 0, 1, 2)


def test_conv2d_in_nhwc_is_refused_with_the_reason():
    layer = _layer(data_format="NHWC", pad_mode="same", padding=0, stride=1, dilation=1,
                   group=1, has_bias=False, weight="W")
    assert "NHWC" in lower("mindspore.nn.Conv2d", layer, (X,), {})


@pytest.mark.parametrize("layer_api", ["mindspore.nn.BatchNorm2d", "mindspore.nn.BatchNorm1d"])
@pytest.mark.parametrize("use_batch_statistics, training, expected", [
    (None, True, True), (None, False, False), (False, True, False), (True, False, True)])
def test_batch_norm_uses_its_moving_statistics_and_its_momentum_as_kept(
        use_batch_statistics, training, expected, layer_api):
    """nn.BatchNorm2d(momentum=0.9) keeps 0.1 (the new value's share), which is what
    ops.batch_norm takes: passed as is."""
    layer = types.SimpleNamespace(training=training, use_batch_statistics=use_batch_statistics,
                                  moving_mean="M", moving_variance="V", gamma="G", beta="B",
                                  momentum=0.09999999999999998, eps=1e-5)
    found = lower(layer_api, layer, (X,), {})
    assert found == Lowered("mindspore.ops.batch_norm",
                            (X, "M", "V", "G", "B", expected, 0.09999999999999998, 1e-5))


def test_max_pool_is_the_primitive_the_layer_holds_built_from_its_constructor():
    layer = _layer(return_indices=False, use_pad=False,
                   max_pool=Primitive(kernel_size=2, strides=2, pad_mode="VALID",
                                      data_format="NCHW"))
    found = lower("mindspore.nn.MaxPool2d", layer, (X,), {})
    assert found.api == "mindspore.ops.MaxPool" and found.args == (X,)
    assert found.init == (("data_format", "NCHW"), ("kernel_size", 2), ("pad_mode", "VALID"),
                          ("strides", 2))


def test_max_pool_with_padding_is_refused():
    layer = _layer(return_indices=False, use_pad=True, max_pool=Primitive())
    assert "padding" in lower("mindspore.nn.MaxPool2d", layer, (X,), {})


def test_layer_norm_is_its_primitive_and_the_layer_returns_the_first_output():
    layer = _layer(gamma="G", beta="B",
                   layer_norm=Primitive(begin_norm_axis=-1, begin_params_axis=-1,
                                        epsilon=1e-7))
    found = lower("mindspore.nn.LayerNorm", layer, (X,), {})
    assert (found.api, found.args, found.pick) == ("mindspore.ops.LayerNorm", (X, "G", "B"), 0)
    assert dict(found.init) == {"begin_norm_axis": -1, "begin_params_axis": -1,
                                "epsilon": 1e-7}


def test_embedding_is_a_gather_of_its_table_on_axis_0_and_one_hot_is_refused():
    layer = _layer(use_one_hot=False, embedding_table="T")
    assert lower("mindspore.nn.Embedding", layer, (X,), {}) == Lowered(
        "mindspore.ops.gather", ("T", X, 0))
    assert "use_one_hot" in lower("mindspore.nn.Embedding",
                                  _layer(use_one_hot=True, embedding_table="T"), (X,), {})


@pytest.mark.parametrize("api, approximate, expected", [
    ("mindspore.nn.GELU", True, "tanh"), ("mindspore.nn.GELU", False, "none"),
    ("mindspore.mint.nn.GELU", "tanh", "tanh"), ("mindspore.mint.nn.GELU", "none", "none")])
def test_gelu_layers_are_ops_gelu_with_the_approximation_as_a_string(api, approximate,
                                                                    expected):
    found = lower(api, _layer(approximate=approximate), (X,), {})
    assert found == Lowered("mindspore.ops.gelu", (X,), (("approximate", expected),))


def test_cross_entropy_loss_passes_every_setting_of_the_layer():
    layer = _layer(weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.1)
    found = lower("mindspore.nn.CrossEntropyLoss", layer, ("LOGITS", "LABELS"), {})
    assert found == Lowered("mindspore.ops.cross_entropy",
                            ("LOGITS", "LABELS", None, -100, "mean", 0.1))


@pytest.mark.parametrize("reduce, average, extra", [
    (True, True, ()), (True, False, (("reduction", "sum"),)),
    (False, True, (("reduction", "none"),))])
def test_mse_loss_reads_its_reduction_from_loss_base_s_flags(reduce, average, extra):
    """nn.MSELoss was "no function form" (32% of ms_cell_mlp_sgd.py not covered)."""
    found = lower("mindspore.nn.MSELoss", _layer(reduce=reduce, average=average),
                  ("LOGITS", "LABELS"), {})
    assert found == Lowered("mindspore.ops.mse_loss", ("LOGITS", "LABELS"), extra)


@pytest.mark.parametrize("api", ["mindspore.nn.Dropout", "mindspore.mint.nn.Dropout"])
def test_an_eval_dropout_is_an_alias_and_a_training_one_is_refused(api):
    assert lower(api, _layer(p=0.1), (X,), {}) == Lowered(None, (X,))
    training = types.SimpleNamespace(training=True, p=0.1)
    assert "training" in lower(api, training, (X,), {})


@pytest.mark.parametrize("api, function", [
    ("mindspore.mint.nn.ReLU", "mindspore.mint.nn.functional.relu"),
    ("mindspore.nn.ReLU", "mindspore.ops.relu"), ("mindspore.nn.Tanh", "mindspore.ops.tanh")])
def test_activation_layers_are_their_functions(api, function):
    assert lower(api, _layer(), (X,), {}) == Lowered(function, (X,))


def test_a_layer_without_a_rule_and_a_primitive_without_its_constructor():
    assert "no function form" in lower("mindspore.nn.RNN", _layer(), (X,), {})
    with pytest.raises(ValueError, match="keeps no constructor arguments"):
        primitive_init(object())


class Scalar:
    """A hyperparameter MindSpore keeps as a Parameter or Tensor (learning rate, momentum)."""

    def __init__(self, value):
        self.value = value

    def asnumpy(self):
        return self.value


def _optimizer(**attributes):
    base = dict(parameters=("W1", "W2"), dynamic_lr=False, is_group_lr=False, is_group=False,
                dynamic_weight_decay=False, weight_decay=0.0, loss_scale=1.0,
                learning_rate=Scalar(0.05))
    return _layer(**{**base, **attributes})


def test_sgd_is_its_weights_gradients_and_hyperparameters():
    sgd = _optimizer(momentum=Scalar(0.9), dampening=0.0, nesterov=False)
    grads = ("G1", "G2")
    assert lower("mindspore.nn.SGD", sgd, (grads,), {}) == Lowered(
        "mindspore.nn.SGD", (["W1", "W2"], grads),
        init=(("learning_rate", 0.05), ("momentum", 0.9), ("dampening", 0.0),
              ("nesterov", False)))


def test_adam_is_its_weights_gradients_and_betas():
    adam = _optimizer(beta1=Scalar(0.8), beta2=Scalar(0.99), eps=1e-6, use_amsgrad=False,
                      use_lazy=False, use_offload=False, use_nesterov=False)
    found = lower("mindspore.nn.Adam", adam, (), {"gradients": ("G1", "G2")})
    assert found == Lowered("mindspore.nn.Adam", (["W1", "W2"], ("G1", "G2")),
                            init=(("learning_rate", 0.05), ("beta1", 0.8), ("beta2", 0.99),
                                  ("eps", 1e-6)))


@pytest.mark.parametrize("setting, reason", [
    (dict(dynamic_lr=True), "schedule or parameter groups"),
    (dict(is_group=True), "schedule or parameter groups"),
    (dict(weight_decay=1e-4), "weight decay"),
    (dict(weight_decay=(0.0, 1e-4)), "weight decay"),
    (dict(loss_scale=1024.0), "loss scaling")])
def test_optimizers_a_replay_would_not_update_alike_say_why(setting, reason):
    """MindSpore's weight decay skips LayerNorm and BatchNorm weights by their names where
    torch's decays every weight: the two updates would differ, so it is not replayed."""
    sgd = _optimizer(momentum=Scalar(0.9), dampening=0.0, nesterov=False, **setting)
    assert reason in lower("mindspore.nn.SGD", sgd, (("G1", "G2"),), {})


def test_adam_with_amsgrad_or_nesterov_is_not_replayed():
    adam = _optimizer(beta1=Scalar(0.9), beta2=Scalar(0.999), eps=1e-8, use_amsgrad=True,
                      use_lazy=False, use_offload=False, use_nesterov=False)
    assert "amsgrad" in lower("mindspore.nn.Adam", adam, (("G1", "G2"),), {})


@pytest.mark.parametrize("api, function", [
    ("mindspore.mint.nn.Hardswish", "mindspore.mint.nn.functional.hardswish"),
    ("mindspore.mint.nn.Hardsigmoid", "mindspore.mint.nn.functional.hardsigmoid"),
    ("mindspore.nn.HSwish", "mindspore.mint.nn.functional.hardswish"),
    ("mindspore.nn.HSigmoid", "mindspore.mint.nn.functional.hardsigmoid")])
def test_hard_activations_are_mints_functions_of_their_input(api, function):
    """mindcv's mobilenet_v3: 12.7% of its traced time was "no function form" before."""
    assert lower(api, _layer(), (X,), {}) == Lowered(function, (X,))
    assert lower(api, _layer(), (), {"input": X}) == Lowered(function, (X,))


def _momentum(**attributes):
    base = dict(momentum=Scalar(0.9), use_nesterov=False, decay_flags=(True, False),
                grad_centralization=False)
    return _optimizer(**{**base, **attributes})


def test_momentum_keeps_each_weights_decay_where_its_flag_is_set():
    """mindcv's create_optimizer("momentum", weight_decay=1e-4) groups every weight with the
    decay; MindSpore adds decay * weight to the flagged weights' gradients."""
    momentum = _momentum(is_group=True, weight_decay=(Scalar(1e-4), Scalar(1e-4)),
                         use_nesterov=True)
    found = lower("mindspore.nn.Momentum", momentum, (("G1", "G2"),), {})
    assert found == Lowered("mindspore.nn.Momentum", (["W1", "W2"], ("G1", "G2")),
                            init=(("learning_rate", 0.05), ("momentum", 0.9),
                                  ("nesterov", True), ("weight_decays", (1e-4, 0.0))))
    one = lower("mindspore.nn.Momentum", _momentum(weight_decay=0.0, decay_flags=None), (),
                {"gradients": ("G1", "G2")})
    assert dict(one.init)["weight_decays"] == (0.0, 0.0)


@pytest.mark.parametrize("setting, reason", [
    (dict(dynamic_lr=True), "schedule"), (dict(is_group_lr=True), "schedule"),
    (dict(dynamic_weight_decay=True), "schedule"), (dict(loss_scale=128.0), "loss scaling"),
    (dict(grad_centralization=True), "centralization"),
    (dict(weight_decay=(0.1, 0.2, 0.3)), "do not match")])
def test_momentum_a_replay_would_not_update_alike_says_why(setting, reason):
    assert reason in lower("mindspore.nn.Momentum", _momentum(**setting), (("G1", "G2"),), {})


def test_conv2d_four_sided_padding_is_height_and_width_when_even_else_refused():
    """ops.conv2d takes (height, width): the layer's (top, bottom, left, right) failed in
    MindSpore's own replay."""
    def conv(padding):
        return _layer(data_format="NCHW", pad_mode="pad", padding=padding, stride=(1, 1),
                      dilation=(1, 1), group=1, has_bias=False, weight="W", bias=None)
    found = lower("mindspore.nn.Conv2d", conv((1, 1, 2, 2)), (X,), {})
    assert found.args[5] == (1, 2)
    assert "uneven" in lower("mindspore.nn.Conv2d", conv((0, 1, 1, 2)), (X,), {})

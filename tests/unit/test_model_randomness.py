"""Calls that draw random numbers (opbench/model/replay/randomness.py) and the output check
that leaves them, and what reads them, uncompared (impact/pipeline.py `_tainted`)."""
from __future__ import annotations

import types

import pytest

from opbench.model.impact.pipeline import _tainted
from opbench.model.program import Call, Ext, Lit, Ref
from opbench.model.replay.randomness import draws_random_numbers

F = "torch.nn.functional."


def _call(api: str, args: tuple = (Ext(0),), kwargs: tuple = (), index: int = 0,
          framework: str = "torch") -> Call:
    return Call(index=index, framework=framework, api=api, kind="function", replay_api=api,
                args=args, kwargs=kwargs, outputs=("tensor", (4, 8), "float32"),
                duration_ns=1, start_ns=0)


# query, key, value, embed_dim, num_heads, in_proj weight and bias, bias_k, bias_v,
# add_zero_attn; then dropout_p; then out_proj's weight and bias
_MHA = (Ext(0), Ext(0), Ext(0), Lit(32), Lit(4), Ext(1), Ext(2), Lit(None), Lit(None),
        Lit(False))
_MHA_OUT = (Ext(3), Ext(4))


@pytest.mark.parametrize("call, random", [
    (_call(F + "dropout", (Ext(0), Lit(0.1), Lit(True))), True),        # nn.Dropout, lowered
    (_call(F + "dropout", (Ext(0),), (("p", Lit(0.1)), ("training", Lit(False)))), False),
    (_call(F + "dropout", (Ext(0), Lit(0.0), Lit(True))), False),
    (_call(F + "dropout"), True),                                        # p=0.5, training
    (_call(F + "scaled_dot_product_attention", (Ext(0), Ext(1), Ext(2)),
           (("dropout_p", Lit(0.1)),)), True),
    (_call(F + "scaled_dot_product_attention", (Ext(0), Ext(1), Ext(2))), False),
    (_call("mindspore.ops.dropout", (Ext(0),), (("p", Lit(0.2)),), framework="mindspore"),
     True),
    (_call("torch.relu"), False),
    (_call("torch.lstm", (Ext(0), Lit(None), Ext(1), Lit(True), Lit(2), Lit(0.2), Lit(True))),
     True),
    (_call("torch.lstm", (Ext(0), Lit(None), Ext(1), Lit(True), Lit(2), Lit(0.2), Lit(False))),
     False),
    # nn.GRU and nn.MultiheadAttention traced through (capture/lowering.py traced_through)
    (_call("torch.gru", (Ext(0), Ext(1), Ext(2), Lit(True), Lit(2), Lit(0.1), Lit(True))), True),
    (_call("torch.gru", (Ext(0), Ext(1), Ext(2), Lit(True), Lit(2), Lit(0.0), Lit(True))), False),
    (_call(F + "multi_head_attention_forward", _MHA + (Lit(0.1),) + _MHA_OUT,
           (("training", Lit(True)),)), True),
    (_call(F + "multi_head_attention_forward", _MHA + (Lit(0.1),) + _MHA_OUT,
           (("training", Lit(False)),)), False),
    (_call(F + "multi_head_attention_forward", _MHA + (Lit(0.0),) + _MHA_OUT), False),
])
def test_a_training_dropout_with_a_nonzero_p_draws_random_numbers(call, random):
    assert draws_random_numbers(call) is random


@pytest.mark.parametrize("api", ["torch.randn_like", "torch.rand", "torch.randint",
                                 "torch.Tensor.normal_", "torch.Tensor.bernoulli",
                                 "mindspore.ops.randn_like", "mindspore.ops.standard_normal",
                                 "mindspore.mint.randperm"])
def test_a_sampler_draws_random_numbers_whatever_its_arguments(api):
    """A VAE's reparameterization (torch.randn_like): each framework's generator draws other
    numbers, so the sampler and what reads it are not compared."""
    assert draws_random_numbers(_call(api, framework=api.split(".")[0])) is True


def test_a_function_named_like_a_sampler_elsewhere_is_not_random():
    assert draws_random_numbers(_call("torch.randn_like_but_not")) is False
    assert draws_random_numbers(_call("torch.Tensor.normal")) is False


def test_calls_reading_a_dropouts_output_are_not_compared():
    """dropout -> relu -> matmul of relu; tanh of an input beside them: only tanh can agree
    across the frameworks."""
    calls = [_call(F + "dropout", (Ext(0), Lit(0.1), Lit(True)), index=0),
             _call("torch.relu", (Ref(0),), index=1),
             _call("torch.matmul", (Ref(1), Ext(1)), index=2),
             _call("torch.tanh", (Ext(2),), index=3)]
    step = types.SimpleNamespace(calls=calls)
    assert _tainted(step, [False] * 4) == [True, True, True, False]
    assert _tainted(step, [False, False, False, True]) == [True, True, True, True]

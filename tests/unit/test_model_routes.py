"""How a captured call replays in each framework (opbench/model/replay/routes.py): the call itself
in the framework it was traced in; in MindSpore, the explicit rules for the calls models
are made of (arguments rewritten, primitives built, attention composed) and otherwise the
API mapping with its alternatives as fallbacks; what cannot be replayed says why.

A route's callable is built with a fake `resolve` here (names -> recorder or numpy), so no
framework is imported."""
from __future__ import annotations

import math
import types
from dataclasses import replace

import numpy as np
import pytest

from opbench.frameworks.apimap import ApiMapping, MappingEntry, load_mapping
from opbench.model.program import Call, Dtype, Ext, Lit, Ref, Seq
from opbench.model.replay.routes import Route, Unmapped, route_for

X, W, B, IDS = Ref(0), Ext(1), Ext(2), Ext(3)


def _call(api: str, args: tuple = (X,), kwargs: tuple = (), framework: str = "torch",
          replay_api: str | None = "same", problem: str | None = None,
          kind: str = "function") -> Call:
    return Call(index=5, framework=framework, api=api, kind=kind,
                replay_api=api if replay_api == "same" else replay_api, args=args,
                kwargs=kwargs, outputs=("tensor", (2, 8), "float32"), duration_ns=1,
                start_ns=0, problem=problem)


class Resolver:
    """resolve() as the replay's adapter offers it: names in case-file spelling."""

    def __init__(self, functions: dict | None = None):
        self.functions = functions or {}
        self.asked: list[str] = []

    def __call__(self, name: str):
        self.asked.append(name)
        return self.functions.get(name, lambda *args, **kwargs: (name, args, kwargs))


def _names(route: Route) -> list[str]:
    return [route.api] + [f.api for f in route.fallbacks]


def _resolved_name(route: Route) -> str:
    resolve = Resolver()
    route.make(resolve)
    return resolve.asked[-1]


SMALL_MAPPING = ApiMapping([
    MappingEntry("torch.relu", "mindspore.mint.relu", "function", "same",
                 alternatives=("mindspore.ops.relu", "mindspore.nn.ReLU")),
    MappingEntry("torch.softmax", "mindspore.ops.softmax", "function", "differs",
                 note="dim vs axis"),
    MappingEntry("torch.nn.functional.fractional_max_pool3d", None, "functional", "none",
                 note="compose it from max_pool3d"),
    MappingEntry("torch.Tensor.add", "mindspore.Tensor.add", "tensor_method", "same"),
    MappingEntry("torch.nn.functional.linear", "mindspore.mint.nn.functional.linear",
                 "functional", "same"),
])


# -- in the traced framework ---------------------------------------------------------------------

@pytest.mark.parametrize("framework", ["torch", "mindspore"])
def test_in_the_traced_framework_the_call_replays_itself(framework):
    api = f"{framework}.nn.functional.layer_norm"
    kwargs = (("eps", Lit(1e-6)),)
    route = route_for(_call(api, (X, Seq("list", (Lit(8),)), W, B), kwargs,
                            framework=framework), framework, SMALL_MAPPING)
    assert isinstance(route, Route)
    assert route.api == api and route.fallbacks == ()
    assert route.args == (X, Seq("list", (Lit(8),)), W, B) and route.kwargs == kwargs
    assert _resolved_name(route) == api


def test_a_tensor_method_resolves_in_case_file_spelling():
    route = route_for(_call("torch.Tensor.add", (X, Ext(1)), kind="tensor_method"), "torch",
                      SMALL_MAPPING)
    assert route.api == "torch.Tensor.add" and _resolved_name(route) == "Tensor.add"


def test_a_lowered_layer_replays_its_function():
    call = _call("torch.nn.Linear", (X, W, B), replay_api="torch.nn.functional.linear",
                 kind="module")
    assert route_for(call, "torch", SMALL_MAPPING).api == "torch.nn.functional.linear"
    other = route_for(call, "mindspore", SMALL_MAPPING)
    assert other.api == "mindspore.mint.nn.functional.linear" and other.args == (X, W, B)


def test_a_call_without_replay_api_is_unmapped_with_its_problem():
    call = _call("torch.nn.Bilinear", replay_api=None,
                 problem="no function form for the layer torch.nn.Bilinear here")
    for target in ("torch", "mindspore"):
        route = route_for(call, target, SMALL_MAPPING)
        assert isinstance(route, Unmapped) and "torch.nn.Bilinear" in route.reason


@pytest.mark.parametrize("prop", ["T", "mT", "H", "mH"])
def test_a_transposing_property_read_replays_as_the_same_property(prop):
    # the capture records x.T as torch.Tensor.T (trace/torch_intercept.py); MindSpore's
    # Tensor has the four properties too, and resolve() reads a property rather than call it
    call = _call(f"torch.Tensor.{prop}", (W,), kind="tensor_method")
    own = route_for(call, "torch", SMALL_MAPPING)
    assert _resolved_name(own) == f"Tensor.{prop}" and own.args == (W,)
    other = route_for(call, "mindspore", SMALL_MAPPING)
    assert isinstance(other, Route) and other.api == f"mindspore.Tensor.{prop}"
    assert _resolved_name(other) == f"Tensor.{prop}" and other.args == (W,)


# -- torch -> MindSpore: explicit rules --------------------------------------------------------

def _layer_norm_call(**kwargs) -> Call:
    args = (X, Seq("list", (Lit(4), Lit(8))), W, B)
    return _call("torch.nn.functional.layer_norm", args,
                 tuple((k, Lit(v)) for k, v in kwargs.items()))


def test_layer_norm_routes_to_the_layernorm_primitive_over_its_normalized_dims():
    route = route_for(_layer_norm_call(eps=1e-6), "mindspore", load_mapping())
    assert route.api == "mindspore.ops.LayerNorm"
    assert route.args == (X, W, B)

    built = {}

    class LayerNorm:
        def __init__(self, **attributes):
            built.update(attributes)

        def __call__(self, x, weight, bias):
            return ("y", x, weight, bias), "mean", "variance"

    fn = route.make(Resolver({"mindspore.ops.LayerNorm": LayerNorm}))
    assert built == {"begin_norm_axis": -2, "begin_params_axis": -2, "epsilon": 1e-6}
    assert fn("x", "w", "b") == ("y", "x", "w", "b")       # the output, not mean/variance


def test_layer_norm_falls_back_to_mint_with_its_arguments_and_default_eps():
    route = route_for(_layer_norm_call(), "mindspore", load_mapping())
    (mint,) = route.fallbacks
    assert mint.api == "mindspore.mint.nn.functional.layer_norm"
    assert mint.args == (X, Seq("list", (Lit(4), Lit(8))), W, B, Lit(1e-5))
    assert _resolved_name(mint) == "mindspore.mint.nn.functional.layer_norm"


def test_layer_norm_with_keyword_weight_and_a_single_int_shape():
    call = _call("torch.nn.functional.layer_norm", (X, Lit(8)),
                 (("weight", W), ("bias", B), ("eps", Lit(1e-3))))
    route = route_for(call, "mindspore", load_mapping())
    assert route.args == (X, W, B)
    built = {}

    def layer_norm_primitive(**attributes):
        built.update(attributes)
        return lambda *a: (a, None, None)
    route.make(Resolver({"mindspore.ops.LayerNorm": layer_norm_primitive}))
    assert built["begin_norm_axis"] == -1 and built["epsilon"] == 1e-3


@pytest.mark.parametrize("weight,bias", [(None, None), (Lit(None), B), (W, Lit(None))])
def test_layer_norm_without_weight_or_bias_is_unmapped(weight, bias):
    args = (X, Seq("list", (Lit(8),))) + tuple(v for v in (weight, bias) if v is not None)
    route = route_for(_call("torch.nn.functional.layer_norm", args), "mindspore",
                      load_mapping())
    assert isinstance(route, Unmapped) and "weight and bias" in route.reason


def test_embedding_is_a_gather_of_the_weight_with_the_arguments_swapped():
    route = route_for(_call("torch.nn.functional.embedding", (IDS, W),
                            (("padding_idx", Lit(0)),)), "mindspore", load_mapping())
    assert route.api == "mindspore.ops.gather"
    assert route.args == (W, IDS, Lit(0)) and route.kwargs == ()
    assert _resolved_name(route) == "mindspore.ops.gather"
    (mint,) = route.fallbacks
    assert mint.api == "mindspore.mint.nn.functional.embedding" and mint.args == (IDS, W)


def test_embedding_with_other_keywords_is_unmapped_naming_them():
    route = route_for(_call("torch.nn.functional.embedding", (IDS, W),
                            (("max_norm", Lit(1.0)), ("sparse", Lit(True)))),
                      "mindspore", load_mapping())
    assert isinstance(route, Unmapped) and "max_norm, sparse" in route.reason


@pytest.mark.parametrize("kwargs,approximate", [((), "none"),
                                                ((("approximate", Lit("tanh")),), "tanh")])
def test_gelu_keeps_its_approximation_on_both_routes(kwargs, approximate):
    route = route_for(_call("torch.nn.functional.gelu", (X,), kwargs), "mindspore",
                      load_mapping())
    assert _names(route) == ["mindspore.ops.gelu", "mindspore.mint.nn.functional.gelu"]
    for r in (route, *route.fallbacks):
        assert r.args == (X,) and r.kwargs == (("approximate", Lit(approximate)),)


def _conv_call(*rest, **kwargs) -> Call:
    return _call("torch.nn.functional.conv2d", (X, W) + rest,
                 tuple((k, v) for k, v in kwargs.items()))


def test_conv2d_goes_to_mint_with_its_arguments_then_ops_with_pad_mode():
    call = _conv_call(B, Seq("list", (Lit(2), Lit(2))), Seq("list", (Lit(1), Lit(2))),
                      Seq("list", (Lit(1), Lit(1))), Lit(1))
    route = route_for(call, "mindspore", load_mapping())
    assert route.api == "mindspore.mint.nn.functional.conv2d" and route.args == call.args
    (ops,) = route.fallbacks
    assert ops.api == "mindspore.ops.conv2d" and ops.args == (X, W, B)
    # ops.conv2d takes stride and dilation as an int or a tuple, not a list: equal values
    # are one int (a case file holds lists only)
    assert dict(ops.kwargs) == {"pad_mode": Lit("pad"),
                                "padding": Seq("tuple", (Lit(1), Lit(2))),
                                "stride": Lit(2), "dilation": Lit(1), "groups": Lit(1)}


@pytest.mark.parametrize("padding,expected", [
    (Lit("same"), {"pad_mode": Lit("same")}),
    (Lit("valid"), {"pad_mode": Lit("valid")}),
    (Lit(3), {"pad_mode": Lit("pad"), "padding": Seq("tuple", (Lit(3), Lit(3)))}),
    (None, {"pad_mode": Lit("pad"), "padding": Seq("tuple", (Lit(0), Lit(0)))}),
])
def test_conv2d_padding_becomes_pad_mode(padding, expected):
    call = _conv_call(padding=padding) if padding is not None else _conv_call()
    (ops,) = route_for(call, "mindspore", load_mapping()).fallbacks
    assert dict(ops.kwargs) == expected
    assert ops.args == (X, W)          # no bias given: none passed


def _attention_inputs(rng):
    q = rng.standard_normal((2, 3, 4, 8)).astype(np.float32)
    k = rng.standard_normal((2, 3, 5, 8)).astype(np.float32)
    v = rng.standard_normal((2, 3, 5, 8)).astype(np.float32)
    return q, k, v


def _softmax(s, dim):
    e = np.exp(s - s.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


NUMPY_MINT = {"mindspore.mint.matmul": np.matmul, "mindspore.mint.softmax": _softmax,
              "mindspore.mint.where": np.where,
              "mindspore.mint.ones": lambda shape, dtype: np.ones(shape, dtype=dtype),
              "mindspore.mint.triu": np.triu}


def test_sdpa_is_composed_of_mint_calls_that_compute_attention():
    q, k, v = _attention_inputs(np.random.default_rng(0))
    route = route_for(_call("torch.nn.functional.scaled_dot_product_attention", (X, Ext(1),
                                                                                 Ext(2))),
                      "mindspore", load_mapping())
    assert route.api.startswith("softmax(q @ k^T * scale + mask) @ v")
    assert route.args == (X, Ext(1), Ext(2)) and route.fallbacks == ()
    out = route.make(Resolver(NUMPY_MINT))(q, k, v)
    expected = _softmax(q @ k.swapaxes(-2, -1) / math.sqrt(8), -1) @ v
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_sdpa_causal_with_a_scale_and_a_boolean_mask():
    rng = np.random.default_rng(1)
    q, k, v = _attention_inputs(rng)
    mask = rng.random((4, 5)) < 0.8
    mask[:, 0] = True                       # every row keeps one position
    call = _call("torch.nn.functional.scaled_dot_product_attention",
                 (X, Ext(1), Ext(2), Ext(3)), (("is_causal", Lit(True)), ("scale", Lit(0.5))))
    route = route_for(call, "mindspore", load_mapping())
    assert route.args == (X, Ext(1), Ext(2), Ext(3))
    out = route.make(Resolver(NUMPY_MINT))(q, k, v, mask)
    scores = q @ k.swapaxes(-2, -1) * 0.5
    scores = np.where(np.triu(np.ones((4, 5)), 1) > 0, -np.inf, scores)
    scores = np.where(mask, scores, -np.inf)
    np.testing.assert_allclose(out, _softmax(scores, -1) @ v, rtol=1e-5, atol=1e-6)


def test_sdpa_with_an_additive_mask_adds_it():
    rng = np.random.default_rng(2)
    q, k, v = _attention_inputs(rng)
    bias = rng.standard_normal((4, 5)).astype(np.float32)
    call = _call("torch.nn.functional.scaled_dot_product_attention",
                 (X, Ext(1), Ext(2)), (("attn_mask", Ext(3)),))
    out = route_for(call, "mindspore", load_mapping()).make(Resolver(NUMPY_MINT))(q, k, v, bias)
    expected = _softmax(q @ k.swapaxes(-2, -1) / math.sqrt(8) + bias, -1) @ v
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_sdpa_with_enable_gqa_repeats_the_key_and_value_heads_to_the_query_s():
    """transformers' Llama / Qwen2 pass enable_gqa=True with 2 key/value heads for 6 query
    heads: MindSpore's matmul refused the shapes (6.6% of hf_qwen2_inference.py)."""
    rng = np.random.default_rng(3)
    q = rng.standard_normal((2, 6, 4, 8)).astype(np.float32)
    k = rng.standard_normal((2, 2, 5, 8)).astype(np.float32)
    v = rng.standard_normal((2, 2, 5, 8)).astype(np.float32)
    call = _call("torch.nn.functional.scaled_dot_product_attention", (X, Ext(1), Ext(2)),
                 (("enable_gqa", Lit(True)),))
    functions = {**NUMPY_MINT, "mindspore.mint.broadcast_to": np.broadcast_to,
                 "mindspore.mint.unsqueeze": np.expand_dims}
    out = route_for(call, "mindspore", load_mapping()).make(Resolver(functions))(q, k, v)
    k6, v6 = np.repeat(k, 3, axis=1), np.repeat(v, 3, axis=1)     # torch's repeat_interleave
    expected = _softmax(q @ k6.swapaxes(-2, -1) / math.sqrt(8), -1) @ v6
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_repeat_flip_and_roll_take_torch_s_sizes_as_mindspore_s_cpu_routes_do():
    """x.repeat(1, 4, 1) is numpy's tile (MindSpore's Tensor.repeat has no CPU kernel),
    x.flip(-1) takes a tuple in MindSpore, torch.roll is two slices concatenated (no CPU
    Roll kernel)."""
    mapping = load_mapping()
    repeat = route_for(_call("torch.Tensor.repeat", (X, Lit(1), Lit(4), Lit(1))), "mindspore",
                       mapping)
    assert _names(repeat) == ["mindspore.Tensor.repeat", "mindspore.ops.tile"]
    assert repeat.fallbacks[0].args == (X, Seq("tuple", (Lit(1), Lit(4), Lit(1))))
    listed = route_for(_call("torch.Tensor.repeat", (X, Seq("list", (Lit(2), Lit(1))))),
                       "mindspore", mapping)
    assert listed.fallbacks[0].args == (X, Seq("tuple", (Lit(2), Lit(1))))
    flip = route_for(_call("torch.Tensor.flip", (X, Lit(-1))), "mindspore", mapping)
    assert flip.api == "mindspore.Tensor.flip" and flip.args == (X, Seq("tuple", (Lit(-1),)))
    flip = route_for(_call("torch.flip", (X,), (("dims", Seq("list", (Lit(0), Lit(1)))),)),
                     "mindspore", mapping)
    assert flip.api == "mindspore.mint.flip"
    assert flip.args == (X, Seq("tuple", (Lit(0), Lit(1))))
    roll = route_for(_call("torch.roll", (X,), (("shifts", Lit(1)), ("dims", Lit(0)))),
                     "mindspore", mapping)
    assert roll.api == "mindspore.mint.roll"
    composed = roll.fallbacks[0]
    narrow = lambda x, dim, start, length: np.take(x, range(start, start + length), axis=dim)
    functions = {"mindspore.mint.cat": lambda parts, dim: np.concatenate(parts, dim),
                 "mindspore.mint.narrow": narrow}
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(composed.make(Resolver(functions))(x), np.roll(x, 1, 0))
    two = route_for(_call("torch.roll", (X, Seq("tuple", (Lit(-1), Lit(2))),
                                         Seq("tuple", (Lit(0), Lit(1))))), "mindspore", mapping)
    np.testing.assert_array_equal(two.fallbacks[0].make(Resolver(functions))(x),
                                  np.roll(x, (-1, 2), (0, 1)))
    flat = route_for(_call("torch.roll", (X, Lit(1))), "mindspore", mapping)
    assert isinstance(flat, Unmapped) and "flattened" in flat.reason


def test_sdpa_without_a_mask_passes_none():
    call = _call("torch.nn.functional.scaled_dot_product_attention",
                 (X, Ext(1), Ext(2), Lit(None)))
    assert route_for(call, "mindspore", load_mapping()).args == (X, Ext(1), Ext(2))


class _Dropout:
    """ops.dropout as the fake resolver offers it: the p it was given, and every weight
    halved (a stand-in for a random mask: deterministic, and not the identity)."""

    def __init__(self):
        self.given: list[tuple[float, bool]] = []

    def __call__(self, x, p, training):
        self.given.append((p, training))
        return x * 0.5


def test_sdpa_with_dropout_drops_the_attention_weights_with_torchs_p():
    """Was unmapped ("attention with dropout: random, not replayed": 8.7-10% of transformers'
    DistilBERT and T5 training steps): now ops.dropout between softmax and `@ v`, in
    training mode, with torch's p; the name says outputs are random."""
    q, k, v = _attention_inputs(np.random.default_rng(2))
    dropout = _Dropout()
    call = _call("torch.nn.functional.scaled_dot_product_attention",
                 (X, Ext(1), Ext(2)), (("dropout_p", Lit(0.1)),))
    route = route_for(call, "mindspore", load_mapping())
    assert isinstance(route, Route) and route.args == (X, Ext(1), Ext(2))
    assert "ops.dropout(p=0.1)" in route.api and "random" in route.api
    out = route.make(Resolver({**NUMPY_MINT, "mindspore.ops.dropout": dropout}))(q, k, v)
    assert dropout.given == [(0.1, True)]
    expected = (_softmax(q @ k.swapaxes(-2, -1) / math.sqrt(8), -1) * 0.5) @ v
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_sdpa_without_dropout_resolves_no_dropout():
    resolve = Resolver(NUMPY_MINT)
    route = route_for(_call("torch.nn.functional.scaled_dot_product_attention",
                            (X, Ext(1), Ext(2)), (("dropout_p", Lit(0.0)),)),
                      "mindspore", load_mapping())
    route.make(resolve)
    assert "mindspore.ops.dropout" not in resolve.asked
    assert route.api == "softmax(q @ k^T * scale + mask) @ v (mindspore.mint)"


@pytest.mark.parametrize("api", ["torch.Tensor.transpose", "torch.transpose"])
def test_transpose_swaps_two_dims_with_mint_transpose_not_tensor_transpose(api):
    """MindSpore's Tensor.transpose permutes all axes (the mapping's entry): the rule
    routes torch's two-dim swap to mint.transpose(x, dim0, dim1)."""
    route = route_for(_call(api, (X, Lit(1), Lit(2)), kind="tensor_method"), "mindspore",
                      load_mapping())
    assert route.api == "mindspore.mint.transpose"
    assert route.args == (X, Lit(1), Lit(2))
    assert _resolved_name(route) == "mindspore.mint.transpose"


def test_arange_goes_to_mint_then_ops():
    route = route_for(_call("torch.arange", (Lit(0), Lit(10)), (("dtype", Dtype("int64")),)),
                      "mindspore", load_mapping())
    assert _names(route) == ["mindspore.mint.arange", "mindspore.ops.arange"]
    for r in (route, *route.fallbacks):
        assert r.args == (Lit(0), Lit(10)) and r.kwargs == (("dtype", Dtype("int64")),)


def test_tensor_to_a_dtype_is_astype_and_to_a_device_does_nothing():
    mapping = load_mapping()
    cast = route_for(_call("torch.Tensor.to", (X, Dtype("float16"))), "mindspore", mapping)
    assert cast.api == "mindspore.Tensor.astype" and cast.args == (X, Dtype("float16"))
    assert _resolved_name(cast) == "Tensor.astype"
    keyword = route_for(_call("torch.Tensor.to", (X,), (("dtype", Dtype("float16")),
                                                        ("device", Lit("cpu")))),
                        "mindspore", mapping)
    assert keyword.api == "mindspore.Tensor.astype" and keyword.args == (X, Dtype("float16"))
    move = route_for(_call("torch.Tensor.to", (X, Lit("cpu"))), "mindspore", mapping)
    assert move.args == (X,)
    tensor = object()
    assert move.make(Resolver())(tensor) is tensor


def test_tensor_to_another_tensor_or_two_dtypes_is_unmapped():
    for args in ((X, Ext(4)), (X, Dtype("float16"), Dtype("float32"))):
        route = route_for(_call("torch.Tensor.to", args), "mindspore", load_mapping())
        assert isinstance(route, Unmapped) and "dtype or a device" in route.reason


def test_view_reshape_and_contiguous_rules():
    mapping = load_mapping()
    view = route_for(_call("torch.Tensor.view", (X, Lit(2), Lit(-1))), "mindspore", mapping)
    assert view.api == "mindspore.Tensor.view" and _resolved_name(view) == "Tensor.view"
    assert view.args == (X, Lit(2), Lit(-1))
    contiguous = route_for(_call("torch.Tensor.contiguous", (X,)), "mindspore", mapping)
    assert contiguous.args == (X,)
    fn = contiguous.make(Resolver())
    tensor = object()
    assert fn(tensor) is tensor


def test_tensor_size_reads_mindspores_shape_property():
    """nanoGPT's x.size(1): MindSpore's Tensor.shape is a property, not a method."""
    mapping = load_mapping()
    tensor = types.SimpleNamespace(shape=(2, 8, 4))
    with_dim = route_for(_call("torch.Tensor.size", (X, Lit(1))), "mindspore", mapping)
    assert with_dim.args == (X, Lit(1)) and with_dim.make(Resolver())(tensor, 1) == 8
    keyword = route_for(_call("torch.Tensor.size", (X,), (("dim", Lit(-1)),)), "mindspore",
                        mapping)
    assert keyword.make(Resolver())(tensor, -1) == 4
    whole = route_for(_call("torch.Tensor.size", (X,)), "mindspore", mapping)
    assert whole.args == (X,) and whole.make(Resolver())(tensor) == (2, 8, 4)


# -- through the API mapping --------------------------------------------------------------------

def test_same_status_maps_with_the_arguments_and_alternatives_as_fallbacks():
    call = _call("torch.relu", (X,), (("inplace", Lit(False)),))
    route = route_for(call, "mindspore", SMALL_MAPPING)
    assert _names(route) == ["mindspore.mint.relu", "mindspore.ops.relu", "mindspore.nn.ReLU"]
    for r in (route, *route.fallbacks):
        assert r.args == (X,) and r.kwargs == (("inplace", Lit(False)),)
    assert [_resolved_name(r) for r in route.fallbacks] == ["mindspore.ops.relu",
                                                            "mindspore.nn.ReLU"]


def test_differs_status_maps_positional_calls_only():
    positional = route_for(_call("torch.softmax", (X, Lit(-1))), "mindspore", SMALL_MAPPING)
    assert positional.api == "mindspore.ops.softmax" and positional.args == (X, Lit(-1))
    keyword = route_for(_call("torch.softmax", (X,), (("dim", Lit(-1)),)), "mindspore",
                        SMALL_MAPPING)
    assert isinstance(keyword, Unmapped)
    assert "takes its arguments differently (dim vs axis)" in keyword.reason
    assert "passes keywords" in keyword.reason


def test_none_status_and_a_missing_entry_are_unmapped_with_a_reason():
    none = route_for(_call("torch.nn.functional.fractional_max_pool3d"), "mindspore",
                     SMALL_MAPPING)
    assert isinstance(none, Unmapped)
    assert none.reason == "no mindspore equivalent: compose it from max_pool3d"
    missing = route_for(_call("torch.bucketize"), "mindspore", SMALL_MAPPING)
    assert isinstance(missing, Unmapped)
    assert missing.reason == "no entry in the API mapping for torch.bucketize"


def test_a_mindspore_call_maps_to_torch_without_the_mindspore_alternatives():
    call = _call("mindspore.mint.relu", (X,), framework="mindspore")
    route = route_for(call, "torch", SMALL_MAPPING)
    assert route.api == "torch.relu" and route.fallbacks == ()
    # an alternative's name finds its entry too
    via_alternative = route_for(_call("mindspore.ops.relu", framework="mindspore"), "torch",
                                SMALL_MAPPING)
    assert via_alternative.api == "torch.relu"
    method = route_for(_call("mindspore.Tensor.add", (X, Ext(1)), framework="mindspore"),
                       "torch", SMALL_MAPPING)
    assert method.api == "torch.Tensor.add" and _resolved_name(method) == "Tensor.add"


def test_torch_rules_do_not_apply_to_a_mindspore_call_of_the_same_name():
    """A MindSpore script's call takes MindSpore's argument order: torch's rule for
    torch.transpose (which reads torch's) is not used for mindspore.mint.transpose."""
    mapping = ApiMapping([MappingEntry("torch.transpose", "mindspore.mint.transpose",
                                       "function", "same")])
    call = _call("mindspore.mint.transpose", (X, Lit(0), Lit(1)), framework="mindspore")
    route = route_for(call, "torch", mapping)
    assert route.api == "torch.transpose" and route.args == (X, Lit(0), Lit(1))


# -- MindSpore -> torch: primitives, picked outputs and explicit rules --------------------------

def _ms_call(api: str, args: tuple = (X,), kwargs: tuple = (), init: tuple = (),
             pick: int | None = None, replay_api: str | None = "same") -> Call:
    return replace(_call(api, args, kwargs, framework="mindspore", replay_api=replay_api),
                   init=init, pick=pick)


class Built:
    """A primitive class stand-in: records its constructor's arguments."""
    made: list[dict] = []

    def __init__(self, **init):
        Built.made.append(init)
        self.init = init

    def __call__(self, *args):
        return ("out", "mean", "variance") if len(args) == 3 else ("pooled", args)


def test_a_primitive_replays_in_mindspore_built_once_from_its_constructor():
    Built.made = []
    call = _ms_call("mindspore.ops.MaxPool", init=(("kernel_size", 2), ("strides", 2)))
    route = route_for(call, "mindspore", SMALL_MAPPING)
    fn = route.make(Resolver({"mindspore.ops.MaxPool": Built}))
    assert route.api == "mindspore.ops.MaxPool" and route.args == (X,)
    assert fn("x") == ("pooled", ("x",)) and fn("y") == ("pooled", ("y",))
    assert Built.made == [{"kernel_size": 2, "strides": 2}]


def test_a_picked_output_is_taken_from_the_route_and_its_fallbacks():
    call = _ms_call("mindspore.nn.LayerNorm", (X, W, B), replay_api="mindspore.ops.LayerNorm",
                    init=(("begin_norm_axis", -1), ("begin_params_axis", -1),
                          ("epsilon", 1e-7)), pick=0)
    route = route_for(call, "mindspore", SMALL_MAPPING)
    assert route.api == "mindspore.ops.LayerNorm[0]"
    assert route.make(Resolver({"mindspore.ops.LayerNorm": Built}))("x", "g", "b") == "out"
    other = route_for(call, "torch", SMALL_MAPPING)
    assert other.api == "torch.native_layer_norm (as ops.LayerNorm)[0]"
    assert other.args == (X, W, B)


def test_a_layer_norm_primitive_normalizing_other_axes_than_its_parameters_is_unmapped():
    call = _ms_call("mindspore.ops.LayerNorm", (X, W, B),
                    init=(("begin_norm_axis", 1), ("begin_params_axis", -1)))
    assert isinstance(route_for(call, "torch", SMALL_MAPPING), Unmapped)


def test_a_primitive_without_a_torch_rule_is_unmapped_naming_it():
    call = _ms_call("mindspore.ops.Unique", init=(("x", 1),))
    assert "mindspore.ops.Unique" in route_for(call, "torch", SMALL_MAPPING).reason


def test_gather_on_axis_0_takes_the_table_and_indices_and_batch_dims_is_unmapped():
    route = route_for(_ms_call("mindspore.ops.gather", (W, IDS, Lit(0))), "torch",
                      SMALL_MAPPING)
    assert route.args == (W, IDS) and "embedding" in route.api
    batched = _ms_call("mindspore.ops.gather", (W, IDS, Lit(1), Lit(1)))
    assert isinstance(route_for(batched, "torch", SMALL_MAPPING), Unmapped)


def test_cross_entropy_passes_mindspores_positional_settings_by_name():
    """torch's cross_entropy has size_average and reduce before ignore_index: MindSpore's
    positional ignore_index=-100 landed on torch's `reduce` (a bug seen on the CNN port:
    "argument 'ignore_index' must be int, not str")."""
    call = _ms_call("mindspore.ops.cross_entropy",
                    (X, IDS, Lit(None), Lit(-100), Lit("mean"), Lit(0.0)))
    route = route_for(call, "torch", SMALL_MAPPING)
    assert route.args == (X, IDS)
    assert route.kwargs == (("weight", Lit(None)), ("ignore_index", Lit(-100)),
                            ("reduction", Lit("mean")), ("label_smoothing", Lit(0.0)))


@pytest.mark.parametrize("api, torch_api", [
    ("mindspore.ops.dense", "torch.nn.functional.linear"),
    ("mindspore.ops.gelu", "torch.nn.functional.gelu"),
    ("mindspore.ops.arange", "torch.arange"),
    ("mindspore.ops.batch_norm", "torch.nn.functional.batch_norm")])
def test_mindspore_functions_with_torchs_argument_order(api, torch_api):
    route = route_for(_ms_call(api, (X, W)), "torch", SMALL_MAPPING)
    assert route.api == torch_api and route.args == (X, W)


def test_shipped_mapping_alternatives_become_fallbacks():
    route = route_for(_call("torch.nn.functional.fold", (X, Lit(4), Lit(2))), "mindspore",
                      load_mapping())
    assert _names(route) == ["mindspore.mint.nn.functional.fold", "mindspore.ops.fold"]
    relu = route_for(_call("torch.nn.functional.relu"), "mindspore", load_mapping())
    assert _names(relu) == ["mindspore.mint.nn.functional.relu"]


def test_shipped_mapping_none_entry_is_unmapped_with_its_note():
    route = route_for(_call("torch.nn.functional.instance_norm", (X,)), "mindspore",
                      load_mapping())
    assert isinstance(route, Unmapped) and route.reason.startswith("no mindspore equivalent")
    assert "instancenorm" in route.reason.lower()


# -- arguments across frameworks (issue 32, item 1) ----------------------------------------------

def test_torch_private_keywords_do_not_reach_mindspore():
    """F.softmax(x, dim=-1) with a _stacklevel the capture kept (one differing from the
    default) still replays: a torch-private keyword has no MindSpore counterpart."""
    call = _call("torch.nn.functional.softmax", kwargs=(("dim", Lit(-1)),
                                                         ("_stacklevel", Lit(5))))
    route = route_for(call, "mindspore", load_mapping())
    assert route.kwargs == (("dim", Lit(-1)),)


@pytest.mark.parametrize("size_average, reduce, reduction", [
    (Lit(False), None, "sum"), (Lit(True), None, "mean"), (None, Lit(False), "none"),
    (Lit(False), Lit(True), "sum"), (Lit(None), Lit(None), "mean")])
def test_deprecated_loss_arguments_become_the_reduction_they_mean(size_average, reduce,
                                                                   reduction):
    kwargs = tuple((k, v) for k, v in (("size_average", size_average), ("reduce", reduce))
                   if v is not None)
    call = _call("torch.nn.functional.cross_entropy", args=(X, IDS), kwargs=kwargs)
    route = route_for(call, "mindspore", load_mapping())
    assert route.api == "mindspore.mint.nn.functional.cross_entropy"
    assert route.kwargs == (("reduction", Lit(reduction)),)
    assert [f.kwargs for f in route.fallbacks] == [(("reduction", Lit(reduction)),)]


def test_the_legacy_rule_overrides_an_explicit_reduction_as_torch_does():
    call = _call("torch.nn.functional.mse_loss", args=(X, X),
                 kwargs=(("reduce", Lit(False)), ("reduction", Lit("mean"))))
    assert route_for(call, "mindspore", load_mapping()).kwargs == (("reduction", Lit("none")),)


def test_out_none_is_dropped_and_an_output_tensor_is_not():
    """DataLoader's default_collate calls torch.stack(batch, 0, out=None): MindSpore's stack
    takes no `out`, and None is torch's default (a new tensor). An `out` tensor is kept (and
    left to fail as it would: it changes where the result goes)."""
    rows = Seq("list", (X, W))
    route = route_for(_call("torch.stack", (rows, Lit(0)), (("out", Lit(None)),)),
                      "mindspore", load_mapping())
    assert route.args == (rows, Lit(0)) and route.kwargs == ()
    kept = route_for(_call("torch.stack", (rows, Lit(0)), (("out", B),)), "mindspore",
                     load_mapping())
    assert kept.kwargs == (("out", B),)


def test_device_and_placement_keywords_are_dropped_and_dtype_kept():
    """torch.arange(n, device=x.device) and torch.tensor(v, device=..., dtype=...)."""
    arange = _call("torch.arange", args=(Lit(8),), kwargs=(("device", Lit("cpu")),
                                                            ("dtype", Dtype("int64"))))
    route = route_for(arange, "mindspore", load_mapping())
    assert route.args == (Lit(8),) and route.kwargs == (("dtype", Dtype("int64")),)
    tensor = _call("torch.tensor", args=(Seq("list", (Lit(1.0), Lit(2.0))),),
                   kwargs=(("device", Lit("cpu")), ("dtype", Dtype("float32")),
                           ("requires_grad", Lit(False))))
    route = route_for(tensor, "mindspore", load_mapping())
    assert isinstance(route, Route) and route.api == "mindspore.tensor"
    assert route.kwargs == (("dtype", Dtype("float32")),)


def test_in_the_traced_framework_the_keywords_stay_as_written():
    call = _call("torch.arange", args=(Lit(8),), kwargs=(("device", Lit("cpu")),))
    assert route_for(call, "torch", load_mapping()).kwargs == (("device", Lit("cpu")),)


def test_concatenation_skips_one_dimensional_empty_tensors_in_mindspore():
    """A transformers cache starts as an empty tensor; torch.cat skips it, MindSpore refuses
    it ("element rank must be same")."""
    call = _call("torch.cat", args=(Seq("list", (X, Ext(1))), Lit(1)))
    route = route_for(call, "mindspore", load_mapping())
    assert route.api.startswith("mindspore.mint.cat")

    def fake_cat(tensors, dim):
        return [t.shape for t in tensors], dim
    fn = route.make(Resolver({"mindspore.mint.cat": fake_cat}))
    empty, full = np.zeros((0,)), np.zeros((2, 3))
    assert fn([empty, full], 1) == ([(2, 3)], 1)
    assert fn([empty], 0) == ([(0,)], 0)       # nothing else: torch's answer, an empty one


def test_a_keyword_renamed_by_the_mappings_note_goes_by_its_mindspore_name():
    mapping = ApiMapping([MappingEntry(
        "torch.Tensor.sum", "mindspore.Tensor.sum", "tensor_method", "differs",
        note="argument names differ: torch (dim, keepdim) vs MindSpore (axis, keep_dims)")])
    call = _call("torch.Tensor.sum", kwargs=(("dim", Lit(1)), ("keepdim", Lit(True))),
                 kind="tensor_method")
    assert route_for(call, "mindspore", mapping).kwargs == (("axis", Lit(1)),
                                                            ("keep_dims", Lit(True)))


def test_a_keyword_mindspore_lacks_is_refused_naming_it_and_others_pass():
    """F.mse_loss(a, b, reduction='sum') replays; with a weight MindSpore has no argument
    for, it is refused with the reason."""
    mapping = load_mapping()
    summed = _call("torch.nn.functional.mse_loss", args=(X, X),
                   kwargs=(("reduction", Lit("sum")),))
    assert route_for(summed, "mindspore", mapping).kwargs == (("reduction", Lit("sum")),)
    weighted = _call("torch.nn.functional.mse_loss", args=(X, X), kwargs=(("weight", W),))
    found = route_for(weighted, "mindspore", mapping)
    assert isinstance(found, Unmapped)
    assert found.reason.startswith("mindspore.mint.nn.functional.mse_loss has no 'weight' "
                                   "argument, which the call sets")


def test_a_note_that_is_not_a_signature_clause_keeps_keywords_out():
    from opbench.model.replay.routes import keyword_rule
    assert not keyword_rule("the method's argument is `axis`").understood
    rule = keyword_rule("MindSpore lacks torch argument(s): inplace; no CPU kernel in "
                        "MindSpore 2.10; CPU route: mindspore.ops.relu")
    assert rule.understood and rule.lacking == {"inplace"}
    uneven = keyword_rule("argument names differ: torch (input, align_to_window) vs "
                          "MindSpore (x)")
    assert uneven.renames == () and uneven.lacking == {"input", "align_to_window"}


@pytest.mark.parametrize("api", ["torch.Tensor.__isub__", "torch.Tensor.add_"])
def test_in_place_updates_are_written_back_in_mindspore(api):
    """`p -= lr * g` (a hand-written update): MindSpore 2.10's Tensor.__isub__, like add_,
    returns a new tensor and leaves the Parameter as it was; the route writes it back."""
    other = api.replace("torch.", "mindspore.", 1)
    mapping = ApiMapping([MappingEntry(api, other, "method", "same")])
    route = route_for(_call(api, (W, X)), "mindspore", mapping)
    assert route.api == f"{other} + assign (in place, as torch)"


def test_out_of_place_operators_are_not_written_back():
    mapping = ApiMapping([MappingEntry("torch.Tensor.__sub__", "mindspore.Tensor.__sub__",
                                       "method", "same")])
    route = route_for(_call("torch.Tensor.__sub__", (W, X)), "mindspore", mapping)
    assert route.api == "mindspore.Tensor.__sub__"


# -- torch's training utilities in MindSpore (training_routes.py) ---------------------------

def test_foreach_norm_is_each_tensors_vector_norm_in_mindspore():
    """ops.norm of the flattened tensor: of a matrix with ord 2 it would be the spectral
    norm, and MindSpore 2.10's CPU build has no LinalgVectorNorm kernel."""
    grads = Seq("list", (Ref(1), Ref(2)))
    route = route_for(_call("torch._foreach_norm", (grads, Lit(2.0))), "mindspore",
                      SMALL_MAPPING)
    resolve = Resolver({"mindspore.ops.norm": lambda t, order: np.linalg.norm(t, order)})
    fn = route.make(resolve)
    matrix, vector = np.arange(6.0).reshape(2, 3), np.array([3.0, 4.0])
    norms = fn([matrix, vector])
    assert norms == pytest.approx((np.sqrt(55.0), 5.0))
    assert route.args == (grads,)


def test_foreach_norm_with_an_ord_that_is_not_a_number_says_why():
    call = _call("torch._foreach_norm", (Seq("list", (Ref(1),)), Ext(4)))
    found = route_for(call, "mindspore", SMALL_MAPPING)
    assert isinstance(found, Unmapped) and "ord" in found.reason


@pytest.mark.parametrize("other, expected", [(Lit(0.5), [[1.0, 2.0], [3.0]]),
                                             (Seq("list", (Lit(1.0), Lit(2.0))),
                                              [[2.0, 4.0], [12.0]])])
def test_foreach_mul_applies_its_operand_to_each_tensor(other, expected):
    route = route_for(_call("torch._foreach_mul", (Seq("list", (Ref(1), Ref(2))), other)),
                      "mindspore", SMALL_MAPPING)
    fn = route.make(Resolver({"mindspore.ops.mul": np.multiply}))
    operand = other.value if isinstance(other, Lit) else [o.value for o in other.items]
    found = fn([np.array([2.0, 4.0]), np.array([6.0])], operand)
    assert [list(f) for f in found] == expected
    assert route.api == "mindspore.ops.mul per tensor (as torch._foreach_mul)"


def test_foreach_in_place_is_written_back_and_zero_is_zeros_like_written_back():
    route = route_for(_call("torch._foreach_add_", (Seq("list", (Ref(1),)), Lit(1.0))),
                      "mindspore", SMALL_MAPPING)
    assert route.api == "mindspore.ops.add per tensor + assign (as torch._foreach_add_)"
    zero = route_for(_call("torch.Tensor.zero_", (Ref(1),)), "mindspore", SMALL_MAPPING)
    assert zero.api == "mindspore.ops.zeros_like + assign (as Tensor.zero_)"
    assert _resolved_name(zero) == "mindspore.ops.zeros_like"


def test_foreach_with_alpha_is_not_replayed():
    call = _call("torch._foreach_add_", (Seq("list", (Ref(1),)), Seq("list", (Ref(2),))),
                 kwargs=(("alpha", Lit(-0.1)),))
    assert isinstance(route_for(call, "mindspore", SMALL_MAPPING), Unmapped)


@pytest.mark.parametrize("api, combine, expected", [
    ("torch.Tensor.addcmul_", "mindspore.ops.mul", 1.0 + 0.5 * 6.0 * 2.0),
    ("torch.Tensor.addcdiv_", "mindspore.ops.div", 1.0 + 0.5 * 6.0 / 2.0)])
def test_rmsprop_and_adagrads_addc_updates_are_composed_in_mindspore(monkeypatch, api, combine,
                                                                     expected):
    """No mapping for addcmul_ / addcdiv_: x + value * t1 (*|/) t2, written back."""
    import opbench.model.replay.training_routes as training_routes
    monkeypatch.setattr(training_routes, "write_back", lambda receiver, result: result)
    call = _call(api, (Ext(1), Ref(2), Ref(3)), kwargs=(("value", Lit(0.5)),))
    route = route_for(call, "mindspore", SMALL_MAPPING)
    fn = route.make(Resolver({combine: np.multiply if combine.endswith("mul") else np.divide}))
    assert fn(np.array([1.0]), np.array([6.0]), np.array([2.0])) == pytest.approx([expected])
    assert route.api.endswith("+ assign (as Tensor." + api.rsplit(".", 1)[-1] + ")")


def test_an_addc_update_with_a_tensor_value_is_not_replayed():
    call = _call("torch.Tensor.addcmul_", (Ext(1), Ref(2), Ref(3)), kwargs=(("value", Ext(4)),))
    assert isinstance(route_for(call, "mindspore", SMALL_MAPPING), Unmapped)


def test_a_cpu_alternative_takes_torch_s_keywords_under_its_own_names_by_its_signature():
    """ops.stack(tensors, axis=0) is mint.stack's CPU route: torch's dim=0 went to it as
    written and failed ("unexpected keyword argument 'dim'")."""
    mapping = ApiMapping([MappingEntry("torch.stack", "mindspore.mint.stack", "function",
                                       "same", alternatives=("mindspore.ops.stack",))])
    route = route_for(_call("torch.stack", (Seq("list", (X, X)),), (("dim", Lit(0)),)),
                      "mindspore", mapping)
    (ops,) = route.fallbacks
    assert ops.kwargs == (("dim", Lit(0)),)                  # renamed where it is called

    def ops_stack(tensors, axis=0):
        return ("ops.stack", axis)

    def mint_stack(tensors, dim=0):
        return ("mint.stack", dim)

    def anything(tensors, **kwargs):
        return kwargs

    assert ops.make(Resolver({"mindspore.ops.stack": ops_stack}))([1], dim=2) == \
        ("ops.stack", 2)
    assert ops.make(Resolver({"mindspore.ops.stack": mint_stack}))([1], dim=2) == \
        ("mint.stack", 2)                                    # it takes dim: kept
    assert ops.make(Resolver({"mindspore.ops.stack": anything}))([1], dim=2) == {"dim": 2}
    assert route.make(Resolver({"mindspore.mint.stack": mint_stack}))([1], dim=1) == \
        ("mint.stack", 1)                                    # the primary: as before

    def ops_sum(x, axis=None, keep_dims=False):
        return (axis, keep_dims)
    renamed = route_for(_call("torch.sum", (X,), (("dim", Lit(1)), ("keepdim", Lit(True)))),
                        "mindspore", ApiMapping([MappingEntry(
                            "torch.sum", "mindspore.mint.sum", "function", "same",
                            alternatives=("mindspore.ops.sum",))])).fallbacks[0]
    assert renamed.make(Resolver({"mindspore.ops.sum": ops_sum}))(1, dim=1, keepdim=True) == \
        (1, True)


@pytest.mark.parametrize("api", ["torch.zeros", "torch.ones", "torch.randn"])
def test_torch_sizes_written_one_by_one_are_one_shape_in_mindspore(api):
    """torch.zeros(n, 64) -> mint.zeros((n, 64)): MindSpore takes the shape as one argument."""
    size = Ref(2)                                            # x.size(0), made in the step
    route = route_for(_call(api, (size, Lit(64)), (("dtype", Dtype("float32")),)),
                      "mindspore", load_mapping())
    assert route.args == (Seq("tuple", (size, Lit(64))),)
    assert dict(route.kwargs) == {"dtype": Dtype("float32")}
    one = route_for(_call(api, (Seq("tuple", (Lit(2), Lit(3))),)), "mindspore", load_mapping())
    assert one.args == (Seq("tuple", (Lit(2), Lit(3))),)     # already one shape: as written


@pytest.mark.parametrize("ms_api, torch_api", [
    ("mindspore.ops.tanh", "torch.tanh"), ("mindspore.ops.abs", "torch.abs"),
    ("mindspore.ops.assign", "torch.Tensor.copy_"),
    ("mindspore.Tensor.astype", "torch.Tensor.to"),
    ("mindspore.ops.mse_loss", "torch.nn.functional.mse_loss")])
def test_mindspore_ops_a_cpu_port_writes_replay_in_torch(ms_api, torch_api):
    """MindSpore scripts call the `ops` spellings (nn.Tanh lowers to ops.tanh): "no entry in
    the API mapping" before, in four MindSpore conformance scripts."""
    call = _call(ms_api, (X, W), framework="mindspore")
    route = route_for(call, "torch", load_mapping())
    assert isinstance(route, Route) and route.api == torch_api


def test_an_in_place_method_falls_back_to_its_out_of_place_twin_written_back(monkeypatch):
    """An in-place method MindSpore's CPU build may lack (masked_fill_ was the case that
    showed it; it has its own rule now: inplace_routes.py) falls back to its out-of-place
    twin, written back."""
    call = _call("torch.Tensor.index_fill_", (X, Ext(1), Lit(0.0)), kind="tensor_method")
    route = route_for(call, "mindspore", load_mapping())
    assert _names(route) == ["mindspore.Tensor.index_fill_ + assign (in place, as torch)",
                             "mindspore.Tensor.index_fill + assign (in place, as torch)"]
    (twin,) = route.fallbacks
    assert twin.args == (X, Ext(1), Lit(0.0))
    resolve = Resolver({"Tensor.index_fill": lambda x, mask, value: ("filled", x)})
    receiver = types.SimpleNamespace()
    written = []
    monkeypatch.setattr("opbench.model.replay.routes.write_back",
                        lambda r, result: written.append((r, result)) or r)
    assert twin.make(resolve)(receiver, "MASK", 0.0) is receiver
    assert written == [(receiver, ("filled", receiver))]
    plain = route_for(_call("torch.Tensor.__iadd__", (X, W), kind="tensor_method"),
                      "mindspore", load_mapping())
    assert plain.fallbacks == ()                     # an operator has no twin by name
    clone = route_for(_call("torch.Tensor.clone", (X,), kind="tensor_method"), "mindspore",
                      load_mapping())
    assert _names(clone) == ["mindspore.Tensor.clone", "mindspore.Tensor.copy"]


@pytest.mark.parametrize("api", ["torch.abs", "torch.Tensor.abs", "torch.Tensor.__abs__"])
def test_the_absolute_value_of_a_complex_tensor_is_real_in_mindspore_as_in_torch(api):
    """torch's abs of complex64 is float32; MindSpore 2.10's is complex64 (the magnitude in
    the real part): a complex input goes to ops.ComplexAbs, a real one to the mapping's
    route."""
    route = route_for(_call(api, kind="tensor_method" if "Tensor" in api else "function"),
                      "mindspore", load_mapping())
    assert "ops.ComplexAbs" in route.api

    class ComplexAbs:
        def __call__(self, x):
            return np.abs(x).real.astype(np.float32)

    fn = route.make(Resolver({"mindspore.ops.ComplexAbs": ComplexAbs}))
    spectrum = np.array([3 + 4j, 1 - 1j], dtype=np.complex64)
    magnitude = fn(spectrum)
    assert magnitude.dtype == np.float32 and magnitude.tolist() == pytest.approx([5.0, 2 ** 0.5])
    real = np.array([-1.0, 2.0], dtype=np.float32)
    assert fn(real)[0] in ("mindspore.mint.abs", "Tensor.abs", "Tensor.__abs__")  # the mapping's
    for fallback in route.fallbacks:          # ops.abs, the CPU route: the same rule
        assert fallback.make(Resolver({"mindspore.ops.ComplexAbs": ComplexAbs}))(
            spectrum).dtype == np.float32


@pytest.mark.parametrize("api, counterpart", [("torch.fft.rfft2", "mindspore.ops.rfft2"),
                                              ("torch.fft.irfft2", "mindspore.ops.irfft2")])
def test_the_fft_functions_replay_through_the_mapping(api, counterpart):
    """torch.fft has no mint mirror in MindSpore 2.10: the mapping names ops.rfft2 / irfft2
    (same arguments: input, s, dim, norm), which its CPU build runs on complex64."""
    call = _call(api, kwargs=(("s", Seq("tuple", (Lit(32), Lit(32)))), ("norm", Lit("ortho"))))
    route = route_for(call, "mindspore", load_mapping())
    assert route.api == counterpart
    assert route.kwargs == call.kwargs


def test_torch_frexp_is_not_covered_in_mindspore_with_its_reason():
    """MindSpore 2.10 has no frexp (mint nor ops): the call is a "not covered" row saying so
    (issue 32 named it among the calls that crashed a run)."""
    found = route_for(_call("torch.frexp"), "mindspore", load_mapping())
    assert isinstance(found, Unmapped)
    assert found.reason == "no entry in the API mapping for torch.frexp"


class _Zeros:
    """ops.zeros as a fake: a float array whose astype takes MindSpore's dtype names."""

    def __call__(self, shape):
        return _Named(np.zeros(shape, dtype=np.float32))


class _Named(np.ndarray):
    def __new__(cls, array):
        return np.asarray(array).view(cls)

    def astype(self, dtype, *args, **kwargs):
        return np.asarray(self).astype(np.dtype(dtype))


@pytest.mark.parametrize("api", ["torch.argmax", "torch.Tensor.argmax", "torch.Tensor.argmin"])
def test_an_index_reduction_of_a_zero_size_tensor_is_empty_in_mindspore_as_in_torch(api):
    """hf_roberta_mlm_inference.py: logits[input_ids == mask].argmax(-1) on a mask that
    selected no row: torch returns an empty index tensor, MindSpore 2.10 refused it."""
    call = _call(api, args=(X, Lit(-1)), kind="tensor_method" if "Tensor" in api else "function")
    route = route_for(call, "mindspore", load_mapping())
    assert "zero-size input" in route.api
    fn = route.make(Resolver({"mindspore.ops.zeros": _Zeros()}))
    empty = fn(np.zeros((0, 1000), dtype=np.float32), -1)
    assert empty.shape == (0,) and empty.dtype == np.int64
    assert fn(np.zeros((0, 1000), dtype=np.float32), -1, True).shape == (0, 1)
    # a tensor with elements goes to the mapping's route
    assert fn(np.ones((2, 1000), dtype=np.float32), -1)[0] != "mindspore.ops.zeros"


def test_a_mindspore_error_reason_is_its_first_line_that_says_something():
    """MindSpore frames its errors in dashes and section headers; the reason once read
    "RuntimeError: ------"."""
    from opbench.model.replay.executor import error_line
    message = ("\n----------------------------------------------------\n"
               "- Framework Unexpected Exception Raised:\n"
               "----------------------------------------------------\n"
               "This exception is caused by framework's unexpected error. Please create an "
               "issue at https://gitee.com/mindspore/mindspore/issues to get help.\n\n"
               "----------------------------------------------------\n"
               "- Kernel build failed: (For framework developers)\n"
               "----------------------------------------------------\n"
               "CPU kernel op [Default/Argmax-op0] resize failed.\n")
    assert error_line(RuntimeError(message)) == "CPU kernel op [Default/Argmax-op0] resize failed."
    assert error_line(TypeError("takes 1 positional argument\nmore")) == \
        "takes 1 positional argument"
    assert error_line(RuntimeError("")) == ""


# -- found by scripts the corpus had not seen (issue 32, branch unseen) ----------------------

@pytest.mark.parametrize("given, sent", [(Lit(2), Lit(2.0)), (Lit(1.5), Lit(1.5)),
                                         (Seq("tuple", (Lit(2), Lit(3))),
                                          Seq("tuple", (Lit(2.0), Lit(3.0))))])
def test_an_integer_scale_factor_goes_to_mindspore_as_a_float(given, sent):
    """F.interpolate(x, scale_factor=2): MindSpore 2.10's UpsampleNearest2D refuses integer
    scales ("scales=Tuple<int, int>"), torch takes them; the number is the same."""
    call = _call("torch.nn.functional.interpolate",
                 kwargs=(("scale_factor", given), ("mode", Lit("nearest"))))
    route = route_for(call, "mindspore", load_mapping())
    assert dict(route.kwargs) == {"scale_factor": sent, "mode": Lit("nearest")}
    scale = dict(route.kwargs)["scale_factor"]      # Lit(2) == Lit(2.0): the type is the test
    values = [i.value for i in scale.items] if isinstance(scale, Seq) else [scale.value]
    assert all(type(v) is float for v in values)


def test_torchs_own_replay_keeps_an_integer_scale_factor():
    call = _call("torch.nn.functional.interpolate", kwargs=(("scale_factor", Lit(2)),))
    assert route_for(call, "torch", load_mapping()).kwargs == (("scale_factor", Lit(2)),)


def test_a_hand_written_note_passes_the_keywords_its_clauses_name():
    """x.softmax(dim=-1) and x.max(dim=-1) (the mapping's notes for them are hand-written):
    the keyword the note's clause names goes renamed or as it is; one it does not name is
    still refused with the note."""
    mapping = load_mapping()
    softmax = route_for(_call("torch.Tensor.softmax", kwargs=(("dim", Lit(-1)),),
                              kind="tensor_method"), "mindspore", mapping)
    assert softmax.api == "mindspore.Tensor.softmax"
    assert softmax.kwargs == (("axis", Lit(-1)),)
    top = route_for(_call("torch.Tensor.max", kwargs=(("dim", Lit(-1)), ("keepdim", Lit(True))),
                          kind="tensor_method"), "mindspore", mapping)
    assert top.kwargs == (("dim", Lit(-1)), ("keepdim", Lit(True)))
    other = route_for(_call("torch.Tensor.max", kwargs=(("other", W),), kind="tensor_method"),
                      "mindspore", mapping)
    assert isinstance(other, Unmapped) and "no max(other) overload" in other.reason


def test_a_same_names_clause_is_understood_beside_remarks():
    from opbench.model.replay.routes import keyword_rule
    rule = keyword_rule("max() matches torch; keywords as torch's: dim, keepdim")
    assert not rule.understood and rule.same_names == {"dim", "keepdim"}
    assert rule.names("keepdim") and not rule.names("other")


@pytest.mark.parametrize("api, bound, expected", [
    ("torch._foreach_clamp_min_", "mindspore.ops.maximum", [[-0.5, 0.2], [3.0]]),
    ("torch._foreach_clamp_max_", "mindspore.ops.minimum", [[-2.0, 0.2], [0.5]])])
def test_clip_grad_values_foreach_clamps_bound_each_tensor(monkeypatch, api, bound, expected):
    """clip_grad_value_ calls _foreach_clamp_min_ then _foreach_clamp_max_ on the gradients:
    each tensor bounded by the number, written back."""
    import opbench.model.replay.training_routes as training_routes
    monkeypatch.setattr(training_routes, "write_back", lambda receiver, result: result)
    route = route_for(_call(api, (Seq("list", (Ref(1), Ref(2))),
                                  Lit(-0.5 if "min" in api else 0.5))),
                      "mindspore", SMALL_MAPPING)
    assert route.api == f"{bound} per tensor + assign (as {api})"
    fn = route.make(Resolver({bound: np.maximum if "min" in api else np.minimum}))
    found = fn([np.array([-2.0, 0.2]), np.array([3.0])], -0.5 if "min" in api else 0.5)
    assert [list(f) for f in found] == expected


def test_conv1d_falls_back_to_ops_conv1d_with_its_padding_after_a_pad_mode():
    """nn.Conv1d(padding=2) lowers to F.conv1d(x, w, b, 1, 2, 1, 1) (positional): mint's
    conv1d is Ascend-only on MindSpore 2.10, and ops.conv1d takes pad_mode before padding."""
    call = _call("torch.nn.functional.conv1d",
                 args=(X, W, B, Lit(1), Seq("list", (Lit(2),)), Seq("list", (Lit(1),)), Lit(1)))
    route = route_for(call, "mindspore", load_mapping())
    assert _names(route) == ["mindspore.mint.nn.functional.conv1d", "mindspore.ops.conv1d"]
    fallback = route.fallbacks[0]
    assert fallback.args == (X, W, B)
    assert dict(fallback.kwargs) == {"pad_mode": Lit("pad"),
                                     "padding": Seq("tuple", (Lit(2),)),
                                     "stride": Lit(1), "dilation": Lit(1), "groups": Lit(1)}


@pytest.mark.parametrize("kwargs, expected", [
    ((), [[0, 0], [1, 1]]),
    ((("as_tuple", Lit(True)),), ([0, 1], [0, 1]))])
def test_nonzero_falls_back_to_ops_nonzero_and_its_columns_for_as_tuple(kwargs, expected):
    """mint.nonzero has no CPU kernel in MindSpore 2.10 (as_tuple or not); ops.nonzero returns
    the index matrix, whose columns are torch's as_tuple=True result."""
    route = route_for(_call("torch.nonzero", kwargs=kwargs), "mindspore", load_mapping())
    assert _names(route)[0] == "mindspore.mint.nonzero"
    fallback = route.fallbacks[0]
    assert fallback.args == (X,) and fallback.kwargs == ()
    fn = fallback.make(Resolver({"mindspore.ops.nonzero": np.argwhere}))
    found = fn(np.array([[True, False], [False, True]]))
    as_lists = ([list(c) for c in found] if isinstance(found, tuple)
                else [list(r) for r in found])
    assert as_lists == (list(map(list, expected)) if isinstance(expected, tuple) else expected)


def test_index_add_in_place_is_the_twin_with_an_int32_index_written_back(monkeypatch):
    """No InplaceIndexAddExt kernel on CPU; Tensor.index_add refuses an int64 index."""
    import opbench.model.replay.inplace_routes as inplace_routes
    monkeypatch.setattr(inplace_routes, "write_back", lambda receiver, result: result)
    call = _call("torch.Tensor.index_add_", (W, Lit(0), Ref(2), Ref(3)), kind="tensor_method")
    route = route_for(call, "mindspore", load_mapping())
    assert route.api == "mindspore.Tensor.index_add (int32 index) + assign (in place, as torch)"
    assert route.args == (W, Ref(2), Ref(3))
    refused = route_for(_call("torch.Tensor.index_add_", (W, Lit(0), Ref(2), Lit(1.0)),
                              kind="tensor_method"), "mindspore", load_mapping())
    assert isinstance(refused, Unmapped) and "source tensor" in refused.reason


def test_full_without_a_dtype_falls_back_to_ops_full_with_the_dtype_torch_infers():
    """mint.full has no CPU kernel in MindSpore 2.10 and ops.full makes Int64 whatever the
    fill value: the fallback is given the dtype torch would (float -> float32, int -> int64,
    bool -> bool); a dtype the script wrote is passed as it is."""
    mapping = load_mapping()
    size = Seq("tuple", (Lit(2), Lit(3)))
    for value, dtype in ((0.5, "float32"), (7, "int64"), (True, "bool")):
        route = route_for(_call("torch.full", (size, Lit(value))), "mindspore", mapping)
        assert _names(route) == ["mindspore.mint.full", "mindspore.ops.full"]
        assert route.args == (size, Lit(value)) and route.kwargs == ()
        assert route.fallbacks[0].args == (size, Lit(value))
        assert route.fallbacks[0].kwargs == (("dtype", Dtype(dtype)),)
    written = route_for(_call("torch.full", (size, Lit(1)), (("dtype", Dtype("float16")),)),
                        "mindspore", mapping)
    assert written.fallbacks[0].kwargs == (("dtype", Dtype("float16")),)


def test_normalize_falls_back_to_its_norm_written_out():
    """F.normalize(x, dim=-1) is x / max(||x||_2, eps) (mint's LinalgVectorNorm has no CPU
    kernel): the written-out fallback computes torch's values, a zero row stays zero."""
    mapping = load_mapping()
    route = route_for(_call("torch.nn.functional.normalize", (X,), (("dim", Lit(-1)),)),
                      "mindspore", mapping)
    assert route.api == "mindspore.mint.nn.functional.normalize"
    written = route.fallbacks[0]
    functions = {"mindspore.ops.norm": lambda x, p, dim, keepdim: np.linalg.norm(
                     x, ord=p, axis=dim, keepdims=keepdim),
                 "mindspore.ops.clamp": lambda x, min: np.maximum(x, min)}
    x = np.array([[3.0, 4.0], [0.0, 0.0]], np.float32)
    np.testing.assert_allclose(written.make(Resolver(functions))(x),
                               [[0.6, 0.8], [0.0, 0.0]], rtol=1e-6)
    one = route_for(_call("torch.nn.functional.normalize", (X, Lit(1.0), Lit(0))),
                    "mindspore", mapping)
    np.testing.assert_allclose(one.fallbacks[0].make(Resolver(functions))(x),
                               [[1.0, 1.0], [0.0, 0.0]], rtol=1e-6)
    symbolic = route_for(_call("torch.nn.functional.normalize", (X,), (("dim", W),)),
                         "mindspore", mapping)
    assert isinstance(symbolic, Unmapped) and "not numbers" in symbolic.reason


def test_lstm_and_gru_cells_go_to_mindspore_s_cell_functions_with_every_tensor():
    """torch.lstm_cell / gru_cell (nn.LSTMCell / GRUCell) replay as MindSpore's own cell
    functions on the same tensors; a cell without biases passes None for them."""
    mapping = load_mapping()
    state = Seq("tuple", (Ref(1), Ref(2)))
    lstm = route_for(_call("torch.lstm_cell", (X, state, W, B, Ext(4), Ext(5))), "mindspore",
                     mapping)
    assert "_lstm_cell" in lstm.api and lstm.args == (X, state, W, B, Ext(4), Ext(5))
    gru = route_for(_call("torch.gru_cell", (X, Ref(1), W, B)), "mindspore", mapping)
    assert "_gru_cell" in gru.api and gru.args == (X, Ref(1), W, B, Lit(None), Lit(None))
    missing = route_for(_call("torch.gru_cell", (X,)), "mindspore", mapping)
    assert isinstance(missing, Unmapped) and "weights" in missing.reason


def test_isin_is_written_out_as_equal_and_any_over_the_test_elements():
    """MindSpore 2.10 has no isin: each element is compared with every test element."""
    functions = {"mindspore.ops.equal": np.equal,
                 "mindspore.ops.any": lambda x, axis: np.any(x, axis=axis),
                 "mindspore.ops.expand_dims": np.expand_dims,
                 "mindspore.ops.reshape": np.reshape,
                 "mindspore.ops.logical_not": np.logical_not}
    elements, tests = np.array([[1, 5, 3], [2, 2, 9]]), np.array([[5], [2]])
    mapping = load_mapping()
    route = route_for(_call("torch.isin", (X, W)), "mindspore", mapping)
    assert route.args == (X, W)
    np.testing.assert_array_equal(route.make(Resolver(functions))(elements, tests),
                                  np.isin(elements, tests))
    inverted = route_for(_call("torch.isin", (X, W), (("invert", Lit(True)),)), "mindspore",
                         mapping)
    np.testing.assert_array_equal(inverted.make(Resolver(functions))(elements, tests),
                                  np.isin(elements, tests, invert=True))
    one = route_for(_call("torch.isin", (X, Lit(5))), "mindspore", mapping)
    np.testing.assert_array_equal(one.make(Resolver(functions))(elements, 5), elements == 5)

"""MindSpore calls in torch where torch takes the arguments another way
(opbench/model/replay/mindspore_to_torch.py): MindSpore's 'same' and four-sided padding made
explicit (F.pad first where the split is uneven), MaxPool's SAME, `ops` functions the mapping
lists under `mint`, argument-free primitives as their functional twin, ops.assign as copy_
under no_grad, the sparse softmax cross-entropy primitive as F.cross_entropy. Routes are
built with a fake `resolve`, so no framework is imported."""
from __future__ import annotations

import contextlib
import math
import types
from dataclasses import replace

import pytest

from opbench.frameworks.apimap import ApiMapping, MappingEntry
from opbench.model.program import Call, Ext, Lit, Ref, Seq
from opbench.model.replay.mindspore_to_torch import (explicit_padding, functional_twin,
                                                     same_padding)
from opbench.model.replay.routes import Unmapped, route_for

X, W, B = Ref(0), Ext(1), Ext(2)

MAPPING = ApiMapping([
    MappingEntry("torch.mean", "mindspore.mint.mean", "function", "same"),
    MappingEntry("torch.neg", "mindspore.mint.neg", "function", "same"),
    MappingEntry("torch.ones_like", "mindspore.ops.ones_like", "function", "same"),
    MappingEntry("torch.equal", "mindspore.mint.equal", "function", "same"),
    MappingEntry("torch.nn.functional.hardswish", "mindspore.mint.nn.functional.hardswish",
                 "functional", "differs", note="MindSpore lacks torch argument(s): inplace"),
])


def _ms_call(api: str, args: tuple = (X,), kwargs: tuple = (), init: tuple = (),
             kind: str = "function") -> Call:
    return Call(index=5, framework="mindspore", api=api, kind=kind, replay_api=api, args=args,
                kwargs=kwargs, outputs=("tensor", (2, 8), "float32"), duration_ns=1,
                start_ns=0, init=init)


class Recorder:
    """resolve(): each name a function recording its calls."""

    def __init__(self):
        self.calls: list[tuple[str, tuple, dict]] = []

    def __call__(self, name: str):
        if name == "torch.no_grad":
            return self.no_grad

        def fn(*args, **kwargs):
            self.calls.append((name, args, kwargs))
            return (name, args)
        return fn

    @contextlib.contextmanager
    def no_grad(self):
        self.calls.append(("no_grad", (), {}))
        yield


def _tensor(*shape):
    return types.SimpleNamespace(shape=shape)


# -- MindSpore's 'same' ------------------------------------------------------------------------

@pytest.mark.parametrize("size, kernel, stride, dilation, expected", [
    (64, 3, 2, 1, (0, 1)),      # 31 * 2 + 3 - 64 = 1: the odd pixel after
    (65, 3, 2, 1, (1, 1)),
    (32, 3, 1, 1, (1, 1)),
    (32, 5, 2, 1, (1, 2)),
    (8, 1, 2, 1, (0, 0)),
    (16, 3, 1, 2, (2, 2)),      # dilated: an effective kernel of 5
])
def test_same_padding_keeps_ceil_size_over_stride_outputs_odd_pixel_after(
        size, kernel, stride, dilation, expected):
    before, after = same_padding(size, kernel, stride, dilation)
    assert (before, after) == expected
    outputs = (size + before + after - dilation * (kernel - 1) - 1) // stride + 1
    assert outputs == math.ceil(size / stride)


@pytest.mark.parametrize("padding, expected", [
    (Lit(1), (1, 1, 1, 1)), (Lit(0), (0, 0, 0, 0)), (None, (0, 0, 0, 0)),
    (Seq("tuple", (Lit(1), Lit(2))), (1, 1, 2, 2))])
def test_explicit_padding_of_height_and_width_is_top_bottom_left_right(padding, expected):
    assert explicit_padding(padding) == expected


def _conv(pad_mode: str, padding=Lit(0), stride=Lit(2), bias=Lit(None)) -> Call:
    return _ms_call("mindspore.ops.conv2d", (X, W, bias, stride, Lit(pad_mode), padding,
                                             Lit(1), Lit(1)))


def test_a_strided_same_convolution_pads_unevenly_first_then_convolves_unpadded():
    route = route_for(_conv("same"), "torch", MAPPING)
    assert route.args == (X, W) and "'same'" in route.api
    resolve = Recorder()
    route.make(resolve)(_tensor(2, 3, 64, 64), _tensor(16, 3, 3, 3))
    (pad, pad_args, _), (conv, conv_args, _) = resolve.calls
    assert pad == "torch.nn.functional.pad" and pad_args[1] == (0, 1, 0, 1)
    assert conv == "torch.nn.functional.conv2d"
    assert conv_args[3:] == ((2, 2), (0, 0), (1, 1), 1)


def test_an_even_same_split_and_an_explicit_padding_are_torchs_padding():
    resolve = Recorder()
    route = route_for(_conv("same", bias=B), "torch", MAPPING)
    assert route.args == (X, W, B)
    route.make(resolve)(_tensor(2, 3, 65, 65), _tensor(16, 3, 3, 3), "b")
    [(name, args, _)] = resolve.calls
    assert name == "torch.nn.functional.conv2d" and args[2] == "b" and args[4] == (1, 1)
    resolve = Recorder()
    route_for(_conv("pad", Lit(3), stride=Seq("tuple", (Lit(1), Lit(2)))), "torch",
              MAPPING).make(resolve)(_tensor(1, 3, 8, 8), _tensor(4, 3, 7, 7))
    [(_, args, _)] = resolve.calls
    assert args[3] == (1, 2) and args[4] == (3, 3)


def test_valid_pads_nothing_whatever_padding_it_holds():
    resolve = Recorder()
    route_for(_conv("valid", Lit(5)), "torch", MAPPING).make(resolve)(
        _tensor(1, 3, 8, 8), _tensor(4, 3, 3, 3))
    [(_, args, _)] = resolve.calls
    assert args[4] == (0, 0)


def test_an_unknown_pad_mode_is_unmapped_naming_it():
    found = route_for(_conv("reflect"), "torch", MAPPING)
    assert isinstance(found, Unmapped) and "'reflect'" in found.reason


def test_a_same_max_pool_pads_with_minus_infinity_then_pools():
    call = _ms_call("mindspore.ops.MaxPool", init=(("kernel_size", 3), ("strides", 2),
                                                   ("pad_mode", "SAME"),
                                                   ("data_format", "NCHW")), kind="primitive")
    resolve = Recorder()
    route = route_for(call, "torch", MAPPING)
    assert route.args == (X,)
    route.make(resolve)(_tensor(2, 64, 16, 16))
    (pad, pad_args, pad_kwargs), (pool, _, pool_kwargs) = resolve.calls
    assert pad_args[1] == (0, 1, 0, 1) and pad_kwargs == {"value": -math.inf}
    assert pool == "torch.nn.functional.max_pool2d"
    assert pool_kwargs == {"kernel_size": (3, 3), "stride": (2, 2)}


def test_a_valid_max_pool_pools_without_padding_and_nhwc_is_unmapped():
    call = _ms_call("mindspore.ops.MaxPool", init=(("kernel_size", [2, 2]), ("strides", 2),
                                                   ("pad_mode", "VALID")), kind="primitive")
    resolve = Recorder()
    route_for(call, "torch", MAPPING).make(resolve)(_tensor(2, 4, 8, 8))
    [(name, _, kwargs)] = resolve.calls
    assert name == "torch.nn.functional.max_pool2d" and kwargs["kernel_size"] == (2, 2)
    nhwc = replace(call, init=(("data_format", "NHWC"),))
    assert "NHWC" in route_for(nhwc, "torch", MAPPING).reason


# -- ops functions and primitives ----------------------------------------------------------

def test_an_ops_function_the_mapping_lists_under_mint_takes_torchs_keyword_names():
    call = _ms_call("mindspore.ops.mean", kwargs=(("axis", Seq("tuple", (Lit(2), Lit(3)))),
                                                  ("keep_dims", Lit(True))))
    route = route_for(call, "torch", MAPPING)
    assert route.api == "torch.mean"
    assert route.kwargs == (("dim", Seq("tuple", (Lit(2), Lit(3)))), ("keepdim", Lit(True)))


def test_an_ops_function_whose_mint_namesake_differs_is_not_routed_by_name():
    """ops.equal is element-wise; mint.equal (torch.equal) is one bool for the whole
    tensor: ops.equal goes to torch.eq by its own rule, never to its namesake."""
    route = route_for(_ms_call("mindspore.ops.equal", (X, X)), "torch", MAPPING)
    assert route.api == "torch.eq"
    found = route_for(_ms_call("mindspore.ops.not_in_any_mapping", (X, X)), "torch", MAPPING)
    assert isinstance(found, Unmapped) and "not_in_any_mapping" in found.reason


class _Index:
    def __init__(self):
        self.widened = False

    def long(self):
        self.widened = True
        return self


@pytest.mark.parametrize("api, kind, args, expected", [
    ("mindspore.ops.Equal", "primitive", (X, Lit(-100)), "torch.eq"),
    ("mindspore.Tensor.expand_dims", "tensor_method", (X, Lit(-1)), "torch.unsqueeze"),
    ("mindspore.ops.expand_dims", "function", (X, Lit(-1)), "torch.unsqueeze"),
])
def test_mindspores_own_names_for_torchs_functions(api, kind, args, expected):
    """mindcv's cross entropy with label smoothing: P.Equal()(label, -100),
    label.expand_dims(-1): no mapping entry names them from MindSpore's side."""
    route = route_for(_ms_call(api, args, kind=kind), "torch", MAPPING)
    assert route.api == expected and route.args == args
    resolve = Recorder()
    route.make(resolve)(*("t", -1))
    assert resolve.calls == [(expected, ("t", -1), {})]


def test_gather_d_is_torch_gather_with_an_int64_index():
    """P.GatherD()(logits, -1, label): MindSpore's labels are int32; torch.gather takes an
    int64 index only."""
    route = route_for(_ms_call("mindspore.ops.GatherD", (X, Lit(-1), W), kind="primitive"),
                      "torch", MAPPING)
    assert route.args == (X, Lit(-1), W)
    resolve, index = Recorder(), _Index()
    route.make(resolve)("logits", -1, index)
    assert index.widened and resolve.calls == [("torch.gather", ("logits", -1, index), {})]


def test_cast_of_a_number_or_a_tensor_is_torch_as_tensor_with_the_dtype():
    from opbench.model.program import Dtype
    route = route_for(_ms_call("mindspore.ops.cast", (Lit(0), Dtype("int32"))), "torch",
                      MAPPING)
    assert route.api.startswith("torch.as_tensor")
    assert route.args == (Lit(0),) and route.kwargs == (("dtype", Dtype("int32")),)


@pytest.mark.parametrize("primitive, function", [
    ("mindspore.ops.Neg", "mindspore.ops.neg"), ("mindspore.ops.OnesLike",
                                                 "mindspore.ops.ones_like"),
    ("mindspore.ops.GatherD", "mindspore.ops.gather_d"),
    ("mindspore.ops.ReduceMax", "mindspore.ops.reduce_max")])
def test_a_primitives_functional_twin_is_its_name_in_snake_case(primitive, function):
    assert functional_twin(primitive) == function


def test_an_argument_free_primitive_replays_as_its_functional_twin_in_torch():
    neg = _ms_call("mindspore.ops.Neg", kind="primitive")
    assert route_for(neg, "torch", MAPPING).api == "torch.neg"
    ones = _ms_call("mindspore.ops.OnesLike", kind="primitive")
    assert route_for(ones, "torch", MAPPING).api == "torch.ones_like"
    unknown = route_for(_ms_call("mindspore.ops.Erfinv", kind="primitive"), "torch", MAPPING)
    assert isinstance(unknown, Unmapped) and "mindspore.ops.Erfinv" in unknown.reason


def test_an_argument_free_primitive_is_built_before_its_call_in_mindspore():
    built = []

    class Neg:
        def __init__(self, **init):
            built.append(init)

        def __call__(self, x):
            return ("neg", x)

    route = route_for(_ms_call("mindspore.ops.Neg", kind="primitive"), "mindspore", MAPPING)
    fn = route.make(lambda name: Neg)
    assert fn("x") == ("neg", "x") and built == [{}]


def test_a_layer_lowered_to_mints_hardswish_is_torchs():
    call = _ms_call("mindspore.mint.nn.Hardswish")
    call = replace(call, replay_api="mindspore.mint.nn.functional.hardswish", kind="module")
    assert route_for(call, "torch", MAPPING).api == "torch.nn.functional.hardswish"


def test_assign_is_copy_under_no_grad():
    resolve = Recorder()
    route = route_for(_ms_call("mindspore.ops.assign", (W, X)), "torch", MAPPING)
    assert route.args == (W, X)
    copied = []
    variable = types.SimpleNamespace(copy_=lambda value: copied.append(value) or "w")
    assert route.make(resolve)(variable, "v") == "w"
    assert copied == ["v"] and resolve.calls == [("no_grad", (), {})]
    assert isinstance(route_for(_ms_call("mindspore.ops.assign", (W,)), "torch", MAPPING),
                      Unmapped)


@pytest.mark.parametrize("init, args, kwargs", [
    ((("keep_dims", True),), (X, Lit(1)), (("dim", Lit(1)), ("keepdim", Lit(True)))),
    ((("keep_dims", False), ("skip_mode", False)), (X, Seq("tuple", (Lit(0), Lit(2)))),
     (("dim", Seq("tuple", (Lit(0), Lit(2)))), ("keepdim", Lit(False)))),
    ((("keep_dims", False),), (X,), ()),
    ((("keep_dims", True),), (X, Seq("tuple", ())),
     (("dim", Seq("tuple", ())), ("keepdim", Lit(True))))])
def test_a_reduction_primitive_is_torchs_reduction_over_dim_with_keepdim(init, args, kwargs):
    """ReduceMax(keep_dims)(x, axis) in mindcv's cross entropy: "no torch rule" before."""
    call = _ms_call("mindspore.ops.ReduceMax", args, init=init, kind="primitive")
    route = route_for(call, "torch", MAPPING)
    assert route.api == "torch.amax" and route.args == (X,) and route.kwargs == kwargs
    assert route.make(lambda name: name) == "torch.amax"


def test_a_reduction_over_a_computed_axis_or_skipping_is_unmapped():
    computed = _ms_call("mindspore.ops.ReduceSum", (X, Ref(3)), kind="primitive")
    assert "run time" in route_for(computed, "torch", MAPPING).reason
    skipping = _ms_call("mindspore.ops.ReduceSum", (X, Lit(0)),
                        init=(("skip_mode", True),), kind="primitive")
    assert isinstance(route_for(skipping, "torch", MAPPING), Unmapped)


def test_a_tensors_assign_value_is_copy_under_no_grad_too():
    route = route_for(_ms_call("mindspore.Tensor.assign_value", (W, X)), "torch", MAPPING)
    assert route.api == "torch.Tensor.copy_" and route.args == (W, X)


# -- the primitives mindspore.nn.GRU's CPU loop calls (traced through) ----------------------

class _Operand:
    """Stands for a 2-D tensor: its .mT says it was transposed."""

    def __init__(self, name: str):
        self.name = name

    @property
    def mT(self):  # noqa: N802 (torch's name)
        return _Operand(self.name + ".T")


def test_matmul_primitive_is_torch_matmul_on_the_operands_it_transposes():
    call = _ms_call("mindspore.ops.MatMul", (X, W), init=(("transpose_a", False),
                                                         ("transpose_b", True)),
                    kind="primitive")
    route = route_for(call, "torch", MAPPING)
    assert route.args == (X, W)
    fn = route.make(lambda api: (lambda a, b: (api, a.name, b.name)))
    assert fn(_Operand("x"), _Operand("w")) == ("torch.matmul", "x", "w.T")
    other = replace(call, init=(("transpose_a", True), ("transpose_b", False), ("dtype", 1)))
    assert isinstance(route_for(other, "torch", MAPPING), Unmapped)


@pytest.mark.parametrize("api, init, args, torch_api, route_args, kwargs", [
    ("mindspore.ops.Split", (("axis", 1), ("output_num", 3)), (X,), "torch.chunk",
     (X, Lit(3)), (("dim", Lit(1)),)),
    ("mindspore.ops.Stack", (("axis", 0),), (Seq("list", (X, W)),), "torch.stack",
     (Seq("list", (X, W)),), (("dim", Lit(0)),)),
    ("mindspore.ops.Concat", (("axis", 2),), (Seq("tuple", (X, W)),), "torch.cat",
     (Seq("tuple", (X, W)),), (("dim", Lit(2)),)),
    ("mindspore.ops.Squeeze", (("axis", 0),), (X,), "torch.squeeze", (X, Lit(0)), ()),
    ("mindspore.ops.Squeeze", (("axis", (0, 2)),), (X,), "torch.squeeze",
     (X, Seq("tuple", (Lit(0), Lit(2)))), ()),
    ("mindspore.ops.Squeeze", (("axis", ()),), (X,), "torch.squeeze", (X,), ()),
])
def test_the_grus_shape_primitives_are_torchs_functions_on_their_axis(api, init, args,
                                                                       torch_api, route_args,
                                                                       kwargs):
    route = route_for(_ms_call(api, args, init=init, kind="primitive"), "torch", MAPPING)
    assert route.make(lambda name: name) == torch_api
    assert (route.args, route.kwargs) == (route_args, kwargs)


def test_a_transpose_is_torch_permute_and_zeros_takes_its_dtype_by_keyword():
    perm = Seq("tuple", (Lit(1), Lit(0), Lit(2)))
    for call in (_ms_call("mindspore.ops.Transpose", (X, perm), kind="primitive"),
                 _ms_call("mindspore.ops.transpose", (X, perm))):
        route = route_for(call, "torch", MAPPING)
        assert route.make(lambda name: name) == "torch.permute" and route.args == (X, perm)
    shape = Seq("tuple", (Lit(1), Lit(4), Lit(16)))
    route = route_for(_ms_call("mindspore.ops.zeros", (shape, Ext(7))), "torch", MAPPING)
    assert route.args == (shape,) and route.kwargs == (("dtype", Ext(7)),)


# -- loss primitives ---------------------------------------------------------------------------

SPARSE_CE = "mindspore.ops.SparseSoftmaxCrossEntropyWithLogits"


@pytest.mark.parametrize("init", [(), (("is_grad", False),)])
def test_sparse_softmax_cross_entropy_is_torchs_mean_cross_entropy_on_int64_labels(init):
    """nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")'s primitive: the loss
    (is_grad=False, recorded or left to its default) is F.cross_entropy's mean on the labels
    widened to int64 (MindSpore's are int32)."""
    route = route_for(_ms_call(SPARSE_CE, (X, W), init=init, kind="primitive"), "torch",
                      MAPPING)
    assert route.args == (X, W) and route.kwargs == ()
    resolve, labels = Recorder(), _Index()
    route.make(resolve)("logits", labels)
    assert labels.widened
    assert resolve.calls == [("torch.nn.functional.cross_entropy", ("logits", labels),
                              {"reduction": "mean"})]


def test_sparse_softmax_cross_entropy_by_keyword_reads_its_parameter_names():
    route = route_for(_ms_call(SPARSE_CE, (), kwargs=(("logits", X), ("labels", W)),
                               kind="primitive"), "torch", MAPPING)
    assert route.args == (X, W)


@pytest.mark.parametrize("init, why", [
    ((("is_grad", True),), "returns the loss's gradient with respect to the logits"),
    ((("is_grad", False), ("reduction", "sum")), "with is_grad, reduction: no torch"),
])
def test_sparse_softmax_cross_entropy_in_its_gradient_mode_is_refused_with_the_reason(init,
                                                                                      why):
    route = route_for(_ms_call(SPARSE_CE, (X, W), init=init, kind="primitive"), "torch",
                      MAPPING)
    assert isinstance(route, Unmapped) and why in route.reason

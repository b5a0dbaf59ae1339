"""nn.LSTM and nn.EmbeddingBag in the replay (opbench/model/replay/layer_routes.py): torch's
own route returns the layer's form and makes drawn offsets usable; MindSpore's composes what a
port writes. Numpy stands in for MindSpore's ops and a fake module for torch."""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from opbench.frameworks.apimap import load_mapping
from opbench.model.program import Call, Ext, Lit, Ref, Seq
from opbench.model.replay.layer_routes import usable_offsets
from opbench.model.replay.routes import Route, Unmapped, route_for

X, W, OFFSETS = Ref(0), Ext(1), Ext(2)
BAG = "torch.nn.functional.embedding_bag"


def _call(api: str, args: tuple, kwargs: tuple = ()) -> Call:
    return Call(index=3, framework="torch", api=api, kind="function", replay_api=api,
                args=args, kwargs=kwargs, outputs=("tensor", (5, 4), "float32"),
                duration_ns=1, start_ns=0)


def _segment(reduce, initial):
    def segment(x, segments, n):
        out = np.full((n,) + x.shape[1:], initial, dtype=x.dtype)
        reduce.at(out, segments, x)
        return out
    return segment


NUMPY_OPS = {
    "gather": lambda w, ids, axis: np.take(w, ids, axis=axis),
    "searchsorted": lambda a, v, right: np.searchsorted(a, v, side="right" if right else "left"),
    "unsorted_segment_sum": _segment(np.add, 0.0),
    "unsorted_segment_max": _segment(np.maximum, np.finfo(np.float32).min),
    "arange": lambda n, dtype: np.arange(n, dtype=dtype),
    "ones": lambda shape, dtype: np.ones(shape, dtype=dtype),
    "maximum": np.maximum, "where": np.where, "zeros_like": np.zeros_like,
    "sum": lambda x, axis: x.sum(axis), "mean": lambda x, axis: x.mean(axis),
    "amax": lambda x, axis: x.max(axis)}


def _resolve(name: str):
    return NUMPY_OPS[name.removeprefix("mindspore.ops.")]


def _bags(ids, weight, offsets, mode):
    """torch's embedding_bag by its definition: bag i is ids[offsets[i]:offsets[i+1]]."""
    ends = list(offsets[1:]) + [len(ids)]
    out = []
    for start, end in zip(offsets, ends):
        rows = weight[ids[start:end]]
        out.append(np.zeros(weight.shape[1]) if len(rows) == 0 else
                   {"sum": rows.sum(0), "mean": rows.mean(0), "max": rows.max(0)}[mode])
    return np.array(out)


def test_drawn_offsets_are_sorted_start_at_zero_and_stay_within_the_rows():
    np.testing.assert_array_equal(usable_offsets(np.array([7, 3, 40, 12, 99]), 60),
                                  [0, 7, 12, 40, 60])
    np.testing.assert_array_equal(usable_offsets(np.array([0, 10, 25]), 60), [0, 10, 25])
    assert usable_offsets(np.array([], dtype=np.int64), 5).size == 0


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_in_mindspore_reduces_each_bag_as_torch_does(mode):
    """Offsets as drawn (unsorted, not from 0) are made usable first, in MindSpore as in torch:
    here [0, 0, 4, 9]: an empty bag first (0 in torch for every mode)."""
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((20, 4)).astype(np.float32)
    ids = rng.integers(0, 20, size=12)
    drawn = np.array([4, 0, 9, 0])
    route = route_for(_call(BAG, (X, W, OFFSETS), (("mode", Lit(mode)),)), "mindspore",
                      load_mapping())
    assert isinstance(route, Route) and route.args == (X, W, OFFSETS, Lit(None))
    assert route.api.startswith("mindspore.ops.gather + unsorted_segment_sum/max")
    out = route.make(_resolve)(ids, weight, drawn, None)
    expected = _bags(ids, weight, [0, 0, 4, 9], mode)
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)


def test_embedding_bag_of_a_2d_input_reduces_the_second_axis_with_per_sample_weights():
    rng = np.random.default_rng(1)
    weight = rng.standard_normal((20, 4)).astype(np.float32)
    ids = rng.integers(0, 20, size=(3, 5))
    scale = rng.random((3, 5)).astype(np.float32)
    route = route_for(_call(BAG, (X, W, Lit(None)), (("mode", Lit("sum")),
                                                     ("per_sample_weights", Ext(4)))),
                      "mindspore", load_mapping())
    assert route.args == (X, W, Lit(None), Ext(4))
    out = route.make(_resolve)(ids, weight, None, scale)
    np.testing.assert_allclose(out, (weight[ids] * scale[..., None]).sum(1), rtol=1e-5)


def test_embedding_bag_settings_a_replay_does_not_rebuild_are_refused_with_a_reason():
    mapping = load_mapping()
    for kwargs, word in (((("mode", Lit("median")),), "median"),
                         ((("max_norm", Lit(1.0)),), "max_norm"),
                         ((("sparse", Lit(True)),), "sparse")):
        for target in ("torch", "mindspore"):
            found = route_for(_call(BAG, (X, W, OFFSETS), kwargs), target, mapping)
            assert isinstance(found, Unmapped) and word in found.reason
    last = route_for(_call(BAG, (X, W, OFFSETS), (("include_last_offset", Lit(True)),)),
                     "mindspore", mapping)
    assert isinstance(last, Unmapped) and "include_last_offset" in last.reason


class _FakeTorchTensor:
    def __init__(self, shape):
        self.shape = tuple(shape)

    def new_zeros(self, shape):
        return ("zeros", tuple(shape))


@pytest.fixture
def fake_torch(monkeypatch):
    fake = types.ModuleType("torch")
    fake.given = []

    def lstm(*args):
        fake.given.append(args)
        return "OUT", "H", "C"
    fake.lstm = lstm
    monkeypatch.setitem(sys.modules, "torch", fake)
    return fake


LSTM_ARGS = (X, Lit(None), Seq("list", (Ext(1), Ext(2), Ext(3), Ext(4))), Lit(True), Lit(1),
             Lit(0.0), Lit(False), Lit(False), Lit(True))


def test_torch_lstm_replays_in_the_layers_form_from_zero_states(fake_torch):
    """torch.lstm returns (output, h_n, c_n), the layer (output, (h_n, c_n)): the program's
    paths (recorded on the layer's output) read the route's output the same way."""
    route = route_for(_call("torch.lstm", LSTM_ARGS), "torch", load_mapping())
    assert isinstance(route, Route) and route.api == "torch.lstm (as nn.LSTM)"
    assert route.args == LSTM_ARGS[:3]
    x = _FakeTorchTensor((4, 12, 32))                        # batch first: batch 4
    params = [_FakeTorchTensor((64, 32)), _FakeTorchTensor((64, 16))]
    assert route.make(None)(x, None, params) == ("OUT", ("H", "C"))
    (given,) = fake_torch.given
    assert given[1] == (("zeros", (1, 4, 16)),) * 2         # layers x directions, batch, hidden
    assert given[3:] == (True, 1, 0.0, False, False, True)


def test_lstm_in_mindspore_takes_the_same_tensors_and_needs_literal_settings():
    mapping = load_mapping()
    route = route_for(_call("torch.lstm", LSTM_ARGS), "mindspore", mapping)
    assert isinstance(route, Route) and route.args == LSTM_ARGS[:3]
    assert "ops.LSTM" in route.api
    unknown = LSTM_ARGS[:4] + (Ext(9),) + LSTM_ARGS[5:]
    for target in ("torch", "mindspore"):
        found = route_for(_call("torch.lstm", unknown), target, mapping)
        assert isinstance(found, Unmapped) and "settings" in found.reason


# -- nn.GRU and nn.MultiheadAttention, traced through (capture/lowering.py traced_through) ----

MHA = "torch.nn.functional.multi_head_attention_forward"


def test_multi_head_attention_goes_to_mindspore_by_name_without_need_weights():
    """The mapping's positional rule refused the layer's keywords ("takes its arguments
    differently ... and the call passes keywords"): the route passes each by its name."""
    call = _call(MHA, (X, X, X, Lit(32), Lit(4), Ext(1), Ext(2), Lit(None), Lit(None),
                       Lit(False), Lit(0.0), Ext(3), Ext(4)),
                 (("training", Lit(False)), ("key_padding_mask", Ext(5)),
                  ("need_weights", Lit(False)), ("attn_mask", Lit(None))))
    route = route_for(call, "mindspore", load_mapping())
    assert isinstance(route, Route) and "multi_head_attention_forward" in route.api
    assert route.args == (X, X, X, Lit(32), Lit(4), Ext(1), Ext(2), Lit(None), Lit(None),
                          Lit(False), Lit(0.0), Ext(3), Ext(4), Lit(False), Ext(5), Lit(None))
    refused = route_for(_call(MHA, call.args, (("need_weights", Ext(6)),)), "mindspore",
                        load_mapping())
    assert isinstance(refused, Unmapped) and "need_weights" in refused.reason


def test_gru_goes_to_mindspore_as_its_layer_and_says_why_not_without_numbers():
    settings = (Lit(True), Lit(2), Lit(0.0), Lit(False), Lit(False), Lit(True))
    route = route_for(_call("torch.gru", (X, Ext(1), Seq("list", (Ext(2), Ext(3))), *settings)),
                      "mindspore", load_mapping())
    assert isinstance(route, Route) and "GRU" in route.api
    assert route.args == (X, Ext(1), Seq("list", (Ext(2), Ext(3))))
    unknown = route_for(_call("torch.gru", (X, Ext(1), Seq("list", (Ext(2),)), Ext(4),
                                            *settings[1:])), "mindspore", load_mapping())
    assert isinstance(unknown, Unmapped) and "torch.gru" in unknown.reason

"""The replay rules added for the conformance corpus' coverage, run in real MindSpore against
torch (in process, through the replay adapter's own resolve): attention with dropout
(attention_dropout.py), masked_fill_ and scatter_add_ in place (inplace_routes.py), nn.LSTM
and nn.EmbeddingBag (layer_routes.py, as capture/sequence_lowering.py lowers them)."""
from __future__ import annotations

import numpy as np
import pytest

from opbench.frameworks.apimap import load_mapping
from opbench.model.program import Call, Ext, Lit, Ref, Seq

ms = pytest.importorskip("mindspore")
torch = pytest.importorskip("torch")

from opbench.frameworks import get_adapter  # noqa: E402
from opbench.model.replay.routes import Route, route_for  # noqa: E402


@pytest.fixture(scope="module")
def resolve():
    adapter = get_adapter("mindspore")
    adapter.setup("cpu", 1)
    return adapter.resolve


def _call(api: str, args: tuple, kwargs: tuple = (), kind: str = "tensor_method") -> Call:
    return Call(index=1, framework="torch", api=api, kind=kind, replay_api=api, args=args,
                kwargs=kwargs, outputs=("tensor", (1,), "float32"), duration_ns=1, start_ns=0)


def test_attention_with_dropout_runs_in_mindspore_and_drops_with_torchs_p(resolve):
    """With p=0.5 about half of the attention weights are dropped and the kept ones scaled by
    2 (what torch does): the output is random, so its statistics are checked, not values;
    with values all ones, each output row is the sum of kept weights times 2 (mean 1)."""
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 4, 64, 16)).astype(np.float32)
    k = rng.standard_normal((2, 4, 64, 16)).astype(np.float32)
    v = np.ones((2, 4, 64, 16), np.float32)
    call = _call("torch.nn.functional.scaled_dot_product_attention", (Ref(0), Ext(1), Ext(2)),
                 (("dropout_p", Lit(0.5)),), kind="function")
    route = route_for(call, "mindspore", load_mapping())
    assert isinstance(route, Route) and "dropout" in route.api
    fn = route.make(resolve)
    out = fn(ms.Tensor(q), ms.Tensor(k), ms.Tensor(v)).asnumpy()
    assert out.shape == (2, 4, 64, 16)
    assert abs(out.mean() - 1.0) < 0.1 and out.std() > 0.05       # dropped and rescaled
    again = fn(ms.Tensor(q), ms.Tensor(k), ms.Tensor(v)).asnumpy()
    assert not np.array_equal(out, again)                           # random: a new mask
    expected = torch.nn.functional.scaled_dot_product_attention(
        torch.tensor(q), torch.tensor(k), torch.tensor(v), dropout_p=0.5)
    assert abs(float(expected.mean()) - out.mean()) < 0.1           # torch's, alike


def test_masked_fill_in_place_writes_the_receiver_as_torch_does(resolve):
    rng = np.random.default_rng(1)
    values = rng.standard_normal((64, 128)).astype(np.float32)
    call = _call("torch.Tensor.masked_fill_", (Ref(0), Ext(1), Lit(0.0)))
    fn = route_for(call, "mindspore", load_mapping()).make(resolve)
    x = ms.Tensor(values.copy())
    mask = ms.ops.abs(x) < 0.1
    assert fn(x, mask, 0.0) is x
    expected = torch.tensor(values)
    expected.masked_fill_(expected.abs() < 0.1, 0.0)
    np.testing.assert_array_equal(x.asnumpy(), expected.numpy())


def test_scatter_add_in_place_writes_the_receiver_as_torch_does(resolve):
    rng = np.random.default_rng(2)
    src = rng.standard_normal((64, 128)).astype(np.float32)
    index = np.broadcast_to(rng.integers(0, 8, size=(64, 1)), (64, 128)).copy()
    call = _call("torch.Tensor.scatter_add_", (Ref(0), Lit(0), Ext(1), Ext(2)))
    fn = route_for(call, "mindspore", load_mapping()).make(resolve)
    buckets = ms.Tensor(np.zeros((8, 128), np.float32))
    assert fn(buckets, ms.Tensor(index), ms.Tensor(src)) is buckets
    expected = torch.zeros(8, 128).scatter_add_(0, torch.tensor(index), torch.tensor(src))
    np.testing.assert_allclose(buckets.asnumpy(), expected.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("layers, bidirectional, batch_first", [(1, True, True),
                                                                 (2, False, False)])
def test_lstm_in_mindspore_on_torchs_weights_computes_torchs_lstm(resolve, layers,
                                                                  bidirectional, batch_first):
    """MindSpore's CPU LSTM kernel (what nn.LSTM runs) per layer and direction, on the torch
    layer's flat weights: the same gate order, so the same output and states."""
    torch.manual_seed(0)
    layer = torch.nn.LSTM(32, 16, num_layers=layers, batch_first=batch_first,
                          bidirectional=bidirectional)
    x = torch.randn((4, 12, 32) if batch_first else (12, 4, 32))
    with torch.no_grad():
        expected, (h, c) = layer(x)
    params = layer._flat_weights
    call = _call("torch.lstm", (Ref(0), Lit(None), Seq("list", tuple(Ext(i + 1) for i in
                                                                     range(len(params)))),
                                Lit(True), Lit(layers), Lit(0.0), Lit(False),
                                Lit(bidirectional), Lit(batch_first)), kind="function")
    mapping = load_mapping()
    own, (own_h, own_c) = route_for(call, "torch", mapping).make(resolve)(x, None, params)
    for got, want in ((own, expected), (own_h, h), (own_c, c)):     # the kernel the layer ran
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    out, (ms_h, ms_c) = route_for(call, "mindspore", mapping).make(resolve)(
        ms.Tensor(x.numpy()), None, [ms.Tensor(p.detach().numpy()) for p in params])
    for got, want in ((out, expected), (ms_h, h), (ms_c, c)):
        np.testing.assert_allclose(got.asnumpy(), want.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("layers, bidirectional, batch_first", [(1, True, True),
                                                                 (2, False, False)])
def test_gru_in_mindspore_on_torchs_weights_computes_torchs_gru(resolve, layers, bidirectional,
                                                                batch_first):
    """torch.gru (nn.GRU's call, traced through) in MindSpore as nn.GRU runs on CPU, per layer
    and direction, on the torch layer's flat weights and its initial state: the same gates
    (r, z, n), so the same output and state."""
    torch.manual_seed(0)
    layer = torch.nn.GRU(32, 16, num_layers=layers, batch_first=batch_first,
                         bidirectional=bidirectional)
    x = torch.randn((4, 12, 32) if batch_first else (12, 4, 32))
    h0 = torch.randn(layers * (2 if bidirectional else 1), 4, 16)
    with torch.no_grad():
        expected, h = layer(x, h0)
    params = layer._flat_weights
    call = _call("torch.gru", (Ref(0), Ext(0), Seq("list", tuple(Ext(i + 1) for i in
                                                                 range(len(params)))),
                               Lit(True), Lit(layers), Lit(0.0), Lit(False),
                               Lit(bidirectional), Lit(batch_first)), kind="function")
    route = route_for(call, "mindspore", load_mapping())
    assert isinstance(route, Route), route
    out, ms_h = route.make(resolve)(ms.Tensor(x.numpy()), ms.Tensor(h0.numpy()),
                                    [ms.Tensor(p.detach().numpy()) for p in params])
    for got, want in ((out, expected), (ms_h, h)):
        np.testing.assert_allclose(got.asnumpy(), want.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("need_weights", [True, False])
def test_multi_head_attention_in_mindspore_computes_torchs_with_its_padding_mask(resolve,
                                                                                need_weights):
    """F.multi_head_attention_forward (nn.MultiheadAttention's call, traced through) with a
    key padding mask and keywords as the layer passes them, in MindSpore's functional."""
    torch.manual_seed(0)
    layer = torch.nn.MultiheadAttention(32, 4).eval()
    x = torch.randn(6, 3, 32)                         # (length, batch, embed): not batch_first
    mask = torch.zeros(3, 6, dtype=torch.bool)
    mask[:, -2:] = True
    with torch.no_grad():
        expected, weights = layer(x, x, x, key_padding_mask=mask, need_weights=need_weights)
    tensors = [x, x, x, layer.in_proj_weight, layer.in_proj_bias, layer.out_proj.weight,
               layer.out_proj.bias, mask]
    call = _call("torch.nn.functional.multi_head_attention_forward",
                 (Ref(0), Ref(0), Ref(0), Lit(32), Lit(4), Ext(1), Ext(2), Lit(None), Lit(None),
                  Lit(False), Lit(0.0), Ext(3), Ext(4)),
                 (("training", Lit(False)), ("key_padding_mask", Ext(5)),
                  ("need_weights", Lit(need_weights)), ("attn_mask", Lit(None)),
                  ("average_attn_weights", Lit(True)), ("is_causal", Lit(False))),
                 kind="function")
    route = route_for(call, "mindspore", load_mapping())
    assert isinstance(route, Route), route
    values = dict(zip((Ref(0), Ext(1), Ext(2), Ext(3), Ext(4), Ext(5)),
                      (tensors[0], *tensors[3:])))
    args = [ms.Tensor(values[a].detach().numpy()) if a in values else a.value
            for a in route.args]
    out, ms_weights = route.make(resolve)(*args)
    np.testing.assert_allclose(out.asnumpy(), expected.numpy(), rtol=1e-4, atol=1e-5)
    if need_weights:
        np.testing.assert_allclose(ms_weights.asnumpy(), weights.numpy(), rtol=1e-4, atol=1e-5)
    else:
        assert ms_weights is None and weights is None


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_in_mindspore_computes_torchs_bags_from_drawn_offsets(resolve, mode):
    """Offsets drawn from their range (unsorted, not from 0: torch refuses them as they are)
    are made usable alike in both frameworks; MindSpore's gather and per-bag reduction then
    compute torch's embedding_bag, its empty bag (0) included."""
    torch.manual_seed(1)
    weight, ids = torch.randn(500, 32), torch.randint(0, 500, (60,))
    drawn = torch.tensor([31, 0, 44, 10, 10])
    call = _call("torch.nn.functional.embedding_bag", (Ref(0), Ext(1), Ext(2)),
                 (("mode", Lit(mode)),), kind="function")
    mapping = load_mapping()
    own = route_for(call, "torch", mapping).make(resolve)(ids, weight, drawn, None)
    expected = torch.nn.functional.embedding_bag(ids, weight, torch.tensor([0, 10, 10, 31, 44]),
                                                 mode=mode)
    assert torch.equal(own, expected)
    out = route_for(call, "mindspore", mapping).make(resolve)(
        ms.Tensor(ids.numpy()), ms.Tensor(weight.numpy()), ms.Tensor(drawn.numpy()), None)
    np.testing.assert_allclose(out.asnumpy(), expected.numpy(), rtol=1e-5, atol=1e-6)


def test_clamp_in_place_writes_the_receiver_as_torch_does(resolve):
    values = np.random.default_rng(3).standard_normal((64, 128)).astype(np.float32) * 3
    call = _call("torch.Tensor.clamp_", (Ref(0),), (("max", Lit(2.5)),))
    fn = route_for(call, "mindspore", load_mapping()).make(resolve)
    x = ms.Tensor(values.copy())
    assert fn(x, None, 2.5) is x
    np.testing.assert_array_equal(x.asnumpy(), torch.tensor(values).clamp_(max=2.5).numpy())


@pytest.mark.parametrize("kind,biases", [("lstm", True), ("gru", True), ("gru", False)])
def test_rnn_cells_in_mindspore_on_torchs_weights_compute_torchs_cells(resolve, kind, biases):
    """torch.lstm_cell / gru_cell (nn.LSTMCell / GRUCell) in MindSpore through
    rnn_cells._lstm_cell / _gru_cell: the same gate order, the same values."""
    cell = (torch.nn.LSTMCell if kind == "lstm" else torch.nn.GRUCell)(6, 5, bias=biases)
    x, h, c = torch.randn(3, 6), torch.randn(3, 5), torch.randn(3, 5)
    weights = [cell.weight_ih, cell.weight_hh] + ([cell.bias_ih, cell.bias_hh] if biases
                                                  else [])
    state = Seq("tuple", (Ref(1), Ref(2))) if kind == "lstm" else Ref(1)
    call = _call(f"torch.{kind}_cell", (Ref(0), state, *(Ext(i + 3) for i in
                                                          range(len(weights)))),
                 kind="function")
    route = route_for(call, "mindspore", load_mapping())
    assert isinstance(route, Route)
    ms_of = lambda t: ms.Tensor(t.detach().numpy())
    hx = (ms_of(h), ms_of(c)) if kind == "lstm" else ms_of(h)
    biases_args = [ms_of(w) for w in weights[2:]] or [None, None]
    out = route.make(resolve)(ms_of(x), hx, ms_of(weights[0]), ms_of(weights[1]),
                              *biases_args)
    expected = cell(x, (h, c)) if kind == "lstm" else (cell(x, h),)
    got = out if kind == "lstm" else (out,)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g.asnumpy(), e.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_full_and_normalize_fallbacks_run_in_mindspore_as_torch(resolve):
    """torch.full's fallback (ops.full with torch's dtype) and F.normalize written out run on
    MindSpore's CPU and give torch's values and dtypes."""
    mapping = load_mapping()
    full = route_for(_call("torch.full", (Seq("tuple", (Lit(2), Lit(3))), Lit(0.25)),
                           kind="function"), "mindspore", mapping)
    from opbench.model.program import Dtype
    assert full.fallbacks[0].kwargs == (("dtype", Dtype("float32")),)
    made = full.fallbacks[0].make(resolve)((2, 3), 0.25, dtype=ms.float32)
    np.testing.assert_array_equal(made.asnumpy(), torch.full((2, 3), 0.25).numpy())
    x = torch.randn(4, 7)
    norm = route_for(_call("torch.nn.functional.normalize", (Ref(0),),
                           (("dim", Lit(-1)),), kind="function"), "mindspore", mapping)
    got = norm.fallbacks[0].make(resolve)(ms.Tensor(x.numpy()))
    np.testing.assert_allclose(got.asnumpy(), torch.nn.functional.normalize(x, dim=-1).numpy(),
                               rtol=1e-5, atol=1e-6)


def test_isin_written_out_runs_in_mindspore_as_torch(resolve):
    """torch.isin (transformers' stop-token check) as ops.equal + ops.any in MindSpore."""
    elements, tests = torch.tensor([[1, 5, 3], [2, 2, 9]]), torch.tensor([5, 2])
    route = route_for(_call("torch.isin", (Ref(0), Ext(1)), kind="function"), "mindspore",
                      load_mapping())
    got = route.make(resolve)(ms.Tensor(elements.numpy()), ms.Tensor(tests.numpy()))
    np.testing.assert_array_equal(got.asnumpy(), torch.isin(elements, tests).numpy())

"""torch's masked_fill_ and scatter_add_ in MindSpore (opbench/model/replay/inplace_routes.py):
the out-of-place function with a CPU kernel, written back into the receiver. Numpy stands in
for MindSpore; write_back is replaced by one that records what it writes."""
from __future__ import annotations

import numpy as np
import pytest

from opbench.frameworks.apimap import load_mapping
from opbench.model.program import Call, Ext, Lit, Ref
from opbench.model.replay import inplace_routes
from opbench.model.replay.routes import Route, Unmapped, route_for

X = Ref(0)


def _call(api: str, args: tuple, kwargs: tuple = ()) -> Call:
    return Call(index=5, framework="torch", api=api, kind="tensor_method", replay_api=api,
                args=args, kwargs=kwargs, outputs=("tensor", (4, 6), "float32"),
                duration_ns=1, start_ns=0)


@pytest.fixture
def written(monkeypatch):
    """What the routes write back: (receiver, result) pairs; the receiver gets the result's
    values, as assign_value does."""
    pairs: list = []

    def write_back(receiver, result):
        pairs.append((receiver, result))
        receiver[...] = result
        return receiver
    monkeypatch.setattr(inplace_routes, "write_back", write_back)
    return pairs


def _resolve(functions: dict):
    asked: list[str] = []

    def resolve(name: str):
        asked.append(name)
        return functions[name]
    resolve.asked = asked
    return resolve


def _np_masked_fill(x, mask, value):
    return np.where(mask, value, x)


def _np_scatter_elements_add(x, index, src, axis, reduction):
    assert reduction == "add"
    out = x.copy()
    np.add.at(out, tuple(index if d == axis else np.indices(index.shape)[d]
                         for d in range(x.ndim)), src)
    return out


def test_masked_fill_in_place_is_ops_masked_fill_written_back(written):
    route = route_for(_call("torch.Tensor.masked_fill_", (X, Ext(1), Lit(0.0))), "mindspore",
                      load_mapping())
    assert isinstance(route, Route) and route.fallbacks == ()
    assert route.api == "mindspore.ops.masked_fill + assign (in place, as torch)"
    assert route.args == (X, Ext(1), Lit(0.0))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 6))
    mask = np.abs(x) < 0.5
    expected = np.where(mask, 0.0, x)
    resolve = _resolve({"mindspore.ops.masked_fill": _np_masked_fill})
    out = route.make(resolve)(x, mask, 0.0)
    assert out is x and written[0][0] is x                 # the receiver, written
    np.testing.assert_array_equal(x, expected)
    assert resolve.asked == ["mindspore.ops.masked_fill"]  # never the in-place kernel


def test_masked_fill_in_place_by_keyword_and_without_a_value():
    route = route_for(_call("torch.Tensor.masked_fill_", (X,),
                            (("mask", Ext(1)), ("value", Lit(-1.0)))), "mindspore",
                      load_mapping())
    assert route.args == (X, Ext(1), Lit(-1.0))
    missing = route_for(_call("torch.Tensor.masked_fill_", (X, Ext(1))), "mindspore",
                        load_mapping())
    assert isinstance(missing, Unmapped) and "value" in missing.reason


def test_scatter_add_in_place_is_tensor_scatter_elements_add_written_back(written):
    route = route_for(_call("torch.Tensor.scatter_add_", (X, Lit(0), Ext(1), Ext(2))),
                      "mindspore", load_mapping())
    assert isinstance(route, Route) and route.args == (X, Ext(1), Ext(2))
    assert route.api.startswith("mindspore.ops.tensor_scatter_elements(reduction='add')")
    rng = np.random.default_rng(1)
    buckets = np.zeros((3, 6))
    index = rng.integers(0, 3, size=(8, 6))
    src = rng.standard_normal((8, 6))
    expected = np.zeros((3, 6))
    for i in range(8):
        for j in range(6):
            expected[index[i, j], j] += src[i, j]
    resolve = _resolve({"mindspore.ops.tensor_scatter_elements": _np_scatter_elements_add})
    assert route.make(resolve)(buckets, index, src) is buckets
    np.testing.assert_allclose(buckets, expected)


def test_scatter_add_in_place_cuts_a_larger_src_to_the_index_shape(written):
    """torch reads src only where index has elements; tensor_scatter_elements takes updates
    of index's shape."""
    route = route_for(_call("torch.Tensor.scatter_add_", (X, Lit(1), Ext(1), Ext(2))),
                      "mindspore", load_mapping())
    x = np.zeros((2, 4))
    index = np.array([[0, 0], [3, 1]])
    src = np.arange(12.0).reshape(3, 4)
    route.make(_resolve({"mindspore.ops.tensor_scatter_elements":
                         _np_scatter_elements_add}))(x, index, src)
    np.testing.assert_array_equal(x, [[0 + 1, 0, 0, 0], [0, 5, 0, 4]])


def test_scatter_add_in_place_without_a_literal_dim_or_with_a_number_src_is_unmapped():
    for args in ((X, Ext(3), Ext(1), Ext(2)), (X, Lit(0), Ext(1), Lit(1.0))):
        route = route_for(_call("torch.Tensor.scatter_add_", args), "mindspore",
                          load_mapping())
        assert isinstance(route, Unmapped) and "scatter_add_" in route.reason


def test_clamp_in_place_is_ops_clamp_written_back_with_either_bound(written):
    """One run of masking_indexing_inplace.py of two left clamp_ uncovered: its twin, tried
    after the missing InplaceClampScalar kernel, failed with that kernel's error."""
    route = route_for(_call("torch.Tensor.clamp_", (X,), (("max", Lit(2.5)),)), "mindspore",
                      load_mapping())
    assert route.api == "mindspore.ops.clamp + assign (in place, as torch)"
    assert route.args == (X, Lit(None), Lit(2.5)) and route.fallbacks == ()
    x = np.array([[-3.0, 0.0, 4.0]])
    resolve = _resolve({"mindspore.ops.clamp": lambda t, low, high: np.clip(t, low, high)})
    assert route.make(resolve)(x, None, 2.5) is x
    np.testing.assert_array_equal(x, [[-3.0, 0.0, 2.5]])
    both = route_for(_call("torch.Tensor.clamp_", (X, Lit(-1.0), Lit(1.0))), "mindspore",
                     load_mapping())
    assert both.args == (X, Lit(-1.0), Lit(1.0))
    neither = route_for(_call("torch.Tensor.clamp_", (X,)), "mindspore", load_mapping())
    assert isinstance(neither, Unmapped)

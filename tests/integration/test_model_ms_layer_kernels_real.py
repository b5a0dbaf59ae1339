"""MindSpore layers replayed with the kernels they run (model/replay/ms_layer_kernels.py), in
real MindSpore: the same values as the function form the other framework maps from, for 2-D
and 3-D inputs; and the speed probe (model/speed_probe.py) reads a positive latency."""
from __future__ import annotations

import numpy as np
import pytest

from opbench.frameworks.apimap import load_mapping
from opbench.model.program import Call, Ext, Lit, Ref

ms = pytest.importorskip("mindspore")

from opbench.frameworks import get_adapter  # noqa: E402
from opbench.model.replay.ms_layer_kernels import DENSE_AS_LAYER  # noqa: E402
from opbench.model.replay.routes import route_for  # noqa: E402
from opbench.model.speed_probe import mindspore_speed_probe  # noqa: E402


@pytest.fixture(scope="module")
def adapter():
    adapter = get_adapter("mindspore")
    adapter.setup("cpu", 1)
    return adapter


def _call(api: str, replay_api: str, args: tuple, kwargs: tuple = ()) -> Call:
    return Call(index=1, framework="mindspore", api=api, kind="module", replay_api=replay_api,
                args=args, kwargs=kwargs, outputs=("tensor", (1,), "float32"), duration_ns=1,
                start_ns=0)


@pytest.mark.parametrize("shape", [(64, 32), (2, 16, 32)])
def test_dense_as_the_layer_runs_it_equals_ops_dense(adapter, shape):
    rng = np.random.default_rng(0)
    x, w, b = (ms.Tensor(rng.standard_normal(s).astype(np.float32))
               for s in (shape, (64, 32), (64,)))
    route = route_for(_call("mindspore.nn.Dense", "mindspore.ops.dense",
                            (Ref(0), Ext(1), Ext(2))), "mindspore", load_mapping())
    assert route.api == DENSE_AS_LAYER
    out = route.make(adapter.resolve)(x, w, b).asnumpy()
    assert out.shape == (*shape[:-1], 64)
    np.testing.assert_allclose(out, ms.ops.dense(x, w, b).asnumpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_as_the_layer_equals_ops_mse_loss(adapter, reduction):
    rng = np.random.default_rng(1)
    p, y = (ms.Tensor(rng.standard_normal((64, 1)).astype(np.float32)) for _ in range(2))
    route = route_for(_call("mindspore.nn.MSELoss", "mindspore.ops.mse_loss", (Ref(0), Ext(1)),
                            (("reduction", Lit(reduction)),)), "mindspore", load_mapping())
    out = route.make(adapter.resolve)(p, y).asnumpy()
    np.testing.assert_allclose(out, ms.ops.mse_loss(p, y, reduction=reduction).asnumpy(),
                               rtol=1e-5, atol=1e-6)


def test_the_speed_probe_reads_a_latency(adapter):
    seconds = mindspore_speed_probe(adapter.sync, repeats=2)
    assert 0 < seconds < 1.0

"""A MindSpore layer replayed in MindSpore with the kernels it runs
(model/replay/ms_layer_kernels.py): nn.Dense as MatMul(transpose_b) + BiasAdd, not the
slower Dense primitive its function form names; nn.MSELoss as the loss Cell itself. A script
that called the function form itself replays it. No framework is imported here: the routes
are chosen, not built."""
from __future__ import annotations

from opbench.frameworks.apimap import load_mapping
from opbench.model.program import Call, Ext, Lit, Ref
from opbench.model.replay.ms_layer_kernels import DENSE_AS_LAYER, MSE_LAYER
from opbench.model.replay.routes import Route, route_for
from opbench.model.replay.main import speed_probe_for

X, W, B, Y = Ref(0), Ext(1), Ext(2), Ext(3)


def _call(api: str, replay_api: str, args: tuple, kwargs: tuple = ()) -> Call:
    return Call(index=1, framework="mindspore", api=api, kind="module", replay_api=replay_api,
                args=args, kwargs=kwargs, outputs=("tensor", (64, 64), "float32"),
                duration_ns=1, start_ns=0)


def test_a_dense_layer_replays_as_the_layer_runs_it_with_the_primitive_as_fallback():
    route = route_for(_call("mindspore.nn.Dense", "mindspore.ops.dense", (X, W, B)),
                      "mindspore", load_mapping())
    assert isinstance(route, Route) and route.api == DENSE_AS_LAYER
    assert route.args == (X, W, B)
    assert [f.api for f in route.fallbacks] == ["mindspore.ops.dense"]


def test_ops_dense_called_by_the_script_replays_as_itself():
    route = route_for(_call("mindspore.ops.dense", "mindspore.ops.dense", (X, W, B)),
                      "mindspore", load_mapping())
    assert route.api == "mindspore.ops.dense" and not route.fallbacks


def test_a_dense_layer_still_maps_to_torch_linear_in_torch():
    route = route_for(_call("mindspore.nn.Dense", "mindspore.ops.dense", (X, W, B)), "torch",
                      load_mapping())
    assert route.api == "torch.nn.functional.linear"


def test_an_mse_loss_layer_replays_as_the_layer_with_its_reduction():
    route = route_for(_call(MSE_LAYER, "mindspore.ops.mse_loss", (X, Y),
                            (("reduction", Lit("sum")),)), "mindspore", load_mapping())
    assert route.api == "mindspore.nn.MSELoss(reduction='sum') (the layer itself)"
    assert route.args == (X, Y) and route.kwargs == ()
    assert route.fallbacks[0].api == "mindspore.ops.mse_loss"
    mean = route_for(_call(MSE_LAYER, "mindspore.ops.mse_loss", (X, Y)), "mindspore",
                     load_mapping())
    assert mean.api == "mindspore.nn.MSELoss(reduction='mean') (the layer itself)"


def test_ops_mse_loss_called_by_the_script_replays_as_itself():
    route = route_for(_call("mindspore.ops.mse_loss", "mindspore.ops.mse_loss", (X, Y)),
                      "mindspore", load_mapping())
    assert route.api == "mindspore.ops.mse_loss"


def test_only_the_real_mindspore_adapter_takes_the_speed_probe():
    """The unit tests' fake frameworks (and torch) replay without one."""
    class FakeMindSpore:
        name = "mindspore"
    assert speed_probe_for(FakeMindSpore()) is None

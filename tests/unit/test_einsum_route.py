"""torch.einsum's MindSpore route (model/replay/einsum_route.py): the mapping's mint.einsum
first, the written-out einsum after it, its callable built with a fake `resolve` giving
numpy's functions under mint's names (no framework imported)."""
from __future__ import annotations

import numpy as np
import pytest

from opbench.frameworks.apimap import load_mapping
from opbench.model.program import Call, Lit, Ref, Seq
from opbench.model.replay.einsum_plan import EinsumRefused
from opbench.model.replay.einsum_route import EINSUM_WRITTEN_OUT
from opbench.model.replay.routes import Route, route_for

NUMPY_AS_MINT = {
    "mindspore.mint.permute": np.transpose,
    "mindspore.mint.reshape": np.reshape,
    "mindspore.mint.sum": lambda x, dims: np.sum(x, axis=dims),
    "mindspore.mint.bmm": np.matmul,
    "mindspore.mint.matmul": np.matmul,
    "mindspore.mint.mul": np.multiply,
}


def _resolve(name: str):
    return NUMPY_AS_MINT[name]


def _einsum_call(*args) -> Call:
    return Call(index=3, framework="torch", api="torch.einsum", kind="function",
                replay_api="torch.einsum", args=args, kwargs=(),
                outputs=("tensor", (2, 2), "float32"), duration_ns=1, start_ns=0)


def _route(*args) -> Route:
    route = route_for(_einsum_call(*args), "mindspore", load_mapping())
    assert isinstance(route, Route)
    return route


def test_mint_einsum_first_then_the_written_out_einsum_on_the_operands():
    route = _route(Lit("bld,de,bme->blm"), Ref(0), Ref(1), Ref(0))
    assert route.api == "mindspore.mint.einsum"
    assert route.args == (Lit("bld,de,bme->blm"), Ref(0), Ref(1), Ref(0))
    written_out = route.fallbacks[-1]
    assert written_out.api == EINSUM_WRITTEN_OUT
    assert written_out.args == (Ref(0), Ref(1), Ref(0))      # the equation is in the plan


def test_the_written_out_einsum_computes_torchs_values_with_mints_functions():
    rng = np.random.default_rng(0)
    y, w = rng.standard_normal((4, 24, 64)), rng.standard_normal((64, 64))
    einsum = _route(Lit("bld,de,bme->blm"), Ref(0), Ref(1), Ref(0)).fallbacks[-1].make(
        _resolve)
    np.testing.assert_allclose(einsum(y, w, y), np.einsum("bld,de,bme->blm", y, w, y),
                               rtol=1e-10)
    # planned once per shapes: a second call with other shapes gets its own plan
    small = rng.standard_normal((2, 3, 64))
    np.testing.assert_allclose(einsum(small, w, small),
                               np.einsum("bld,de,bme->blm", small, w, small), rtol=1e-10)


def test_operands_passed_as_one_list_are_the_operands():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    route = _route(Lit("ij,jk->ik"), Seq("list", (Ref(0), Ref(1))))
    einsum = route.fallbacks[-1].make(_resolve)
    np.testing.assert_allclose(einsum([a, b]), a @ b, rtol=1e-10)


def test_a_diagonal_is_refused_with_its_reason_when_the_route_is_made():
    route = _route(Lit("ii->i"), Ref(0))
    with pytest.raises(EinsumRefused, match="diagonal or trace"):
        route.fallbacks[-1].make(_resolve)


def test_the_sublist_form_is_refused_with_its_reason():
    route = _route(Ref(0), Seq("list", (Lit(0), Lit(1))), Seq("list", (Lit(1), Lit(0))))
    with pytest.raises(EinsumRefused, match="sublist form"):
        route.fallbacks[-1].make(_resolve)

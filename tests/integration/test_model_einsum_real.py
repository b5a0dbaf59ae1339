"""torch.einsum replayed in real MindSpore (model/replay/einsum_route.py): mint.einsum has no
CPU kernel in MindSpore 2.10, so the route falls back to the einsum written out in mint calls;
its values are torch.einsum's, for the corpus script's equations and the rest of the rule,
and its gradient too."""
from __future__ import annotations

import numpy as np
import pytest

from opbench.frameworks.apimap import load_mapping
from opbench.model.program import Call, Lit, Ref

ms = pytest.importorskip("mindspore")
torch = pytest.importorskip("torch")

from opbench.frameworks import get_adapter  # noqa: E402
from opbench.model.replay.einsum_plan import EinsumRefused  # noqa: E402
from opbench.model.replay.einsum_route import EINSUM_WRITTEN_OUT  # noqa: E402
from opbench.model.replay.routes import Route, route_for  # noqa: E402


@pytest.fixture(scope="module")
def resolve():
    adapter = get_adapter("mindspore")
    adapter.setup("cpu", 1)
    return adapter.resolve


def _route(equation: str, operands: int) -> Route:
    call = Call(index=1, framework="torch", api="torch.einsum", kind="function",
                replay_api="torch.einsum",
                args=(Lit(equation),) + tuple(Ref(k) for k in range(operands)), kwargs=(),
                outputs=("tensor", (1,), "float32"), duration_ns=1, start_ns=0)
    route = route_for(call, "mindspore", load_mapping())
    assert isinstance(route, Route)
    return route


def test_mint_einsum_has_no_cpu_kernel_so_the_fallback_is_needed(resolve):
    """Why the route exists; when a MindSpore release adds the kernel, this says so."""
    route = _route("ij,jk->ik", 2)
    a = ms.Tensor(np.ones((2, 3), np.float32))
    with pytest.raises(Exception, match="Ascend"):
        route.make(resolve)("ij,jk->ik", a, ms.Tensor(np.ones((3, 4), np.float32)))


@pytest.mark.parametrize("equation, shapes", [
    ("bld,de,bme->blm", [(4, 24, 64), (64, 64), (4, 24, 64)]),
    ("bhqk,bhkd->bhqd", [(4, 4, 24, 24), (4, 4, 24, 16)]),
    ("bhqd->bqd", [(4, 4, 24, 16)]),
    ("...ij,...jk->...ik", [(2, 3, 4, 5), (3, 5, 6)]),
    ("i,j->ij", [(5,), (7,)]),
    ("ij->ji", [(3, 4)]),
    ("bqhd,bkhd->bhqk", [(2, 5, 3, 8), (2, 7, 3, 8)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("abc,b->a", [(2, 3, 4), (3,)]),
    ("bi,b->bi", [(4, 6), (4,)]),
])
def test_the_written_out_einsum_gives_torchs_values(resolve, equation, shapes):
    rng = np.random.default_rng(len(equation))
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    route = _route(equation, len(shapes)).fallbacks[-1]
    assert route.api == EINSUM_WRITTEN_OUT
    got = route.make(resolve)(*(ms.Tensor(a) for a in arrays)).asnumpy()
    expected = torch.einsum(equation, *(torch.tensor(a) for a in arrays)).numpy()
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_its_gradient_is_torchs(resolve):
    """A training step differentiates the replay: every step of the plan has a backward on
    MindSpore's CPU."""
    rng = np.random.default_rng(3)
    y = rng.standard_normal((2, 5, 8)).astype(np.float32)
    w = rng.standard_normal((8, 8)).astype(np.float32)
    einsum = _route("bld,de,bme->blm", 3).fallbacks[-1].make(resolve)
    grads = ms.grad(lambda a, b: einsum(a, b, a).sum(), (0, 1))(ms.Tensor(y), ms.Tensor(w))
    ty, tw = torch.tensor(y, requires_grad=True), torch.tensor(w, requires_grad=True)
    torch.einsum("bld,de,bme->blm", ty, tw, ty).sum().backward()
    np.testing.assert_allclose(grads[0].asnumpy(), ty.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(grads[1].asnumpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_a_trace_is_refused_with_its_reason(resolve):
    with pytest.raises(EinsumRefused, match="diagonal or trace"):
        _route("ii->i", 1).fallbacks[-1].make(resolve)

"""The cplx branch's replay rules in real MindSpore against torch (in process, through the
replay adapter's own resolve): complex tensors made by both adapters from one seeded array,
torch.fft.rfft2 / irfft2 as ops.rfft2 / irfft2, torch's abs of a complex tensor as
ops.ComplexAbs (real, as torch's), argmax of a zero-size tensor, full_like on the CPU, and
mindcv's GatherD / Equal / expand_dims in torch."""
from __future__ import annotations

import numpy as np
import pytest

from opbench.frameworks.apimap import load_mapping
from opbench.model.program import Call, Ext, ExternalTensor, Lit, Ref, Seq

ms = pytest.importorskip("mindspore")
torch = pytest.importorskip("torch")

from opbench.frameworks import get_adapter  # noqa: E402
from opbench.model.impact.output_check import compare  # noqa: E402
from opbench.model.replay.executor import external_array, fingerprint  # noqa: E402
from opbench.model.replay.routes import route_for  # noqa: E402


@pytest.fixture(scope="module")
def adapters():
    found = {}
    for name in ("mindspore", "torch"):
        adapter = get_adapter(name)
        adapter.setup("cpu", 1)
        found[name] = adapter
    return found


def _call(api: str, args: tuple, kwargs: tuple = (), kind: str = "function",
          framework: str = "torch") -> Call:
    return Call(index=1, framework=framework, api=api, kind=kind, replay_api=api, args=args,
                kwargs=kwargs, outputs=("tensor", (1,), "float32"), duration_ns=1, start_ns=0)


def test_a_spectral_filter_agrees_between_the_frameworks(adapters):
    """fft_spectral_filter.py's step: rfft2, a complex weight, irfft2, |spectrum|."""
    ms_adapter, torch_adapter = adapters["mindspore"], adapters["torch"]
    images = external_array(ExternalTensor(0, (4, 3, 32, 32), "float32", "input"))
    weight = external_array(ExternalTensor(1, (3, 32, 17), "complex64", "input"))
    mapping = load_mapping()
    norm = (("norm", Lit("ortho")),)
    rfft2 = route_for(_call("torch.fft.rfft2", (Ext(0),), norm), "mindspore", mapping)
    irfft2 = route_for(_call("torch.fft.irfft2", (Ref(0),),
                             (("s", Seq("tuple", (Lit(32), Lit(32)))),) + norm),
                       "mindspore", mapping)
    absolute = route_for(_call("torch.Tensor.abs", (Ref(0),), kind="tensor_method"),
                         "mindspore", mapping)
    x_ms = ms_adapter.from_numpy(images, "float32")
    w_ms = ms_adapter.from_numpy(weight, "complex64")
    spectrum_ms = rfft2.make(ms_adapter.resolve)(x_ms, norm="ortho")
    out_ms = irfft2.make(ms_adapter.resolve)(spectrum_ms * w_ms, s=(32, 32), norm="ortho")
    magnitude_ms = absolute.make(ms_adapter.resolve)(spectrum_ms)

    x_t = torch_adapter.from_numpy(images, "float32")
    w_t = torch_adapter.from_numpy(weight, "complex64")
    spectrum_t = torch.fft.rfft2(x_t, norm="ortho")
    out_t = torch.fft.irfft2(spectrum_t * w_t, s=(32, 32), norm="ortho")

    assert np.array_equal(ms_adapter.to_numpy(w_ms), torch_adapter.to_numpy(w_t))
    for ours, theirs in ((spectrum_ms, spectrum_t), (out_ms, out_t),
                         (magnitude_ms, spectrum_t.abs())):
        a, b = ms_adapter.to_numpy(ours), torch_adapter.to_numpy(theirs)
        assert a.dtype == b.dtype
        assert compare(fingerprint(b), fingerprint(a)) is None


def test_argmax_of_a_zero_size_tensor_is_empty_in_mindspore_as_in_torch(adapters):
    ms_adapter = adapters["mindspore"]
    route = route_for(_call("torch.Tensor.argmax", (Ref(0), Lit(-1)), kind="tensor_method"),
                      "mindspore", load_mapping())
    fn = route.make(ms_adapter.resolve)
    empty = fn(ms_adapter.from_numpy(np.zeros((0, 1000), np.float32), "float32"), -1)
    assert tuple(empty.shape) == (0,) and str(empty.dtype) == "Int64"
    assert tuple(torch.zeros(0, 1000).argmax(-1).shape) == (0,)
    rows = np.random.default_rng(0).standard_normal((2, 1000)).astype(np.float32)
    full = fn(ms_adapter.from_numpy(rows, "float32"), -1)
    assert ms_adapter.to_numpy(full).tolist() == rows.argmax(-1).tolist()


def test_full_like_runs_on_mindspores_cpu_through_its_fallback(adapters):
    """mint.full_like: "The kernel FullLike unregistered"; ops.full_like runs."""
    ms_adapter = adapters["mindspore"]
    route = route_for(_call("torch.full_like", (Ref(0), Lit(15))), "mindspore", load_mapping())
    x = ms_adapter.from_numpy(np.arange(6).reshape(2, 3), "int64")
    errors = []
    for candidate in (route, *route.fallbacks):
        try:       # as the replay's probe: called and synced (MindSpore fails at the sync)
            value = candidate.make(ms_adapter.resolve)(x, 15)
            ms_adapter.sync()
            values = ms_adapter.to_numpy(value)
            break
        except Exception as exc:            # the primary fails on CPU: the next one
            errors.append(exc)
    else:
        pytest.fail(f"no route ran: {errors}")
    assert values.tolist() == [[15, 15, 15], [15, 15, 15]]


def test_mindcvs_cross_entropy_calls_run_in_torch(adapters):
    """P.GatherD()(logits, -1, int32 labels), P.Equal()(labels, -100), labels.expand_dims(-1)."""
    torch_adapter = adapters["torch"]
    mapping = load_mapping()
    logits = torch.randn(2, 10)
    labels = torch.tensor([[3], [7]], dtype=torch.int32)
    gather = route_for(_call("mindspore.ops.GatherD", (Ref(0), Lit(-1), Ref(1)),
                             kind="primitive", framework="mindspore"), "torch", mapping)
    picked = gather.make(torch_adapter.resolve)(logits, -1, labels)
    assert torch.equal(picked, logits.gather(-1, labels.long()))
    equal = route_for(_call("mindspore.ops.Equal", (Ref(0), Lit(-100)), kind="primitive",
                            framework="mindspore"), "torch", mapping)
    assert equal.make(torch_adapter.resolve)(labels, -100).tolist() == [[False], [False]]
    expand = route_for(_call("mindspore.Tensor.expand_dims", (Ref(0), Lit(-1)),
                             kind="tensor_method", framework="mindspore"), "torch", mapping)
    assert tuple(expand.make(torch_adapter.resolve)(labels.view(2), -1).shape) == (2, 1)

"""The adapters on the real frameworks (torch, MindSpore, numpy), on this machine's CPU.

MindSpore's thread count is process-global and only set once, before the first operator:
every test gets the adapters from session-scoped fixtures that run setup() first.
"""
from __future__ import annotations

import numpy as np
import pytest

from opbench.cases.case_files import DTYPES
from opbench.frameworks import (
    DeviceUnavailable,
    FrameworkUnavailable,
    UnknownAPI,
    Unsupported,
    get_adapter,
)

pytestmark = pytest.mark.integration

THREADS = 2          # the test machines have 2 cores
# Gradient agreement between the frameworks: float32 softmax backward differs only by
# summation order, a few ulps of values of order 1.
GRAD_ATOL = 1e-5
SEED = 20240601


def _adapter(name: str):
    try:
        adapter = get_adapter(name)
    except FrameworkUnavailable as err:
        pytest.skip(str(err))
    adapter.setup("cpu", THREADS)
    return adapter


@pytest.fixture(scope="session")
def torch_adapter():
    return _adapter("torch")


@pytest.fixture(scope="session")
def ms_adapter():
    return _adapter("mindspore")


@pytest.fixture(scope="session")
def np_adapter():
    return _adapter("numpy")


@pytest.fixture(params=["torch", "mindspore"])
def adapter(request, torch_adapter, ms_adapter):
    return {"torch": torch_adapter, "mindspore": ms_adapter}[request.param]


@pytest.fixture
def rng():
    return np.random.default_rng(SEED)


def bfloat16_round(values: np.ndarray) -> np.ndarray:
    """float32 -> nearest bfloat16 (ties to even), kept as float32. Independent of both
    frameworks: bfloat16 is the top 16 bits of a float32."""
    bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


def sample(rng, dtype: str, shape=(3, 5)) -> np.ndarray:
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith("int"):
        return rng.integers(-1000, 1000, size=shape).astype(dtype)
    carrier = "float32" if dtype == "bfloat16" else dtype
    return rng.standard_normal(shape).astype(carrier)


# ------------------------------------------------------------------ identity and setup
def test_versions_are_the_installed_ones(torch_adapter, ms_adapter, np_adapter):
    import mindspore
    import torch
    assert torch_adapter.version() == torch.__version__
    assert ms_adapter.version() == mindspore.__version__
    assert np_adapter.version() == np.__version__


def test_cpu_setup_with_two_threads_is_read_back(torch_adapter, ms_adapter):
    import torch
    assert torch_adapter.threads() == torch.get_num_threads() == THREADS
    assert ms_adapter.threads() == THREADS
    for adapter in (torch_adapter, ms_adapter):
        info = adapter.info()
        assert info["device"] == "cpu" and info["threads"] == THREADS


def test_mindspore_info_records_mode_glog_and_executor(ms_adapter):
    info = ms_adapter.info()
    assert info["mode"] == "PYNATIVE_MODE"
    assert info["device_target"] == "CPU"
    assert info["threads_read_back"] is False
    assert info["executor_module"] == "mindspore.graph.api"   # MindSpore >= 2.9
    assert "glog_v" in info


@pytest.mark.parametrize("device", ["cuda", "cuda:1", "ascend", "ascend:0"])
def test_absent_devices_say_what_exists(torch_adapter, ms_adapter, np_adapter, device):
    for adapter in (torch_adapter, ms_adapter, np_adapter):
        with pytest.raises(DeviceUnavailable) as err:
            adapter.setup(device, THREADS)
        assert str(err.value).endswith("devices here: cpu")
        assert adapter.device() == "cpu"
    assert torch_adapter.threads() == THREADS


# --------------------------------------------------------------------------- tensors
@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_of_every_dtype(adapter, rng, dtype):
    values = sample(rng, dtype)
    back = adapter.to_numpy(adapter.from_numpy(values, dtype))
    if dtype == "bfloat16":
        assert back.dtype == np.float32
        np.testing.assert_array_equal(back.view(np.uint32), bfloat16_round(values).view(np.uint32))
        assert not np.array_equal(back, values)          # it really went through bfloat16
    else:
        assert back.dtype == values.dtype and back.shape == values.shape
        assert back.tobytes() == values.tobytes()        # bitwise


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensors_have_the_framework_dtype(torch_adapter, ms_adapter, rng, dtype):
    import mindspore
    import torch
    values = sample(rng, dtype)
    assert torch_adapter.from_numpy(values, dtype).dtype == getattr(torch, dtype)
    ms_name = "bool_" if dtype == "bool" else dtype
    assert ms_adapter.from_numpy(values, dtype).dtype == getattr(mindspore, ms_name)


def test_zero_dim_round_trip(adapter):
    back = adapter.to_numpy(adapter.from_numpy(np.array(2.5, dtype=np.float32), "float32"))
    assert back.shape == () and back == 2.5


def test_numpy_round_trip_and_bfloat16_refusal(np_adapter, rng):
    for dtype in DTYPES:
        if dtype == "bfloat16":
            with pytest.raises(Unsupported):
                np_adapter.from_numpy(sample(rng, dtype), dtype)
            continue
        values = sample(rng, dtype)
        assert np_adapter.to_numpy(np_adapter.from_numpy(values, dtype)).tobytes() == (
            values.tobytes())


def test_torch_tensor_does_not_share_memory_with_the_input(torch_adapter):
    source = np.zeros(3, dtype=np.float32)
    torch_adapter.from_numpy(source, "float32").add_(1)
    assert source.tolist() == [0.0, 0.0, 0.0]


def test_requires_grad_marks_torch_leaves(torch_adapter, rng):
    tensor = torch_adapter.from_numpy(sample(rng, "float32"), "float32", requires_grad=True)
    assert tensor.requires_grad and tensor.is_leaf
    assert torch_adapter.to_numpy(tensor * 2).dtype == np.float32     # detached on the way out


def test_to_numpy_of_scalars_lists_and_namedtuples(torch_adapter, rng):
    import torch
    values = sample(rng, "float32")
    tensor = torch_adapter.from_numpy(values, "float32")
    assert torch_adapter.to_numpy(tensor.sum().item()).shape == ()
    result = torch_adapter.to_numpy([tensor, (tensor.max(dim=1), 3)])
    assert isinstance(result, tuple) and isinstance(result[1][0], tuple)
    assert not isinstance(result[1][0], torch.return_types.max)
    np.testing.assert_array_equal(result[1][0][0], values.max(axis=1))


# --------------------------------------------------------------------------- resolve
def test_resolve_real_functions(torch_adapter, ms_adapter, rng):
    values = sample(rng, "float32")
    expected = np.exp(values) / np.exp(values).sum(axis=-1, keepdims=True)
    for adapter, api in ((torch_adapter, "torch.nn.functional.softmax"),
                         (ms_adapter, "mindspore.mint.nn.functional.softmax")):
        out = adapter.resolve(api)(adapter.from_numpy(values, "float32"), dim=-1)
        np.testing.assert_allclose(adapter.to_numpy(out), expected, rtol=1e-6, atol=1e-7)


def test_resolve_a_mindspore_primitive_class(ms_adapter):
    import mindspore
    reduce_sum = ms_adapter.resolve("mindspore.ops.ReduceSum")
    assert reduce_sum is mindspore.ops.ReduceSum
    total = reduce_sum(keep_dims=False)(ms_adapter.from_numpy(np.ones((2, 3), np.float32),
                                                              "float32"), 1)
    assert ms_adapter.to_numpy(total).tolist() == [3.0, 3.0]


def test_resolve_tensor_operators(adapter, rng):
    values = sample(rng, "float32")
    tensor = adapter.from_numpy(values, "float32")
    added = adapter.resolve("Tensor.__add__")(tensor, tensor)
    np.testing.assert_array_equal(adapter.to_numpy(added), values + values)
    row = adapter.resolve("Tensor.__getitem__")(tensor, 1)
    np.testing.assert_array_equal(adapter.to_numpy(row), values[1])
    summed = adapter.resolve("Tensor.sum")(tensor)
    np.testing.assert_allclose(adapter.to_numpy(summed), values.sum(), rtol=1e-6)


def test_resolve_unknown_api_suggests(torch_adapter, ms_adapter):
    with pytest.raises(UnknownAPI) as err:
        torch_adapter.resolve("torch.reshap")
    assert str(err.value) == ("torch.reshap: module 'torch' has no attribute 'reshap' "
                              "(did you mean 'reshape'?)")
    with pytest.raises(UnknownAPI, match="did you mean 'softmax'"):
        ms_adapter.resolve("mindspore.mint.nn.functional.sofmax")


# ----------------------------------------------------------------- ops, sync, autograd
def test_trivial_op_runs_on_every_framework(torch_adapter, ms_adapter, np_adapter):
    for adapter in (torch_adapter, ms_adapter, np_adapter):
        add = adapter.trivial_op()
        result = add()
        adapter.sync()
        assert adapter.to_numpy(result).tolist() == [2.0]


def softmax_backward_expected(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """d/dx sum(softmax(x) * w) along the last axis: s * (w - sum(w * s))."""
    s = np.exp(x - x.max(axis=-1, keepdims=True))
    s /= s.sum(axis=-1, keepdims=True)
    return s * (weight - (weight * s).sum(axis=-1, keepdims=True))


def test_softmax_gradients_agree_between_torch_and_mindspore(torch_adapter, ms_adapter, rng):
    x = sample(rng, "float32", (4, 16))
    weight = sample(rng, "float32", (4, 16))
    results = {}
    for adapter, api in ((torch_adapter, "torch.nn.functional.softmax"),
                         (ms_adapter, "mindspore.mint.nn.functional.softmax")):
        step = adapter.forward_backward(adapter.resolve(api), (adapter.from_numpy(x, "float32"),),
                                        {"dim": -1}, (0,), adapter.from_numpy(weight, "float32"))
        step()                                            # gradients must not accumulate
        output, grads = step()
        adapter.sync()
        results[adapter.name] = (adapter.to_numpy(output), adapter.to_numpy(grads))
    (torch_out, torch_grads), (ms_out, ms_grads) = results["torch"], results["mindspore"]
    assert len(torch_grads) == len(ms_grads) == 1
    np.testing.assert_allclose(torch_out, ms_out, atol=GRAD_ATOL)
    np.testing.assert_allclose(torch_grads[0], ms_grads[0], atol=GRAD_ATOL)
    np.testing.assert_allclose(torch_grads[0], softmax_backward_expected(x, weight), atol=GRAD_ATOL)


def test_gradients_for_two_positions_and_sum_loss(torch_adapter, ms_adapter, rng):
    x, y = sample(rng, "float32"), sample(rng, "float32")
    for adapter, api in ((torch_adapter, "torch.mul"), (ms_adapter, "mindspore.mint.mul")):
        step = adapter.forward_backward(adapter.resolve(api),
                                        (adapter.from_numpy(x, "float32"),
                                         adapter.from_numpy(y, "float32")), {}, (0, 1))
        _, grads = step()
        grad_x, grad_y = adapter.to_numpy(grads)          # loss = sum(x * y)
        np.testing.assert_allclose(grad_x, y, rtol=1e-6)
        np.testing.assert_allclose(grad_y, x, rtol=1e-6)


def test_torch_forward_backward_leaves_the_callers_tensor_alone(torch_adapter, rng):
    tensor = torch_adapter.from_numpy(sample(rng, "float32"), "float32")
    step = torch_adapter.forward_backward(torch_adapter.resolve("torch.exp"), (tensor,), {}, (0,))
    step()
    assert not tensor.requires_grad and tensor.grad is None


def test_tuple_outputs_topk(torch_adapter, ms_adapter, rng):
    # mindspore.ops.topk, not mindspore.mint.topk: MindSpore 2.10's CPU build has no TopkExt
    # kernel behind mint.topk ("The kernel TopkExt unregistered").
    values = sample(rng, "float32", (4, 10))
    expected_indices = np.argsort(-values, axis=-1)[:, :3]
    for adapter, api in ((torch_adapter, "torch.topk"), (ms_adapter, "mindspore.ops.topk")):
        result = adapter.to_numpy(adapter.resolve(api)(adapter.from_numpy(values, "float32"), 3))
        assert isinstance(result, tuple) and len(result) == 2
        top_values, indices = result
        np.testing.assert_array_equal(indices, expected_indices)
        np.testing.assert_array_equal(top_values, np.take_along_axis(values, expected_indices, -1))


def test_topk_backward_weights_values_and_skips_indices(torch_adapter, ms_adapter, rng):
    values = sample(rng, "float32", (4, 10))
    weight = sample(rng, "float32", (4, 3))
    grads = {}
    for adapter, api in ((torch_adapter, "torch.topk"), (ms_adapter, "mindspore.ops.topk")):
        step = adapter.forward_backward(adapter.resolve(api),
                                        (adapter.from_numpy(values, "float32"), 3), {}, (0,),
                                        (adapter.from_numpy(weight, "float32"), None))
        grads[adapter.name] = adapter.to_numpy(step()[1])[0]
    expected = np.zeros_like(values)
    np.put_along_axis(expected, np.argsort(-values, axis=-1)[:, :3], weight, -1)
    np.testing.assert_allclose(grads["torch"], expected, atol=GRAD_ATOL)
    np.testing.assert_allclose(grads["mindspore"], expected, atol=GRAD_ATOL)

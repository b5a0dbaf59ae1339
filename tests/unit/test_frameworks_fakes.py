"""Adapters against fake torch / mindspore modules injected into sys.modules: device
selection, "not here" messages, which sync runs on which device, thread setting, MindSpore's
executor location, the registry. No real torch or mindspore is imported."""
from __future__ import annotations

import os
import subprocess
import sys
import types
from collections import namedtuple

import numpy as np
import pytest

from opbench.frameworks import (
    FRAMEWORKS,
    DeviceUnavailable,
    FrameworkUnavailable,
    UnknownAPI,
    Unsupported,
    available_frameworks,
    get_adapter,
    loading,
    mindspore_adapter,
)
from opbench.frameworks.devices import DeviceSpec, parse_device
from opbench.frameworks.dtypes import carrier_copy, check_dtype
from opbench.frameworks.mindspore_adapter import MindSporeAdapter, _ProcessState
from opbench.frameworks.numpy_adapter import NumpyAdapter
from opbench.frameworks.outputs import check_grad_positions, nested_to_numpy, weighted_pairs
from opbench.frameworks.torch_adapter import TorchAdapter


# --------------------------------------------------------------------------- fake torch
def make_fake_torch(cuda_devices: int = 0, cuda_build: bool = False,
                    npu_devices: int | None = None) -> types.ModuleType:
    """A fake torch recording calls in torch.calls. npu_devices=None: torch_npu absent."""
    torch = types.ModuleType("torch")
    torch.__version__ = "0.0.0+fake"
    calls: list[tuple] = []
    torch.calls = calls
    state = {"threads": 8, "interop": 8, "interop_locked": False}
    torch.state = state

    class Tensor:
        def reshape(self, *shape):
            return shape

    torch.Tensor = Tensor
    torch.reshape = lambda x, shape: ("reshape", x, shape)
    torch.reshape.__module__ = "torch"   # a framework's own function (the API guard checks)
    torch.device = lambda kind, index=None: (kind, index)

    def set_num_threads(n):
        calls.append(("set_num_threads", n))
        state["threads"] = n

    def set_num_interop_threads(n):
        calls.append(("set_num_interop_threads", n))
        if state["interop_locked"]:
            raise RuntimeError("Error: cannot set number of interop threads after parallel "
                               "work has started or set_num_interop_threads called")
        state["interop"] = n

    torch.set_num_threads = set_num_threads
    torch.get_num_threads = lambda: state["threads"]
    torch.set_num_interop_threads = set_num_interop_threads
    torch.get_num_interop_threads = lambda: state["interop"]
    torch.version = types.SimpleNamespace(cuda="12.4" if cuda_build else None)
    torch.cuda = types.SimpleNamespace(
        is_available=lambda: cuda_devices > 0,
        device_count=lambda: cuda_devices,
        set_device=lambda index: calls.append(("cuda.set_device", index)),
        synchronize=lambda device=None: calls.append(("cuda.synchronize", device)))
    if npu_devices is not None:
        torch.npu = types.SimpleNamespace(
            is_available=lambda: npu_devices > 0,
            device_count=lambda: npu_devices,
            set_device=lambda index: calls.append(("npu.set_device", index)),
            synchronize=lambda device=None: calls.append(("npu.synchronize", device)))
    return torch


@pytest.fixture
def install_torch(monkeypatch):
    def install(**options) -> types.ModuleType:
        torch = make_fake_torch(**options)
        monkeypatch.setitem(sys.modules, "torch", torch)
        if options.get("npu_devices") is None:
            monkeypatch.setitem(sys.modules, "torch_npu", None)   # import fails: not installed
        else:
            monkeypatch.setitem(sys.modules, "torch_npu", types.ModuleType("torch_npu"))
        return torch
    return install


def test_torch_cpu_setup_sets_intra_and_interop_threads(install_torch):
    torch = install_torch()
    adapter = TorchAdapter()
    adapter.setup("cpu", 2)
    assert ("set_num_threads", 2) in torch.calls
    assert ("set_num_interop_threads", 2) in torch.calls
    assert adapter.threads() == 2
    assert adapter.device() == "cpu"
    info = adapter.info()
    assert info["interop_threads"] == 2 and "notes" not in info


def test_torch_threads_are_read_back_not_remembered(install_torch):
    torch = install_torch()
    adapter = TorchAdapter()
    adapter.setup("cpu", 2)
    torch.state["threads"] = 3          # someone else changed it afterwards
    assert adapter.threads() == 3


def test_torch_locked_interop_pool_is_recorded_with_the_value_in_force(install_torch):
    torch = install_torch()
    torch.state["interop_locked"] = True
    adapter = TorchAdapter()
    adapter.setup("cpu", 2)
    assert adapter.threads() == 2
    info = adapter.info()
    assert info["interop_threads"] == 8
    assert "in force: 8" in info["notes"][0]


def test_torch_cpu_sync_calls_nothing_even_when_cuda_exists(install_torch):
    torch = install_torch(cuda_devices=1, cuda_build=True)
    adapter = TorchAdapter()
    adapter.setup("cpu", 2)
    torch.calls.clear()
    adapter.sync()
    assert torch.calls == []


def test_torch_cuda_absent_on_cpu_build(install_torch):
    torch = install_torch()
    adapter = TorchAdapter()
    with pytest.raises(DeviceUnavailable) as err:
        adapter.setup("cuda", 2)
    assert str(err.value) == ("torch: cuda is not available here (this torch build has no CUDA "
                              "support); devices here: cpu")
    assert torch.calls == []              # a refused setup changes nothing
    assert adapter.device() == "cpu"


def test_torch_cuda_absent_on_cuda_build_without_a_card(install_torch):
    install_torch(cuda_build=True)
    with pytest.raises(DeviceUnavailable, match=r"no CUDA device or driver found\); "
                                                r"devices here: cpu$"):
        TorchAdapter().setup("cuda:0", 2)


def test_torch_cuda_index_beyond_the_cards_lists_the_cards(install_torch):
    install_torch(cuda_devices=2, cuda_build=True)
    with pytest.raises(DeviceUnavailable) as err:
        TorchAdapter().setup("cuda:2", 2)
    assert str(err.value) == ("torch: cuda:2 is not available here (2 CUDA device(s) found); "
                              "devices here: cpu, cuda:0, cuda:1")


def test_torch_cuda_selects_the_device_and_syncs_it(install_torch):
    torch = install_torch(cuda_devices=2, cuda_build=True)
    adapter = TorchAdapter()
    adapter.setup("cuda:1", 2)
    assert ("cuda.set_device", 1) in torch.calls
    assert adapter.device() == "cuda:1"
    torch.calls.clear()
    adapter.sync()
    assert torch.calls == [("cuda.synchronize", ("cuda", 1))]


def test_torch_plain_cuda_means_card_zero(install_torch):
    torch = install_torch(cuda_devices=1, cuda_build=True)
    adapter = TorchAdapter()
    adapter.setup("cuda", 2)
    assert adapter.device() == "cuda:0"
    torch.calls.clear()
    adapter.sync()
    assert torch.calls == [("cuda.synchronize", ("cuda", 0))]


def test_torch_ascend_needs_torch_npu(install_torch):
    install_torch()
    with pytest.raises(DeviceUnavailable) as err:
        TorchAdapter().setup("ascend", 2)
    assert "torch_npu package, which is not installed" in str(err.value)
    assert str(err.value).endswith("devices here: cpu")


def test_torch_ascend_with_torch_npu_but_no_card(install_torch):
    install_torch(npu_devices=0)
    with pytest.raises(DeviceUnavailable, match="no Ascend device or driver found"):
        TorchAdapter().setup("ascend:0", 2)


def test_torch_ascend_through_torch_npu_selects_and_syncs_npu(install_torch):
    torch = install_torch(npu_devices=2)
    adapter = TorchAdapter()
    assert adapter.devices() == ("cpu", "ascend:0", "ascend:1")
    adapter.setup("ascend:1", 2)
    assert ("npu.set_device", 1) in torch.calls
    assert adapter.device() == "ascend:1"
    torch.calls.clear()
    adapter.sync()
    assert torch.calls == [("npu.synchronize", ("npu", 1))]


def test_torch_resolve_suggests(install_torch):
    install_torch()
    adapter = TorchAdapter()
    with pytest.raises(UnknownAPI) as err:
        adapter.resolve("torch.reshap")
    assert str(err.value) == ("torch.reshap: module 'torch' has no attribute 'reshap' "
                              "(did you mean 'reshape'?)")
    assert adapter.resolve("torch.reshape")(1, (2,)) == ("reshape", 1, (2,))


def test_torch_resolve_rejects_another_frameworks_path(install_torch):
    install_torch()
    with pytest.raises(UnknownAPI, match="a torch API must start with 'torch.'"):
        TorchAdapter().resolve("mindspore.ops.add")


@pytest.mark.parametrize("threads", [0, -1, 1.5, True, "2"])
def test_threads_must_be_a_positive_int(install_torch, threads):
    install_torch()
    with pytest.raises(ValueError, match="threads must be a positive integer"):
        TorchAdapter().setup("cpu", threads)


# ----------------------------------------------------------------------- fake mindspore
def make_fake_mindspore(gpu_devices: int = 0, ascend_devices: int = 0,
                        runtime_started: bool = False,
                        threads_configured: bool = False) -> types.ModuleType:
    ms = types.ModuleType("mindspore")
    ms.__version__ = "0.0.0"
    calls: list[tuple] = []
    ms.calls = calls
    ms.GRAPH_MODE, ms.PYNATIVE_MODE = 0, 1
    context = {"mode": 0, "device_target": "CPU", "device_id": 0}
    configured = {"threads": threads_configured}

    def set_context(**settings):
        calls.append(("set_context", settings))
        context.update(settings)

    def set_device(target, device_id=None):
        calls.append(("set_device", target, device_id))
        if runtime_started:
            raise RuntimeError("The runtime has been initialized, please set it before the "
                               "kernel is executed")
        context["device_target"], context["device_id"] = target, device_id

    def threads_num(n):
        calls.append(("threads_num", n))
        if configured["threads"]:
            raise RuntimeError("The 'threads_num' can not be set repeatedly.")
        configured["threads"] = True

    def device_kind(count: int, name: str) -> types.SimpleNamespace:
        def device_count():
            if count == 0:
                raise RuntimeError(f"Device_target {name} not exist.")
            return count
        return types.SimpleNamespace(is_available=lambda: count > 0, device_count=device_count)

    ms.set_context = set_context
    ms.get_context = context.__getitem__
    ms.set_device = set_device
    ms.device_context = types.SimpleNamespace(
        cpu=types.SimpleNamespace(op_tuning=types.SimpleNamespace(threads_num=threads_num)),
        gpu=device_kind(gpu_devices, "GPU"),
        ascend=device_kind(ascend_devices, "Ascend"))
    ms.runtime = types.SimpleNamespace(synchronize=lambda: calls.append(("runtime.synchronize",)))
    ms.Tensor = type("Tensor", (), {})
    return ms


def make_executor_module(name: str, calls: list) -> types.ModuleType:
    module = types.ModuleType(name)
    module._pynative_executor = types.SimpleNamespace(sync=lambda: calls.append((f"{name}.sync",)))
    return module


GRAPH_SYNC = ("mindspore.graph.api.sync",)
COMMON_SYNC = ("mindspore.common.api.sync",)


@pytest.fixture
def install_mindspore(monkeypatch):
    # MindSpore's settings are process-global; so is the adapter's record of them.
    monkeypatch.setattr(mindspore_adapter, "_PROCESS", _ProcessState())

    def install(executor_modules=("mindspore.graph.api",), c_expression=None, **options):
        ms = make_fake_mindspore(**options)
        monkeypatch.setitem(sys.modules, "mindspore", ms)
        for name in ("mindspore.graph.api", "mindspore.common.api"):
            if name in executor_modules:
                monkeypatch.setitem(sys.modules, name, make_executor_module(name, ms.calls))
            else:
                monkeypatch.delitem(sys.modules, name, raising=False)
        monkeypatch.setitem(sys.modules, "mindspore._c_expression", c_expression)
        return ms
    return install


def fake_c_expression(initialized: bool) -> types.ModuleType:
    """The internal module the adapter asks whether the runtime already started."""
    module = types.ModuleType("mindspore._c_expression")
    context = types.SimpleNamespace(initialized=lambda: initialized)
    manager = types.SimpleNamespace(get_device_context=lambda target: context)
    module.DeviceContextManager = types.SimpleNamespace(get_instance=lambda: manager)
    return module


def test_mindspore_cpu_setup_sets_pynative_device_and_threads(install_mindspore):
    ms = install_mindspore()
    adapter = MindSporeAdapter()
    adapter.setup("cpu", 2)
    assert ms.calls == [("set_context", {"mode": 1}), ("set_device", "CPU", 0),
                        ("threads_num", 2)]
    assert adapter.threads() == 2
    info = adapter.info()
    assert info["mode"] == "PYNATIVE_MODE"
    assert info["device_target"] == "CPU"
    assert info["threads_read_back"] is False
    assert info["executor_module"] == "mindspore.graph.api"


def test_mindspore_threads_before_setup_is_the_documented_default(install_mindspore):
    install_mindspore()
    assert MindSporeAdapter().threads() == mindspore_adapter.DEFAULT_CPU_THREADS == 25


def test_mindspore_cpu_sync_uses_the_executor_only(install_mindspore):
    ms = install_mindspore()
    adapter = MindSporeAdapter()
    adapter.setup("cpu", 2)
    ms.calls.clear()
    adapter.sync()
    assert ms.calls == [GRAPH_SYNC]     # runtime.synchronize() only logs an error on CPU


def test_mindspore_executor_falls_back_to_common_api_before_2_9(install_mindspore):
    ms = install_mindspore(executor_modules=("mindspore.common.api",))
    adapter = MindSporeAdapter()
    adapter.setup("cpu", 2)
    ms.calls.clear()
    adapter.sync()
    assert ms.calls == [COMMON_SYNC]
    assert adapter.info()["executor_module"] == "mindspore.common.api"


def test_mindspore_executor_prefers_graph_api_when_both_exist(install_mindspore):
    ms = install_mindspore(executor_modules=("mindspore.graph.api", "mindspore.common.api"))
    adapter = MindSporeAdapter()
    ms.calls.clear()
    adapter.sync()
    assert ms.calls == [GRAPH_SYNC]


def test_mindspore_without_any_executor_is_unavailable(install_mindspore):
    install_mindspore(executor_modules=())
    with pytest.raises(FrameworkUnavailable, match="mindspore.graph.api or mindspore.common.api"):
        MindSporeAdapter()


def test_mindspore_gpu_absent_changes_nothing(install_mindspore):
    ms = install_mindspore()
    adapter = MindSporeAdapter()
    with pytest.raises(DeviceUnavailable) as err:
        adapter.setup("cuda", 2)
    assert str(err.value) == ("mindspore: cuda is not available here (this MindSpore build or "
                              "machine has no GPU device); devices here: cpu")
    assert ms.calls == []


def test_mindspore_ascend_index_beyond_the_cards(install_mindspore):
    install_mindspore(ascend_devices=1)
    with pytest.raises(DeviceUnavailable) as err:
        MindSporeAdapter().setup("ascend:1", 2)
    assert str(err.value) == ("mindspore: ascend:1 is not available here (1 Ascend device(s) "
                              "found); devices here: cpu, ascend:0")


@pytest.mark.parametrize("device,target,index", [("cuda:1", "GPU", 1), ("ascend", "Ascend", 0)])
def test_mindspore_device_setup_and_sync(install_mindspore, device, target, index):
    ms = install_mindspore(gpu_devices=2, ascend_devices=1)
    adapter = MindSporeAdapter()
    adapter.setup(device, 2)
    assert ("set_device", target, index) in ms.calls
    assert adapter.device() == f"{parse_device(device).kind}:{index}"
    ms.calls.clear()
    adapter.sync()
    # drain PyNative's dispatch queue, then wait for the device streams
    assert ms.calls == [GRAPH_SYNC, ("runtime.synchronize",)]


def test_mindspore_threads_are_set_once_per_process(install_mindspore):
    ms = install_mindspore()
    first, second = MindSporeAdapter(), MindSporeAdapter()
    first.setup("cpu", 2)
    second.setup("cpu", 4)
    assert [c for c in ms.calls if c[0] == "threads_num"] == [("threads_num", 2)]
    assert second.threads() == 2                  # the value really in force
    assert "4 was asked for but 2" in second.info()["notes"][0]


def test_mindspore_same_setup_twice_is_quiet(install_mindspore):
    install_mindspore()
    MindSporeAdapter().setup("cpu", 2)
    again = MindSporeAdapter()
    again.setup("cpu", 2)
    assert again.threads() == 2 and "notes" not in again.info()


def test_mindspore_threads_set_outside_opbench_cannot_be_known(install_mindspore):
    install_mindspore(threads_configured=True)
    with pytest.raises(FrameworkUnavailable, match="fresh process"):
        MindSporeAdapter().setup("cpu", 2)


def test_mindspore_cannot_switch_device_within_a_process(install_mindspore):
    install_mindspore(gpu_devices=1)
    MindSporeAdapter().setup("cpu", 2)
    with pytest.raises(DeviceUnavailable, match="already runs MindSpore on cpu"):
        MindSporeAdapter().setup("cuda", 2)


def test_mindspore_runtime_already_started_on_cpu_is_accepted_with_a_note(install_mindspore):
    install_mindspore(runtime_started=True, c_expression=fake_c_expression(initialized=True))
    adapter = MindSporeAdapter()
    adapter.setup("cpu", 2)
    assert adapter.threads() == 2
    assert "after the MindSpore runtime had started" in adapter.info()["notes"][0]


def test_mindspore_runtime_started_elsewhere_blocks_another_device(install_mindspore):
    install_mindspore(gpu_devices=1, runtime_started=True)
    with pytest.raises(DeviceUnavailable, match="runtime already started on CPU"):
        MindSporeAdapter().setup("cuda", 2)


def test_mindspore_quiets_glog_only_when_the_user_did_not_choose(install_mindspore, monkeypatch):
    ms = install_mindspore()
    monkeypatch.delitem(sys.modules, "mindspore")      # as if not yet imported
    monkeypatch.setenv("GLOG_v", "")                    # restored after the test

    def import_fake(name):
        sys.modules[name] = ms
        return ms

    monkeypatch.setattr(mindspore_adapter, "import_framework", import_fake)
    adapter = MindSporeAdapter()
    assert os.environ["GLOG_v"] == "3"
    assert adapter.info()["glog_v_set_by_opbench"] is True


def test_mindspore_keeps_the_users_glog_level(install_mindspore, monkeypatch):
    ms = install_mindspore()
    monkeypatch.delitem(sys.modules, "mindspore")
    monkeypatch.setenv("GLOG_v", "1")
    monkeypatch.setattr(mindspore_adapter, "import_framework",
                        lambda name: sys.modules.setdefault(name, ms))
    adapter = MindSporeAdapter()
    assert os.environ["GLOG_v"] == "1"
    assert adapter.info()["glog_v"] == "1"
    assert adapter.info()["glog_v_set_by_opbench"] is False


def test_mindspore_forward_backward_wraps_a_single_gradient_in_a_tuple(install_mindspore):
    ms = install_mindspore()
    requested = {}

    class FakeTensor(np.ndarray):
        pass

    def value_and_grad(fn, grad_position, has_aux):
        requested.update(grad_position=grad_position, has_aux=has_aux)

        def run(*inputs):
            loss, aux = fn(*inputs)
            return (loss, aux), inputs[0] * 0 + 1     # MindSpore: a bare tensor for 1 position
        return run

    ms.Tensor = FakeTensor
    ms.value_and_grad = value_and_grad
    x = np.arange(3.0).view(FakeTensor)
    step = MindSporeAdapter().forward_backward(lambda a, scale: a * scale, (x, 2.0), {}, (0,))
    output, grads = step()
    assert requested == {"grad_position": (0,), "has_aux": True}
    assert isinstance(grads, tuple) and len(grads) == 1
    np.testing.assert_array_equal(output, [0.0, 2.0, 4.0])


# ------------------------------------------------------------------------------- numpy
def test_numpy_has_only_the_host_cpu():
    with pytest.raises(DeviceUnavailable, match="numpy runs on the host CPU only"):
        NumpyAdapter().setup("cuda", 2)


def test_numpy_has_no_bfloat16():
    with pytest.raises(Unsupported, match="numpy has no bfloat16"):
        NumpyAdapter().from_numpy(np.zeros(2, np.float32), "bfloat16")


def test_numpy_has_no_autograd():
    adapter = NumpyAdapter()
    with pytest.raises(Unsupported, match="numpy has no autograd"):
        adapter.forward_backward(np.exp, (np.zeros(2),), {}, (0,))


def test_numpy_tensors_do_not_share_memory_with_the_input():
    source = np.zeros(3, np.float32)
    tensor = NumpyAdapter().from_numpy(source, "float32")
    tensor += 1
    assert source.tolist() == [0.0, 0.0, 0.0]


def test_numpy_resolves_functions_and_ndarray_methods():
    adapter = NumpyAdapter()
    assert adapter.resolve("numpy.add")(1, 2) == 3
    assert adapter.resolve("Tensor.sum")(np.ones((2, 2)), axis=0).tolist() == [2.0, 2.0]
    assert adapter.resolve("Tensor.__add__")(np.ones(1), 1).tolist() == [2.0]


def test_numpy_threads_through_threadpoolctl_when_installed(monkeypatch):
    limits = []
    fake = types.ModuleType("threadpoolctl")
    fake.threadpool_limits = lambda limits=None, user_api=None: limits_calls(limits, user_api)

    def limits_calls(n, user_api):
        limits.append((n, user_api))
        return object()

    fake.threadpool_info = lambda: [{"user_api": "blas", "num_threads": limits[-1][0]},
                                    {"user_api": "openmp", "num_threads": 64}]
    monkeypatch.setitem(sys.modules, "threadpoolctl", fake)
    adapter = NumpyAdapter()
    adapter.setup("cpu", 2)
    assert limits == [(2, "blas")]
    assert adapter.threads() == 2
    assert adapter.info()["threads_settable"] is True


def test_numpy_threads_without_threadpoolctl_come_from_the_environment(monkeypatch):
    monkeypatch.setitem(sys.modules, "threadpoolctl", None)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    adapter = NumpyAdapter()
    adapter.setup("cpu", 2)
    assert adapter.threads() == 3
    assert adapter.info()["threads_settable"] is False


# ------------------------------------------------------------------- registry, helpers
def test_importing_opbench_frameworks_imports_no_framework():
    code = ("import sys, opbench.frameworks, opbench.frameworks.torch_adapter, "
            "opbench.frameworks.mindspore_adapter, opbench.frameworks.numpy_adapter\n"
            "opbench.frameworks.available_frameworks()\n"
            "print(sorted(m for m in ('torch', 'mindspore') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, cwd=os.path.dirname(os.path.dirname(
                                os.path.dirname(os.path.abspath(__file__)))))
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("name,pin", [("mindspore", "mindspore==2.10.0"),
                                      ("torch", "torch==2.13.0")])
def test_missing_framework_says_how_to_install_it(monkeypatch, name, pin):
    monkeypatch.setitem(sys.modules, name, None)    # makes `import name` fail
    with pytest.raises(FrameworkUnavailable) as err:
        get_adapter(name)
    assert str(err.value).startswith(f"{name} is not installed: pip install {pin}")
    assert err.value.__suppress_context__              # no chained traceback to show


def test_broken_framework_is_not_called_missing(monkeypatch):
    def failing_import(name, package=None):
        raise OSError("libmindspore.so: cannot open shared object file")

    monkeypatch.setattr(loading.importlib, "import_module", failing_import)
    with pytest.raises(FrameworkUnavailable) as err:
        loading.import_framework("mindspore")
    assert str(err.value) == ("mindspore is installed but failed to import: OSError: "
                              "libmindspore.so: cannot open shared object file")


def test_unknown_framework_name_suggests():
    with pytest.raises(FrameworkUnavailable, match=r"unknown framework 'troch' \(did you mean "
                                                   r"'torch'\?\); known: torch, mindspore, numpy"):
        get_adapter("troch")


def test_available_frameworks_skips_missing_ones(monkeypatch):
    monkeypatch.setitem(sys.modules, "mindspore", None)
    found = available_frameworks()
    assert "mindspore" not in found and "numpy" in found
    assert set(found) <= set(FRAMEWORKS)


def test_get_adapter_builds_a_fresh_adapter_from_fakes(install_torch, install_mindspore):
    install_torch()
    install_mindspore()
    assert isinstance(get_adapter("torch"), TorchAdapter)
    assert isinstance(get_adapter("mindspore"), MindSporeAdapter)
    assert get_adapter("torch") is not get_adapter("torch")


@pytest.mark.parametrize("text,spec", [("cpu", DeviceSpec("cpu")), ("cuda", DeviceSpec("cuda")),
                                       ("CUDA:3", DeviceSpec("cuda", 3)),
                                       ("gpu:1", DeviceSpec("cuda", 1)),
                                       ("ascend:0", DeviceSpec("ascend", 0)),
                                       ("npu", DeviceSpec("ascend"))])
def test_parse_device(text, spec):
    assert parse_device(text) == spec


@pytest.mark.parametrize("text,message", [("tpu", "unknown device 'tpu'"),
                                          ("cpu:0", "cpu takes no index"),
                                          ("cuda:x", "non-negative integer"),
                                          ("cuda:-1", "non-negative integer")])
def test_parse_device_errors(text, message):
    with pytest.raises(DeviceUnavailable, match=message):
        parse_device(text)


def test_dtype_names_are_checked_with_a_suggestion():
    assert check_dtype("bfloat16") == "bfloat16"
    with pytest.raises(ValueError, match=r"unknown dtype 'float23' \(did you mean 'float32'\?\)"):
        check_dtype("float23")


def test_carrier_copy_owns_its_memory_and_carries_bfloat16_as_float32():
    source = np.arange(4, dtype=np.float32)[::2]       # not contiguous
    copy = carrier_copy(source, "bfloat16")
    assert copy.dtype == np.float32 and copy.flags.c_contiguous
    copy[0] = 99
    assert source[0] == 0


def test_nested_to_numpy_keeps_structure():
    Pair = namedtuple("Pair", "values indices")
    doubled = nested_to_numpy(Pair([1.0], 2), lambda v: isinstance(v, list),
                              lambda v: np.asarray(v) * 2)
    assert isinstance(doubled, tuple) and not isinstance(doubled, Pair)
    assert doubled[0].tolist() == [2.0]
    assert doubled[1].shape == () and doubled[1] == 2
    scalars = nested_to_numpy((None, True, np.float32(1.5)), lambda v: False, np.asarray)
    assert scalars[0] is None
    assert scalars[1].dtype == np.bool_ and scalars[2].dtype == np.float32


def test_nested_to_numpy_rejects_unknown_types():
    with pytest.raises(TypeError, match="cannot convert an output of type builtins.dict"):
        nested_to_numpy({"a": 1}, lambda v: False, np.asarray)


def test_weighted_pairs():
    assert weighted_pairs("out", None) == [("out", None)]
    assert weighted_pairs(("v", "i"), ("w", None)) == [("v", "w")]
    with pytest.raises(ValueError, match="1 weight\\(s\\) but the operator returned 2"):
        weighted_pairs(("v", "i"), "w")
    with pytest.raises(ValueError, match="skips every output"):
        weighted_pairs(("v",), (None,))


@pytest.mark.parametrize("positions,message", [((), "at least one"), ((2,), "out of range"),
                                               ((1,), "is not a tensor \\(got int\\)"),
                                               ((0, 0), "repeat")])
def test_check_grad_positions(positions, message):
    with pytest.raises(ValueError, match=message):
        check_grad_positions((np.zeros(1), 3), positions, lambda v: isinstance(v, np.ndarray))


# --------------------------------------------------------------------------- launch modes
def test_torch_cpu_launches_are_always_blocking_and_blocking_them_changes_nothing(
        install_torch, monkeypatch):
    monkeypatch.delenv("CUDA_LAUNCH_BLOCKING", raising=False)
    install_torch(cuda_devices=1, cuda_build=True)
    adapter = TorchAdapter()
    adapter.setup("cpu", 2)
    assert adapter.launch() == "blocking"
    adapter.block_launches()
    assert "CUDA_LAUNCH_BLOCKING" not in os.environ
    assert adapter.info()["launch"] == "blocking"


def test_torch_cuda_blocking_sets_the_variable_before_cuda_starts(install_torch, monkeypatch):
    monkeypatch.delenv("CUDA_LAUNCH_BLOCKING", raising=False)
    torch = install_torch(cuda_devices=1, cuda_build=True)
    torch.cuda.is_initialized = lambda: False
    adapter = TorchAdapter()
    adapter.setup("cuda", 2)
    assert adapter.launch() == "queued"
    adapter.block_launches()
    assert os.environ["CUDA_LAUNCH_BLOCKING"] == "1"
    assert adapter.launch() == "blocking"


def test_torch_cuda_blocking_after_cuda_started_is_refused_with_the_fix(install_torch,
                                                                        monkeypatch):
    monkeypatch.delenv("CUDA_LAUNCH_BLOCKING", raising=False)
    torch = install_torch(cuda_devices=1, cuda_build=True)
    torch.cuda.is_initialized = lambda: True
    adapter = TorchAdapter()
    adapter.setup("cuda", 2)
    with pytest.raises(ValueError, match="set it in the environment before starting"):
        adapter.block_launches()
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")   # set by the user beforehand: fine
    adapter.block_launches()
    assert adapter.launch() == "blocking"


def test_torch_ascend_blocking_uses_the_npu_variable(install_torch, monkeypatch):
    monkeypatch.delenv("ASCEND_LAUNCH_BLOCKING", raising=False)
    torch = install_torch(npu_devices=1)
    adapter = TorchAdapter()
    adapter.setup("ascend", 2)
    torch.npu.is_initialized = lambda: False
    adapter.block_launches()
    assert os.environ["ASCEND_LAUNCH_BLOCKING"] == "1"


def test_mindspore_blocking_calls_launch_blocking_once_per_process(install_mindspore):
    ms = install_mindspore()
    ms.runtime.launch_blocking = lambda: ms.calls.append(("runtime.launch_blocking",))
    adapter = MindSporeAdapter()
    adapter.setup("cpu", 2)
    assert adapter.launch() == "queued"
    adapter.block_launches()
    MindSporeAdapter().block_launches()      # a second adapter in the process: no second call
    assert ms.calls.count(("runtime.launch_blocking",)) == 1
    assert adapter.launch() == "blocking" and adapter.info()["launch"] == "blocking"


def test_mindspore_without_launch_blocking_says_which_version_has_it(install_mindspore):
    install_mindspore()
    adapter = MindSporeAdapter()
    adapter.setup("cpu", 2)
    with pytest.raises(FrameworkUnavailable, match="launch_blocking.*--launch queued"):
        adapter.block_launches()


def test_numpy_launches_are_blocking():
    assert NumpyAdapter().launch() == "blocking"

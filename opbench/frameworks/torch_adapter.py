"""PyTorch adapter: CPU, CUDA, and Ascend through torch_npu when it is installed.

torch is imported when the adapter is created, never when this module is imported.
"""
from __future__ import annotations

import importlib
import os
import types
from typing import Any, Callable

import numpy as np

from opbench.config import LAUNCH_BLOCKING, LAUNCH_QUEUED
from opbench.frameworks.base import Adapter, DeviceUnavailable, check_thread_count
from opbench.frameworks.devices import (
    ASCEND,
    CPU,
    CUDA,
    DeviceSpec,
    absent_device_message,
    indexed,
    parse_device,
)
from opbench.frameworks.dtypes import BFLOAT16, TORCH_DTYPE_ATTRS, carrier_copy
from opbench.frameworks.loading import import_framework
from opbench.frameworks.outputs import (
    check_grad_positions,
    nested_to_numpy,
    weighted_loss,
    weighted_pairs,
    with_replaced,
)
from opbench.frameworks.resolve import resolve_api
from opbench.profiles.events import Profile
from opbench.profiles.torch_trace import read_torch_trace

# Huawei's out-of-tree backend: importing it registers torch.npu and the "npu" device type.
TORCH_NPU_MODULE = "torch_npu"
# The switches that make each device backend launch kernels synchronously; both are read when
# the backend initialises, so they must be in the environment before the first kernel.
LAUNCH_BLOCKING_ENV = {CUDA: "CUDA_LAUNCH_BLOCKING", ASCEND: "ASCEND_LAUNCH_BLOCKING"}


def known_build(git_version: Any) -> str | None:
    """torch's git_version as a build name; None when torch does not know it."""
    text = str(git_version or "").strip()
    return None if not text or text.lower() == "unknown" else text


def _no_sync() -> None:
    """CPU operators run synchronously in the calling thread: nothing is queued."""


class TorchAdapter(Adapter):
    name = "torch"

    def __init__(self) -> None:
        self._torch = import_framework("torch")
        self._spec = DeviceSpec(CPU)
        self._device = self._torch.device("cpu")
        self._sync: Callable[[], None] = _no_sync
        self._notes: list[str] = []

    # -- identity -------------------------------------------------------------------------
    def version(self) -> str:
        return str(self._torch.__version__)

    def build(self) -> str | None:
        """torch.version.git_version: the commit torch was built from ("Unknown" in a build
        made outside a git checkout)."""
        return known_build(getattr(self._torch.version, "git_version", None))

    def device(self) -> str:
        return CPU if self._spec.kind == CPU else f"{self._spec.kind}:{self._spec.index_or_default}"

    def devices(self) -> tuple[str, ...]:
        found = [CPU]
        cuda = self._torch.cuda
        if cuda.is_available():
            found += indexed(CUDA, cuda.device_count())
        npu = self._npu_module()
        if npu is not None and npu.is_available():
            found += indexed(ASCEND, npu.device_count())
        return tuple(found)

    def info(self) -> dict[str, Any]:
        facts = super().info()
        facts["interop_threads"] = self._torch.get_num_interop_threads()
        facts["cuda_build"] = getattr(self._torch.version, "cuda", None)
        if self._notes:
            facts["notes"] = list(self._notes)
        return facts

    # -- setup ----------------------------------------------------------------------------
    def setup(self, device: str, threads: int) -> None:
        check_thread_count(threads)
        spec = parse_device(device)
        torch_device, sync = self._select(spec)
        torch = self._torch
        torch.set_num_threads(threads)
        try:
            # The inter-op pool only runs independent ops in parallel (TorchScript forks); it
            # is set equal anyway so no extra threads compete for the cores. torch allows it
            # once, before any parallel work: later it stays as it is, which info() reports.
            torch.set_num_interop_threads(threads)
        except RuntimeError:
            note = (f"inter-op threads could not be set to {threads} (torch allows it only "
                    f"before parallel work starts); in force: {torch.get_num_interop_threads()}")
            if note not in self._notes:
                self._notes.append(note)
        self._spec, self._device, self._sync = spec, torch_device, sync

    def _select(self, spec: DeviceSpec) -> tuple[Any, Callable[[], None]]:
        torch = self._torch
        if spec.kind == CPU:
            return torch.device("cpu"), _no_sync
        if spec.kind == CUDA:
            cuda = torch.cuda
            if not cuda.is_available():
                reason = ("this torch build has no CUDA support"
                          if getattr(torch.version, "cuda", None) is None
                          else "no CUDA device or driver found")
                raise DeviceUnavailable(absent_device_message(self.name, spec, reason,
                                                              self.devices()))
            self._check_index(spec, cuda.device_count(), "CUDA")
            index = spec.index_or_default
            cuda.set_device(index)
            torch_device = torch.device("cuda", index)
            return torch_device, lambda: cuda.synchronize(torch_device)
        npu = self._npu_module()
        if npu is None:
            raise DeviceUnavailable(absent_device_message(
                self.name, spec, f"torch reaches Ascend through the {TORCH_NPU_MODULE} package, "
                "which is not installed", self.devices()))
        if not npu.is_available():
            raise DeviceUnavailable(absent_device_message(
                self.name, spec, "no Ascend device or driver found", self.devices()))
        self._check_index(spec, npu.device_count(), "Ascend")
        index = spec.index_or_default
        npu.set_device(index)
        torch_device = torch.device("npu", index)
        return torch_device, lambda: npu.synchronize(torch_device)

    def _check_index(self, spec: DeviceSpec, count: int, label: str) -> None:
        if spec.index_or_default >= count:
            raise DeviceUnavailable(absent_device_message(
                self.name, spec, f"{count} {label} device(s) found", self.devices()))

    def _npu_module(self) -> types.ModuleType | None:
        """torch.npu after importing torch_npu, or None when torch_npu is not installed."""
        try:
            importlib.import_module(TORCH_NPU_MODULE)
        except ModuleNotFoundError as err:
            if err.name == TORCH_NPU_MODULE:
                return None
            raise   # installed but broken: the user must see why, not "not installed"
        return getattr(self._torch, "npu", None)

    def threads(self) -> int:
        return int(self._torch.get_num_threads())

    def block_launches(self) -> None:
        """CPU: nothing to do (operators run in the call). CUDA / Ascend: set the backend's
        launch-blocking variable, which it reads only when it initialises."""
        variable = LAUNCH_BLOCKING_ENV.get(self._spec.kind)
        if variable is None or os.environ.get(variable) == "1":
            return
        if self._backend_initialized():
            raise ValueError(
                f"torch: cannot make {self._spec.kind} launches blocking: the backend already "
                f"started in this process without {variable}=1; set it in the environment "
                f"before starting opbench")
        os.environ[variable] = "1"

    def _backend_initialized(self) -> bool:
        if self._spec.kind == CUDA:
            return bool(self._torch.cuda.is_initialized())
        npu = getattr(self._torch, "npu", None)
        is_initialized = getattr(npu, "is_initialized", None)
        return bool(is_initialized()) if callable(is_initialized) else False

    def launch(self) -> str:
        variable = LAUNCH_BLOCKING_ENV.get(self._spec.kind)
        if variable is None:
            return LAUNCH_BLOCKING   # CPU operators are synchronous
        return LAUNCH_BLOCKING if os.environ.get(variable) == "1" else LAUNCH_QUEUED

    # -- tensors --------------------------------------------------------------------------
    def resolve(self, api: str) -> Callable[..., Any]:
        return resolve_api(api, "torch", lambda: self._torch.Tensor)

    def from_numpy(self, array: np.ndarray, dtype: str, requires_grad: bool = False) -> Any:
        torch = self._torch
        tensor = torch.from_numpy(carrier_copy(array, dtype))
        tensor = tensor.to(device=self._device, dtype=getattr(torch, TORCH_DTYPE_ATTRS[dtype]))
        if requires_grad:
            tensor.requires_grad_(True)
        self.sync()
        return tensor

    def to_numpy(self, value: Any) -> Any:
        torch = self._torch

        def convert(tensor: Any) -> np.ndarray:
            tensor = tensor.detach()
            if tensor.dtype == getattr(torch, BFLOAT16):
                tensor = tensor.float()
            # Copy: the result must not change if an in-place operator later writes the tensor.
            return np.array(tensor.cpu().resolve_conj().resolve_neg().numpy(), copy=True)

        return nested_to_numpy(value, lambda v: isinstance(v, torch.Tensor), convert)

    def sync(self) -> None:
        self._sync()

    def syncs_nothing(self) -> bool:
        return self._sync is _no_sync

    def trivial_op(self) -> Callable[[], Any]:
        a = self._torch.ones(1, device=self._device)
        b = self._torch.ones(1, device=self._device)
        self.sync()

        def add_one_element() -> Any:
            return a + b

        return add_one_element

    # -- autograd -------------------------------------------------------------------------
    def profile_calls(self, run: Callable[[], None], workdir: str) -> Profile:
        """torch.profiler with the CPU activity (and CUDA's on a CUDA device), exported as a
        Chrome trace and read by opbench/profiles/torch_trace.py: the same reader a user's
        own trace goes through."""
        from torch.profiler import ProfilerActivity, profile
        activities = [ProfilerActivity.CPU]
        if self.device().startswith("cuda"):
            activities.append(ProfilerActivity.CUDA)
        with profile(activities=activities, record_shapes=True) as prof:
            run()
        path = os.path.join(workdir, "torch_trace.json")
        prof.export_chrome_trace(path)
        return read_torch_trace(path, allow_empty=True)

    def forward_backward(self, fn: Callable[..., Any], args: tuple, kwargs: dict,
                         grad_positions: tuple[int, ...],
                         grad_weight: Any = None) -> Callable[[], Any]:
        torch = self._torch
        positions = tuple(grad_positions)
        check_grad_positions(args, positions, lambda v: isinstance(v, torch.Tensor))
        # Fresh leaves made once, outside the timed call: the caller's tensors keep their
        # requires_grad state, and no copy is part of a sample.
        leaves = tuple(args[p].detach().requires_grad_(True) for p in positions)
        full_args = with_replaced(args, positions, leaves)

        def forward_and_backward() -> tuple[Any, tuple[Any, ...]]:
            output = fn(*full_args, **kwargs)
            loss = weighted_loss(weighted_pairs(output, grad_weight))
            # autograd.grad returns the gradients instead of accumulating into .grad, so
            # repeated calls do not add up and every call does the same work.
            grads = torch.autograd.grad(loss, leaves, allow_unused=True)
            grads = tuple(torch.zeros_like(leaf) if grad is None else grad
                          for leaf, grad in zip(leaves, grads))
            return output, grads

        return forward_and_backward

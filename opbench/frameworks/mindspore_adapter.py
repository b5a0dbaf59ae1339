"""MindSpore adapter: PyNative mode on CPU, GPU ("cuda") or Ascend.

MindSpore's device and CPU kernel thread count are process-global and only take effect when
set before the runtime starts (before the first operator runs), and the thread count can be
set only once per process and never read back. So:
- call `setup()` before creating tensors or running any MindSpore operator;
- what opbench set is remembered for the whole process (`_PROCESS`), so a second adapter in
  the same process reports the values really in force instead of what it asked for.

mindspore is imported when the adapter is created, never when this module is imported.
"""
from __future__ import annotations

import importlib
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from opbench.config import LAUNCH_BLOCKING, LAUNCH_QUEUED
from opbench.frameworks.base import (
    Adapter,
    DeviceUnavailable,
    FrameworkUnavailable,
    check_thread_count,
)
from opbench.frameworks.devices import (
    ASCEND,
    CPU,
    CUDA,
    DeviceSpec,
    absent_device_message,
    indexed,
    parse_device,
)
from opbench.frameworks.dtypes import BFLOAT16, MINDSPORE_DTYPE_ATTRS, carrier_copy
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
from opbench.profiles.mindspore_output import read_mindspore_profile

# MindSpore's device_target names for opbench's device kinds.
DEVICE_TARGETS = {CPU: "CPU", CUDA: "GPU", ASCEND: "Ascend"}
# MindSpore's documented CPU kernel thread count when nobody sets it
# (mindspore.device_context.cpu.op_tuning.threads_num).
DEFAULT_CPU_THREADS = 25
# glog verbosity opbench asks for when the user has not chosen one: 3 = ERROR only. At the
# default (2 = WARNING) `import mindspore` and device probes write lines to stderr that bury
# opbench's own output. Applied only before mindspore is first imported (glog reads it then).
QUIET_GLOG_LEVEL = "3"
GLOG_ENV = "GLOG_v"
# Where the PyNative executor lives: its sync() drains the queue of dispatched operators.
# Moved to mindspore.graph.api in 2.9; mindspore.common.api before.
EXECUTOR_MODULES = ("mindspore.graph.api", "mindspore.common.api")
MODE_NAMES = {0: "GRAPH_MODE", 1: "PYNATIVE_MODE"}
# The file a MindSpore wheel names its source commit in, beside its __init__.py:
# `__commit_id__ = '[sha1]:2d550373,[branch]:(HEAD,origin/r2.10,r2.10)'` (2.8.0 to 2.10.0).
COMMIT_ID_FILE = ".commit_id"
_COMMIT_SHA = re.compile(r"\[sha1\]:\s*([0-9a-fA-F]{6,40})")


def parse_commit_id(text: str) -> str | None:
    """The commit hash in a .commit_id file's text; None when it names none."""
    match = _COMMIT_SHA.search(text)
    return match.group(1) if match else None


def read_commit_id(package_dir: str) -> str | None:
    """The commit of the MindSpore installed in `package_dir`; None without a readable
    .commit_id (a build from source may have none)."""
    try:
        with open(os.path.join(package_dir, COMMIT_ID_FILE), encoding="utf-8") as f:
            return parse_commit_id(f.read())
    except (OSError, UnicodeDecodeError):
        return None


@dataclass
class _ProcessState:
    """What opbench has set in this process's MindSpore runtime (it cannot be undone)."""

    device: str | None = None
    threads: int | None = None
    launch_blocking: bool = False    # launch_blocking() cannot be undone in a process
    glog_set_by_opbench: bool = False
    notes: list[str] = field(default_factory=list)


_PROCESS = _ProcessState()


def _note(text: str) -> None:
    """Record a process-wide fact once (several adapters may hit the same one)."""
    if text not in _PROCESS.notes:
        _PROCESS.notes.append(text)


def find_pynative_executor() -> tuple[Any, str]:
    """The PyNative executor and the module it was found in (newest location first)."""
    for module_name in EXECUTOR_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        executor = getattr(module, "_pynative_executor", None)
        if executor is not None:
            return executor, module_name
    raise FrameworkUnavailable(
        "mindspore: cannot find _pynative_executor in " + " or ".join(EXECUTOR_MODULES) +
        "; opbench cannot wait for queued MindSpore operators with this version")


class MindSporeAdapter(Adapter):
    name = "mindspore"

    def __init__(self) -> None:
        if "mindspore" not in sys.modules and not os.environ.get(GLOG_ENV):
            os.environ[GLOG_ENV] = QUIET_GLOG_LEVEL
            _PROCESS.glog_set_by_opbench = True
        self._ms = import_framework("mindspore")
        self._executor, self._executor_module = find_pynative_executor()
        self._spec = DeviceSpec(CPU)
        self._sync: Callable[[], None] = self._executor.sync

    # -- identity -------------------------------------------------------------------------
    def version(self) -> str:
        return str(self._ms.__version__)

    def build(self) -> str | None:
        """The commit in the package's .commit_id file (2.8.0: be319822, 2.9.0: 4bcfac44,
        2.10.0: 2d550373 in the wheels from PyPI); None without the file."""
        package_file = getattr(self._ms, "__file__", None)   # None: a namespace or a fake
        return read_commit_id(os.path.dirname(package_file)) if package_file else None

    def device(self) -> str:
        return CPU if self._spec.kind == CPU else f"{self._spec.kind}:{self._spec.index_or_default}"

    def devices(self) -> tuple[str, ...]:
        found = [CPU]
        for kind in (CUDA, ASCEND):
            count = self._device_count(kind)
            found += indexed(kind, count)
        return tuple(found)

    def _device_count(self, kind: str) -> int:
        """How many devices of `kind` this MindSpore build can use here (0 when the build or
        the machine has none)."""
        context = getattr(self._ms.device_context, "gpu" if kind == CUDA else "ascend", None)
        if context is None or not context.is_available():
            return 0
        try:
            return int(context.device_count())
        except RuntimeError:  # the build supports the device but no driver/card is present
            return 0

    def info(self) -> dict[str, Any]:
        ms = self._ms
        facts = super().info()
        facts.update({
            # threads_num() can be set but not read: the value above is the one opbench set
            # (or MindSpore's documented default), not a read-back.
            "threads_read_back": False,
            "mode": MODE_NAMES.get(ms.get_context("mode"), str(ms.get_context("mode"))),
            "device_target": ms.get_context("device_target"),
            "glog_v": os.environ.get(GLOG_ENV),
            "glog_v_set_by_opbench": _PROCESS.glog_set_by_opbench,
            "executor_module": self._executor_module,
        })
        if _PROCESS.notes:
            facts["notes"] = list(_PROCESS.notes)
        return facts

    # -- setup ----------------------------------------------------------------------------
    def setup(self, device: str, threads: int) -> None:
        """Must run before any MindSpore operator: device and thread count are process-global
        and fixed once the runtime starts."""
        check_thread_count(threads)
        spec = parse_device(device)
        target = DEVICE_TARGETS[spec.kind]
        if spec.kind != CPU:
            count = self._device_count(spec.kind)
            if spec.index_or_default >= count:
                reason = (f"this MindSpore build or machine has no {target} device" if count == 0
                          else f"{count} {target} device(s) found")
                raise DeviceUnavailable(absent_device_message(self.name, spec, reason,
                                                              self.devices()))
        runtime_started = self._runtime_started(target)
        ms = self._ms
        ms.set_context(mode=ms.PYNATIVE_MODE)
        self._set_device(spec, target)
        self._set_threads(threads, runtime_started)
        self._spec = spec
        self._sync = self._executor.sync if spec.kind == CPU else self._sync_device

    def _set_device(self, spec: DeviceSpec, target: str) -> None:
        wanted = CPU if spec.kind == CPU else f"{spec.kind}:{spec.index_or_default}"
        if _PROCESS.device is not None:
            if _PROCESS.device != wanted:
                raise DeviceUnavailable(
                    f"mindspore: this process already runs MindSpore on {_PROCESS.device} and "
                    f"MindSpore cannot switch devices within a process; use a new process "
                    f"for {wanted}")
            return
        ms = self._ms
        try:
            ms.set_device(target, spec.index_or_default)
        except RuntimeError as err:
            # Raised when an operator already started the runtime. Harmless if it runs on the
            # target asked for (typically CPU, MindSpore's default); otherwise it is stuck.
            if ms.get_context("device_target") != target:
                first_line = str(err).strip().splitlines()[0] if str(err).strip() else ""
                raise DeviceUnavailable(
                    f"mindspore: cannot switch to {wanted}: the runtime already started on "
                    f"{ms.get_context('device_target')} ({first_line}); call setup before "
                    f"running any MindSpore operator") from err
        _PROCESS.device = wanted

    def _set_threads(self, threads: int, runtime_started: bool | None) -> None:
        if _PROCESS.threads is not None:
            if _PROCESS.threads != threads:
                _note(
                    f"threads_num is set once per process: {threads} was asked for but "
                    f"{_PROCESS.threads} (set earlier in this process) stays in force")
            return
        try:
            self._ms.device_context.cpu.op_tuning.threads_num(threads)
        except RuntimeError as err:
            raise FrameworkUnavailable(
                "mindspore: the CPU thread count was already set in this process by code "
                "outside opbench, and MindSpore cannot report its value, so the two frameworks "
                "cannot be compared at equal thread counts; run opbench in a fresh process "
                f"({err})") from err
        _PROCESS.threads = threads
        if runtime_started:
            _note(
                f"threads_num({threads}) was called after the MindSpore runtime had started "
                f"(an operator ran before setup); MindSpore may keep its previous thread count")

    def _runtime_started(self, target: str) -> bool | None:
        """Has an operator already started the runtime on `target`? None when this MindSpore
        version does not let us ask (the check uses an internal, unversioned interface)."""
        try:
            from mindspore._c_expression import DeviceContextManager  # noqa: PLC0415
            context = DeviceContextManager.get_instance().get_device_context(target)
        except Exception:  # noqa: BLE001 - internal API; absent or changed means "unknown"
            return None
        return bool(context is not None and context.initialized())

    def block_launches(self) -> None:
        """mindspore.runtime.launch_blocking(): every op runs to completion in the call
        instead of going through PyNative's launch queue. Process-wide and permanent."""
        if _PROCESS.launch_blocking:
            return
        runtime = getattr(self._ms, "runtime", None)
        blocking = getattr(runtime, "launch_blocking", None)
        if blocking is None:
            raise FrameworkUnavailable(
                f"mindspore {self.version()} has no mindspore.runtime.launch_blocking(); "
                f"blocking launches need MindSpore 2.3 or newer (use --launch queued)")
        blocking()
        _PROCESS.launch_blocking = True

    def launch(self) -> str:
        return LAUNCH_BLOCKING if _PROCESS.launch_blocking else LAUNCH_QUEUED

    def threads(self) -> int:
        return DEFAULT_CPU_THREADS if _PROCESS.threads is None else _PROCESS.threads

    # -- tensors --------------------------------------------------------------------------
    def resolve(self, api: str) -> Callable[..., Any]:
        return resolve_api(api, "mindspore", lambda: self._ms.Tensor)

    def from_numpy(self, array: np.ndarray, dtype: str, requires_grad: bool = False) -> Any:
        """requires_grad is accepted for the common interface but has no effect: MindSpore
        differentiates by argument position (forward_backward), not by tensor flags."""
        ms = self._ms
        ms_dtype = getattr(ms, MINDSPORE_DTYPE_ATTRS[dtype])
        tensor = ms.Tensor(carrier_copy(array, dtype), dtype=ms_dtype)
        tensor = self._place(tensor)
        self.sync()
        return tensor

    def _place(self, tensor: Any) -> Any:
        """Copy a host tensor to the device now, so the copy never lands inside a sample
        (PyNative would otherwise copy it when the first operator uses it)."""
        if self._spec.kind == ASCEND:
            return tensor.to("Ascend")            # Tensor.to(device) supports CPU and Ascend
        if self._spec.kind == CUDA:
            return tensor.move_to("GPU", blocking=True)   # the one copy API that takes GPU
        return tensor

    def to_numpy(self, value: Any) -> Any:
        ms = self._ms

        def convert(tensor: Any) -> np.ndarray:
            if tensor.dtype == getattr(ms, BFLOAT16):
                tensor = tensor.astype(ms.float32)
            # Copy: asnumpy() may share the tensor's host memory.
            return np.array(tensor.asnumpy(), copy=True)

        return nested_to_numpy(value, self._is_tensor, convert)

    def _is_tensor(self, value: Any) -> bool:
        # asnumpy: older versions return lazy StubTensor objects that are not Tensor subclasses
        return isinstance(value, self._ms.Tensor) or (
            hasattr(value, "asnumpy") and not isinstance(value, np.ndarray))

    def sync(self) -> None:
        self._sync()

    def _sync_device(self) -> None:
        # The executor sync drains PyNative's host-side dispatch queue; runtime.synchronize()
        # then waits for every stream on the device (on CPU it only logs an error).
        self._executor.sync()
        self._ms.runtime.synchronize()

    def trivial_op(self) -> Callable[[], Any]:
        ms = self._ms
        a = self._place(ms.Tensor(np.ones(1, dtype=np.float32)))
        b = self._place(ms.Tensor(np.ones(1, dtype=np.float32)))
        self.sync()

        def add_one_element() -> Any:
            return a + b

        return add_one_element

    # -- autograd -------------------------------------------------------------------------
    def profile_calls(self, run: Callable[[], None], workdir: str) -> Profile:
        """mindspore.Profiler with the CPU activity (and NPU's on Ascend), stopped and
        analysed into `workdir`, read by opbench/profiles/mindspore_output.py. On the CPU
        it records each kernel (HostCpuOps); analyse() took ~1.0 s here per profile."""
        from mindspore import Profiler
        from mindspore.profiler import ProfilerActivity
        activities = [ProfilerActivity.CPU]
        if self.device().startswith("ascend"):
            activities.append(ProfilerActivity.NPU)
        profiler = Profiler(output_path=workdir, activities=activities)
        try:
            run()
            self.sync()
        finally:
            profiler.stop()
        profiler.analyse()
        return read_mindspore_profile(workdir, allow_empty=True)

    def forward_backward(self, fn: Callable[..., Any], args: tuple, kwargs: dict,
                         grad_positions: tuple[int, ...],
                         grad_weight: Any = None) -> Callable[[], Any]:
        ms = self._ms
        positions = tuple(grad_positions)
        check_grad_positions(args, positions, self._is_tensor)
        inputs = tuple(args[p] for p in positions)

        def loss_and_output(*grad_inputs: Any) -> tuple[Any, Any]:
            output = fn(*with_replaced(args, positions, grad_inputs), **kwargs)
            return weighted_loss(weighted_pairs(output, grad_weight)), output

        # has_aux: the forward output rides along with the loss without being differentiated.
        value_and_grad = ms.value_and_grad(loss_and_output,
                                           grad_position=tuple(range(len(positions))),
                                           has_aux=True)

        def forward_and_backward() -> tuple[Any, tuple[Any, ...]]:
            (_loss, output), grads = value_and_grad(*inputs)
            # MindSpore returns a bare tensor, not a 1-tuple, for a single position.
            if not isinstance(grads, (tuple, list)):
                grads = (grads,)
            return output, tuple(grads)

        return forward_and_backward

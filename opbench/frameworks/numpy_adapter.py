"""numpy as a third, reference framework: host CPU only, no bfloat16, no autograd.

numpy's own kernels run on the calling thread; only BLAS-backed functions (matmul, linalg)
use a thread pool, which numpy cannot resize. threadpoolctl can, so it is used when
installed; otherwise the BLAS pool keeps the size its environment variables gave it at
import, and threads() reports that (or the core count, OpenBLAS's default).
"""
from __future__ import annotations

import importlib
import os
from typing import Any, Callable

import numpy as np

from opbench.config import LAUNCH_BLOCKING
from opbench.frameworks.base import Adapter, DeviceUnavailable, Unsupported, check_thread_count
from opbench.frameworks.devices import CPU, absent_device_message, parse_device
from opbench.frameworks.dtypes import BFLOAT16, carrier_copy
from opbench.frameworks.outputs import nested_to_numpy
from opbench.frameworks.resolve import resolve_api

THREADPOOLCTL_MODULE = "threadpoolctl"
# Read by OpenBLAS / MKL / BLIS when numpy loads them, in this order of precedence.
BLAS_THREAD_ENV_VARS = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")


class NumpyAdapter(Adapter):
    name = "numpy"

    def __init__(self) -> None:
        self._limiter: Any = None   # threadpoolctl's limits object, kept alive while in force

    def version(self) -> str:
        return np.__version__

    def device(self) -> str:
        return CPU

    def setup(self, device: str, threads: int) -> None:
        check_thread_count(threads)
        spec = parse_device(device)
        if spec.kind != CPU:
            raise DeviceUnavailable(absent_device_message(
                self.name, spec, "numpy runs on the host CPU only", self.devices()))
        threadpoolctl = self._threadpoolctl()
        if threadpoolctl is not None:
            self._limiter = threadpoolctl.threadpool_limits(limits=threads, user_api="blas")

    def launch(self) -> str:
        return LAUNCH_BLOCKING   # every numpy call runs to completion before it returns

    def threads(self) -> int:
        threadpoolctl = self._threadpoolctl()
        if threadpoolctl is not None:
            pools = [p["num_threads"] for p in threadpoolctl.threadpool_info()
                     if p.get("user_api") == "blas"]
            if pools:
                return int(max(pools))
        for variable in BLAS_THREAD_ENV_VARS:
            value = os.environ.get(variable, "")
            if value.isdigit() and int(value) > 0:
                return int(value)
        return os.cpu_count() or 1

    def info(self) -> dict[str, Any]:
        facts = super().info()
        facts["threads_settable"] = self._threadpoolctl() is not None
        return facts

    @staticmethod
    def _threadpoolctl() -> Any:
        try:
            return importlib.import_module(THREADPOOLCTL_MODULE)
        except ModuleNotFoundError as err:
            if err.name == THREADPOOLCTL_MODULE:
                return None
            raise

    def resolve(self, api: str) -> Callable[..., Any]:
        return resolve_api(api, "numpy", lambda: np.ndarray)

    def from_numpy(self, array: np.ndarray, dtype: str, requires_grad: bool = False) -> Any:
        """requires_grad is ignored: the forward is still a valid reference, and
        forward_backward says clearly that numpy has no autograd."""
        if dtype == BFLOAT16:
            raise Unsupported("numpy has no bfloat16 dtype; leave the numpy section out of "
                              "bfloat16 cases")
        return carrier_copy(array, dtype)

    def to_numpy(self, value: Any) -> Any:
        return nested_to_numpy(value, lambda v: False, np.asarray)

    def sync(self) -> None:
        """numpy computes eagerly in the calling thread: nothing is ever queued."""

    def trivial_op(self) -> Callable[[], Any]:
        a = np.ones(1, dtype=np.float32)
        b = np.ones(1, dtype=np.float32)

        def add_one_element() -> Any:
            return a + b

        return add_one_element

    def forward_backward(self, fn: Callable[..., Any], args: tuple, kwargs: dict,
                         grad_positions: tuple[int, ...],
                         grad_weight: Any = None) -> Callable[[], Any]:
        raise Unsupported("numpy has no autograd: backward cases compare torch and mindspore "
                          "only; leave numpy out of them")

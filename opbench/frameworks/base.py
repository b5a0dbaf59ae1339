"""The adapter interface every framework implements. CONTRACT.

History of compatible additions (callers written against the first version keep working):
- `forward_backward` gained `grad_weight` (default None = the original "sum of outputs" loss),
  so both frameworks can be given the same random upstream gradient instead of all-ones, which
  hides errors that a constant cotangent cancels out.
- `devices()` lists the devices that exist here (for messages and `opbench info`).
- `Unsupported`: the framework cannot do what was asked (a dtype, autograd).
- `block_launches()` makes every operator launch synchronously (a run-level choice, see
  LAUNCH_MODES); the default does nothing, for frameworks that never queue work.
- `build()` names the build (the source commit) where the framework exposes one; the
  default None. info() carries it as "build" only when there is one.
- `profile_calls(run, workdir)` runs `run` under the framework's own profiler and reads
  what it wrote (opbench/profiles); the default raises Unsupported.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

# UnknownAPI is raised by the cases' load-time guard and by resolvers here: one class.
from opbench.cases.api_guard import UnknownAPI
from opbench.config import LAUNCH_QUEUED

if TYPE_CHECKING:
    from opbench.profiles.events import Profile

__all__ = ["Adapter", "DeviceUnavailable", "FrameworkUnavailable", "UnknownAPI", "Unsupported",
           "check_thread_count"]


class FrameworkUnavailable(Exception):
    """The framework is not installed or cannot start. Message is user-facing."""


class DeviceUnavailable(Exception):
    """The requested device does not exist here. Message is user-facing and says what exists."""


class Unsupported(Exception):
    """The framework cannot do what was asked (e.g. bfloat16 in numpy, autograd in numpy).
    Message is user-facing."""


class Adapter(ABC):
    name: str           # "torch" | "mindspore" | "numpy"

    @abstractmethod
    def version(self) -> str: ...

    @abstractmethod
    def setup(self, device: str, threads: int) -> None:
        """Select the device ("cpu", "cuda", "cuda:1", "ascend", "ascend:0") and set the
        intra-op thread count. Raises DeviceUnavailable with a clear message.
        Call it before running any operator: some frameworks (MindSpore) only honour the
        thread count and device when they are set before the runtime starts."""

    def block_launches(self) -> None:
        """Make every later operator launch synchronously ("blocking", see LAUNCH_MODES).
        Call it after setup() and before any operator. The default suits frameworks that
        run operators synchronously already; frameworks with a launch queue override it."""

    def launch(self) -> str:
        """The launch mode in force: LAUNCH_QUEUED or LAUNCH_BLOCKING."""
        return LAUNCH_QUEUED

    @abstractmethod
    def threads(self) -> int:
        """The intra-op thread count in force (read back from the framework where it allows;
        info() says when it could not be read back)."""

    @abstractmethod
    def device(self) -> str: ...

    def devices(self) -> tuple[str, ...]:
        """The devices this framework can use here, e.g. ("cpu", "cuda:0")."""
        return ("cpu",)

    @abstractmethod
    def resolve(self, api: str) -> Callable[..., Any]:
        """Resolve a dotted path ("torch.nn.functional.softmax") or "Tensor.method".
        For "Tensor.method" returns a function f(receiver, *args, **kw). Raises UnknownAPI."""

    @abstractmethod
    def from_numpy(self, array: np.ndarray, dtype: str, requires_grad: bool = False) -> Any:
        """Tensor on the selected device, of opbench dtype name `dtype`, synced.
        The tensor owns its memory: in-place operators never write into `array`."""

    @abstractmethod
    def to_numpy(self, value: Any) -> Any:
        """Framework output (tensor, tuple/list of tensors, scalar) -> numpy (nested tuples kept).
        bfloat16 comes back as float32."""

    @abstractmethod
    def sync(self) -> None:
        """Wait for all queued device work (no-op where execution is synchronous)."""

    def syncs_nothing(self) -> bool:
        """True when sync() has nothing to wait for as set up now (execution in the calling
        thread), so a caller that syncs after every call may leave it out (the tracer: its
        call inside each recorded call's window cost ~0.45 us on torch CPU)."""
        return False

    @abstractmethod
    def trivial_op(self) -> Callable[[], Any]:
        """A zero-argument call of the cheapest real operator (add on 1-element tensors on the
        device), to measure the dispatch floor."""

    @abstractmethod
    def forward_backward(self, fn: Callable[..., Any], args: tuple, kwargs: dict,
                         grad_positions: tuple[int, ...],
                         grad_weight: Any = None) -> Callable[[], Any]:
        """A zero-argument call that runs fn forward and backward w.r.t. the positional args at
        grad_positions and returns (output, grads tuple), one gradient per position.

        The loss is sum(output * grad_weight). grad_weight is a framework tensor with the
        output's shape; for tuple outputs, a sequence with one weight per output (None skips an
        output, e.g. the indices of topk). grad_weight=None means sum(output)."""

    def profile_calls(self, run: Callable[[], None], workdir: str) -> "Profile":
        """`run()` under this framework's own profiler (its CPU activity, and the device's
        where one is in use), its output written under `workdir` and read back as a
        Profile. Raises Unsupported where the framework has no profiler."""
        raise Unsupported(f"{self.name} has no profiler opbench can run")

    def build(self) -> str | None:
        """The build this is (the source commit it was built from) where the framework
        exposes it: two builds of one version (a nightly, a patched build) tell apart only by
        it. None when the framework says nothing."""
        return None

    def info(self) -> dict[str, Any]:
        facts = {"name": self.name, "version": self.version(), "device": self.device(),
                 "threads": self.threads(), "launch": self.launch()}
        build = self.build()
        if build:
            facts["build"] = build
        return facts


def check_thread_count(threads: int) -> int:
    """`threads` if it is a positive int, else ValueError (0 means "framework default" in some
    frameworks and "invalid" in others, so opbench does not pass it on)."""
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive integer, not {threads!r}")
    return threads

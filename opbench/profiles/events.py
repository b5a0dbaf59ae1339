"""A profile as a list of timed events, whatever wrote it.

Categories (`ProfileEvent.category`):
  OP       a framework operator as the host dispatched it (torch's aten::* cpu_op events)
  KERNEL   work a device or a CPU kernel did (CUDA/NPU kernels; MindSpore's CPU
           HostCpuOps kernels, which its CPU profiler records in place of host ops)
  RUNTIME  device runtime calls (cudaLaunchKernel, aclrtMemcpy, ...)
  PYTHON   Python frames or user annotations (record_function ranges)
  OTHER    anything else a trace holds (memory instants, flows)

Times are microseconds on the profile's own clock (`start_us`, `dur_us`), as the formats
write them; only differences inside one profile are meaningful.
"""
from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["OP", "KERNEL", "RUNTIME", "PYTHON", "OTHER", "CATEGORIES", "ProfileEvent",
           "Profile", "ProfileError"]

OP, KERNEL, RUNTIME, PYTHON, OTHER = "op", "kernel", "runtime", "python", "other"
CATEGORIES = (OP, KERNEL, RUNTIME, PYTHON, OTHER)


class ProfileError(Exception):
    """A file or directory that does not hold a profile opbench reads; the message names
    the path and what is missing. User-facing (exit 2)."""


@dataclass(frozen=True)
class ProfileEvent:
    name: str
    category: str
    start_us: float
    dur_us: float
    tid: str = ""                   # thread or stream the event ran on
    correlation: int | None = None  # a device kernel's launch (torch: args.correlation)
    device: str = "cpu"             # where it ran: cpu, cuda, npu
    shapes: str | None = None       # input shapes as the profile recorded them

    @property
    def end_us(self) -> float:
        return self.start_us + self.dur_us


@dataclass(frozen=True)
class Profile:
    """One profile: which framework wrote it, in which format (`source`), from where, the
    devices it saw, and its events in time order."""

    framework: str                  # torch | mindspore
    source: str                     # torch.profiler trace | mindspore.Profiler (cpu) | ...
    path: str
    devices: tuple[str, ...]
    events: tuple[ProfileEvent, ...]
    notes: tuple[str, ...] = field(default=())

    def of(self, category: str) -> tuple[ProfileEvent, ...]:
        return tuple(e for e in self.events if e.category == category)

    @property
    def span_us(self) -> float:
        """From the first event's start to the last one's end (0 for an empty profile)."""
        timed = [e for e in self.events if e.category != OTHER]
        if not timed:
            return 0.0
        return max(e.end_us for e in timed) - min(e.start_us for e in timed)

"""Peak memory of one operator call, per framework, with the best measure the device has.

- CUDA (torch) and Ascend/CUDA (MindSpore): the allocator's own peak, reset before the
  call (torch.cuda.reset_peak_memory_stats / max_memory_allocated; MindSpore's
  mindspore.runtime.reset_peak_memory_stats / max_memory_allocated): exactly the bytes the
  op's tensors took, above what was allocated before it.
- CPU: what the call allocated and still holds while its output is held: glibc's bytes in
  use (mallinfo2: arena + mmapped blocks) after the call minus before. torch's CPU
  allocator is malloc, so an add with a 3 MiB output reads 3.0 MiB (measured here).
  MindSpore's CPU memory pool reserves ~1 GiB at its first op and serves every tensor from
  it, and its runtime statistics read 0 on the CPU (mindspore.runtime.memory_allocated,
  memory_stats; MindSpore 2.10), so malloc sees nothing for later ops; the probe then
  counts the output tensors' own bytes (nbytes), which the pool must have handed out. The
  record keeps both numbers (`malloc_bytes`, `output_bytes`) and `bytes`, the larger.
  The resident high-water delta (VmHWM through /proc/self/clear_refs) read 0 for every CPU
  instance once the allocators had cached their pages; it stays the fallback where glibc's
  mallinfo2 is missing.
Every result names its measure; a probe that cannot run says so instead of a number.
"""
from __future__ import annotations

import ctypes
import importlib
from pathlib import Path
from typing import Any, Callable, Mapping

RSS_HIGH_WATER = "rss high-water delta (process, /proc/self/clear_refs)"
TORCH_CUDA = "torch.cuda.max_memory_allocated"
MINDSPORE_DEVICE = "mindspore.runtime.max_memory_allocated"
MALLOC_HELD = ("bytes allocated and held with the output (glibc mallinfo2), at least the "
               "output tensors' own bytes")


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def _mallinfo2() -> Callable[[], int] | None:
    """glibc's bytes in use (small blocks in the arenas + mmapped blocks), or None where
    there is no mallinfo2 (musl, macOS, glibc < 2.33)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        fn = libc.mallinfo2
    except (OSError, AttributeError):
        return None
    fn.restype = _MallInfo2

    def in_use() -> int:
        info = fn()
        return int(info.uordblks) + int(info.hblkhd)
    return in_use


def output_bytes(value: Any) -> int:
    """The bytes of the tensors in a call's output (nested tuples and lists summed)."""
    if isinstance(value, (tuple, list)):
        return sum(output_bytes(v) for v in value)
    nbytes = getattr(value, "nbytes", None)
    try:
        return int(nbytes) if nbytes is not None else 0
    except (TypeError, ValueError):
        return 0


class MallocProbe:
    """What a call allocated and holds in its output (CPU): malloc's bytes in use around
    the call, at least the output's own bytes (a pool that reused reserved memory)."""

    measure = MALLOC_HELD

    def __init__(self, in_use: Callable[[], int]):
        self._in_use = in_use
        self.details: dict[str, int] = {}

    def peak_bytes(self, call: Callable[[], Any]) -> int:
        before = self._in_use()
        held = call()                      # the output stays referenced while we read
        malloc_bytes = max(self._in_use() - before, 0)
        out = output_bytes(held)
        del held
        self.details = {"malloc_bytes": malloc_bytes, "output_bytes": out}
        return max(malloc_bytes, out)


class RssProbe:
    """The process's resident high-water mark around a call (CPU)."""

    measure = RSS_HIGH_WATER

    def __init__(self, proc: Path = Path("/proc/self")):
        self.proc = proc

    def _status_kib(self, key: str) -> int:
        for line in (self.proc / "status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
        raise OSError(f"no {key} in {self.proc / 'status'}")

    def peak_bytes(self, call: Callable[[], Any]) -> int:
        (self.proc / "clear_refs").write_text("5")      # VmHWM := VmRSS
        before = self._status_kib("VmRSS")
        call()
        return max(self._status_kib("VmHWM") - before, 0) * 1024


class AllocatorProbe:
    """An allocator that keeps its own peak: reset, call, peak minus what was there."""

    def __init__(self, measure: str, reset: Callable[[], None],
                 allocated: Callable[[], int], peak: Callable[[], int]):
        self.measure, self._reset, self._allocated, self._peak = measure, reset, allocated, peak

    def peak_bytes(self, call: Callable[[], Any]) -> int:
        self._reset()
        before = self._allocated()
        call()
        return max(int(self._peak()) - int(before), 0)


def probe_for(name: str, device: str,
              load: Callable[[str], Any] = importlib.import_module) -> Any:
    """The probe for framework `name` on `device` ("cpu", "cuda:0", "ascend:0")."""
    if device.startswith("cpu") or name == "numpy":
        in_use = _mallinfo2()
        return MallocProbe(in_use) if in_use is not None else RssProbe()
    if name == "torch":
        cuda = load("torch").cuda
        return AllocatorProbe(TORCH_CUDA, cuda.reset_peak_memory_stats,
                              cuda.memory_allocated, cuda.max_memory_allocated)
    if name == "mindspore":
        rt = load("mindspore.runtime")
        return AllocatorProbe(MINDSPORE_DEVICE, rt.reset_peak_memory_stats,
                              rt.memory_allocated, rt.max_memory_allocated)
    return RssProbe()


def peak_memory(calls: Mapping[str, Callable[[], Any]], device: str,
                probe: Callable[[str, str], Any] = probe_for) -> dict[str, dict[str, Any]]:
    """Each framework's peak bytes for one call (with its sync), and the measure used.
    Never raises: a probe that fails records its error."""
    out: dict[str, dict[str, Any]] = {}
    for name, call in calls.items():
        try:
            p = probe(name, device)
            out[name] = {"bytes": p.peak_bytes(call), "measure": p.measure,
                         **getattr(p, "details", {})}
        except Exception as exc:  # memory annotates a result; it never fails one
            out[name] = {"bytes": None, "measure": None, "error": f"{type(exc).__name__}: {exc}"}
    return out


__all__ = ["RssProbe", "AllocatorProbe", "MallocProbe", "probe_for", "peak_memory",
           "output_bytes", "RSS_HIGH_WATER", "TORCH_CUDA", "MINDSPORE_DEVICE", "MALLOC_HELD"]

"""Peak memory of one operator call, per framework, with the best measure the device has.

- CUDA (torch) and Ascend/CUDA (MindSpore): the allocator's own peak, reset before the
  call (torch.cuda.reset_peak_memory_stats / max_memory_allocated; MindSpore's
  mindspore.runtime.reset_peak_memory_stats / max_memory_allocated): exactly the bytes the
  op's tensors took, above what was allocated before it.
- CPU: neither framework's CPU allocator keeps a peak, so the process's resident high-water
  mark (VmHWM), reset through /proc/self/clear_refs ("5", Linux >= 4.0), minus the resident
  size before the call. It counts pages first touched by the call (outputs, workspace) and
  misses memory a caching allocator reuses, so it is an upper bound on fresh memory, not
  the tensors' size; the record says which measure it is.
Every result names its measure; a probe that cannot run says so instead of a number.
"""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Callable, Mapping

RSS_HIGH_WATER = "rss high-water delta (process, /proc/self/clear_refs)"
TORCH_CUDA = "torch.cuda.max_memory_allocated"
MINDSPORE_DEVICE = "mindspore.runtime.max_memory_allocated"


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
        return RssProbe()
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
            out[name] = {"bytes": p.peak_bytes(call), "measure": p.measure}
        except Exception as exc:  # memory annotates a result; it never fails one
            out[name] = {"bytes": None, "measure": None, "error": f"{type(exc).__name__}: {exc}"}
    return out


__all__ = ["RssProbe", "AllocatorProbe", "probe_for", "peak_memory", "RSS_HIGH_WATER",
           "TORCH_CUDA", "MINDSPORE_DEVICE"]

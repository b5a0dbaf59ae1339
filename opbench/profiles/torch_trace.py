"""torch.profiler's Chrome/Kineto trace: `prof.export_chrome_trace(path)` or the tensorboard
trace handler's `*.pt.trace.json` (gzipped or not), from a CPU or a CUDA run.

What is read: `traceEvents` complete events (`ph: X`) by category, as Kineto writes them:
  cpu_op, user_annotation's children      -> OP (aten::* and c10d ops)
  kernel, gpu_memcpy, gpu_memset          -> KERNEL on the device, with args.correlation
  cuda_runtime, cuda_driver, privateuse1_runtime -> RUNTIME (the launches)
  python_function, user_annotation, gpu_user_annotation -> PYTHON
anything else is OTHER. A trace without `traceEvents`, or whose events are not a list, is a
ProfileError naming the file.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any, Mapping

from opbench.profiles.events import (
                                     KERNEL,
                                     OP,
                                     OTHER,
                                     PYTHON,
                                     RUNTIME,
                                     Profile,
                                     ProfileError,
                                     ProfileEvent,
                                     )

__all__ = ["read_torch_trace", "events_of_trace", "TORCH_TRACE_SOURCE"]

TORCH_TRACE_SOURCE = "torch.profiler trace"

_CATEGORY = {
    "cpu_op": OP, "operator": OP,
    "kernel": KERNEL, "gpu_memcpy": KERNEL, "gpu_memset": KERNEL,
    "cuda_runtime": RUNTIME, "cuda_driver": RUNTIME, "privateuse1_runtime": RUNTIME,
    "privateuse1_driver": RUNTIME,
    "python_function": PYTHON, "user_annotation": PYTHON, "gpu_user_annotation": PYTHON,
}
_DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


def _load(path: Path) -> Any:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read the trace ({exc.strerror})") from None
    try:
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        return json.loads(raw)
    except (OSError, EOFError) as exc:
        raise ProfileError(f"{path}: not a readable gzip file ({exc}); truncated?") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProfileError(f"{path}: not JSON ({exc}); a truncated trace?") from None


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _event(e: Mapping[str, Any], device_name: str) -> ProfileEvent | None:
    if not isinstance(e, Mapping) or e.get("ph") != "X":
        return None
    start, dur = _number(e.get("ts")), _number(e.get("dur"))
    if start is None or dur is None:
        return None
    cat = str(e.get("cat", ""))
    args = e.get("args") if isinstance(e.get("args"), Mapping) else {}
    correlation = args.get("correlation")
    shapes = args.get("Input Dims")
    return ProfileEvent(
        name=str(e.get("name", "")), category=_CATEGORY.get(cat.lower(), OTHER),
        start_us=start, dur_us=dur, tid=f"{e.get('pid', '')}/{e.get('tid', '')}",
        correlation=int(correlation) if isinstance(correlation, (int, float)) else None,
        device=device_name if cat.lower() in _DEVICE_CATEGORIES else "cpu",
        shapes=json.dumps(shapes) if shapes is not None else None)


def events_of_trace(data: Any, where: str) -> tuple[tuple[ProfileEvent, ...], tuple[str, ...]]:
    """The events of a loaded trace, in time order, and the devices that ran kernels."""
    events = data.get("traceEvents") if isinstance(data, Mapping) else None
    if not isinstance(events, list):
        raise ProfileError(f"{where}: no 'traceEvents' list: not a torch.profiler "
                           "(Chrome/Kineto) trace")
    props = data.get("deviceProperties") if isinstance(data, Mapping) else None
    device_name = "npu" if "npu" in json.dumps(props or "").lower() else "cuda"
    found = [ev for ev in (_event(e, device_name) for e in events) if ev is not None]
    found.sort(key=lambda ev: (ev.start_us, -ev.dur_us))
    devices = sorted({ev.device for ev in found if ev.category == KERNEL})
    return tuple(found), tuple(devices) or ("cpu",)


def read_torch_trace(path: str | Path, allow_empty: bool = False) -> Profile:
    """`allow_empty`: as read_mindspore_profile's."""
    path = Path(path)
    data = _load(path)
    events, devices = events_of_trace(data, str(path))
    if not any(e.category in (OP, KERNEL) for e in events) and not allow_empty:
        raise ProfileError(f"{path}: the trace holds no operator or kernel events "
                           "(cpu_op / kernel); was the profiler started around the work?")
    return Profile("torch", TORCH_TRACE_SOURCE, str(path), devices, events)

"""A MindSpore Profiler output directory (and torch_npu's, which writes the same layout).

`Profiler(output_path=OUT, activities=[ProfilerActivity.CPU])` then `stop()` and
`analyse()` leave OUT/<host>_<pid>_<time>_ascend_ms/ (or _ascend_pt for torch_npu) with:
  ASCEND_PROFILER_OUTPUT/trace_view.json   Chrome events; on the CPU each kernel a
                                           `HostCpuOps` event (ts and dur in us, strings)
  FRAMEWORK/cpu_op_detail_info_*.csv       per kernel type: occurrences, total/avg ms
  FRAMEWORK/cpu_op_execute_timestamp_*.txt `Name;HostCpuOps;start_ns,dur_ms,0 ...`
and on Ascend ASCEND_PROFILER_OUTPUT/kernel_details.csv (one row per kernel launch: Name,
Type, Accelerator Core, Start Time(us), Duration(us)) and op_statistic.csv (per op type).
Read, in this order: kernel_details.csv (a device profile), trace_view.json's kernel
events, the CPU timestamp file. Given OUT, the one *_ascend_ms / *_ascend_pt directory in it
is read (several: a ProfileError listing them).
"""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Iterable

from opbench.profiles.events import KERNEL, OP, OTHER, Profile, ProfileError, ProfileEvent

__all__ = ["read_mindspore_profile", "profile_root", "MINDSPORE_CPU_SOURCE",
           "ASCEND_SOURCE", "is_profile_dir"]

MINDSPORE_CPU_SOURCE = "mindspore.Profiler (cpu)"
ASCEND_SOURCE = "ascend profiler (kernel_details.csv)"
_SUFFIXES = ("_ascend_ms", "_ascend_pt")
_OUTPUT = "ASCEND_PROFILER_OUTPUT"


def is_profile_dir(path: Path) -> bool:
    return path.is_dir() and (path.name.endswith(_SUFFIXES) or (path / _OUTPUT).is_dir()
                              or (path / "FRAMEWORK").is_dir())


def profile_root(path: Path) -> Path:
    """The profile's own directory: `path` itself, or the one profile directory in it."""
    if not path.is_dir():
        raise ProfileError(f"{path}: not a directory (a MindSpore profile is the directory "
                           "Profiler(output_path=...) wrote)")
    if (path / _OUTPUT).is_dir() or (path / "FRAMEWORK").is_dir():
        return path
    inside = sorted(p for p in path.iterdir() if p.is_dir() and p.name.endswith(_SUFFIXES))
    if len(inside) == 1:
        return inside[0]
    if not inside:
        raise ProfileError(f"{path}: no *_ascend_ms or *_ascend_pt profile directory, and no "
                           f"{_OUTPUT}/ or FRAMEWORK/ in it: was analyse() run?")
    names = ", ".join(p.name for p in inside)
    raise ProfileError(f"{path}: {len(inside)} profiles in it ({names}): name one")


def _rows(path: Path) -> list[dict[str, str]]:
    try:
        with path.open(newline="", encoding="utf-8") as f:
            return [{(k or "").strip(): (v or "").strip() for k, v in row.items()}
                    for row in csv.DictReader(f)]
    except (OSError, csv.Error, UnicodeDecodeError) as exc:
        raise ProfileError(f"{path}: cannot read the CSV ({exc})") from None


def _column(row: dict[str, str], *names: str) -> str | None:
    for name in names:
        if name in row and row[name] != "":
            return row[name]
    return None


def _float(text: str | None, where: str, key: str) -> float:
    try:
        return float(str(text).strip().rstrip("\t"))
    except (TypeError, ValueError):
        raise ProfileError(f"{where}: column {key!r} holds {text!r}, not a number") from None


def _kernel_details(path: Path) -> list[ProfileEvent]:
    """Ascend kernel_details.csv: one row per launch."""
    rows = _rows(path)
    if rows and not {"Name", "Duration(us)"} <= set(rows[0]):
        raise ProfileError(f"{path}: expected columns 'Name' and 'Duration(us)', found "
                           f"{', '.join(list(rows[0])[:8])}")
    events = []
    for i, row in enumerate(rows, start=2):
        where = f"{path}:{i}"
        start = _column(row, "Start Time(us)", "Start Time")
        # the accelerator core (AI_CORE, AI_VECTOR_CORE, AI_CPU) as the lane: kinds.py reads
        # AI_CPU as a fallback
        events.append(ProfileEvent(
            name=row["Name"], category=KERNEL,
            start_us=_float(start, where, "Start Time(us)") if start is not None else 0.0,
            dur_us=_float(row["Duration(us)"], where, "Duration(us)"),
            tid=_column(row, "Accelerator Core", "Task Type") or "",
            device="npu", shapes=_column(row, "Input Shapes")))
    return events


def _trace_view(path: Path) -> list[ProfileEvent]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProfileError(f"{path}: not a readable JSON trace ({exc}); truncated?") from None
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise ProfileError(f"{path}: no list of trace events")
    found = []
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        kind = str(args.get("type", ""))
        # HostCpuOps: a CPU kernel; other names (Ascend's host/device lanes) by their lane
        category = KERNEL if kind == "HostCpuOps" else OTHER
        try:
            start, dur = float(e["ts"]), float(e["dur"])
        except (KeyError, TypeError, ValueError):
            continue
        found.append(ProfileEvent(name=str(e.get("name", "")), category=category,
                                  start_us=start, dur_us=dur,
                                  tid=f"{e.get('pid', '')}/{e.get('tid', '')}"))
    return found


def _cpu_timestamps(path: Path) -> list[ProfileEvent]:
    """FRAMEWORK/cpu_op_execute_timestamp_*.txt: `Name;Type;start_ns,dur_ms,thread ...`."""
    events = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        parts = line.strip().split(";")
        if len(parts) < 3:
            continue
        for item in parts[2].split():
            fields = item.split(",")
            if len(fields) < 2:
                continue
            where = f"{path}:{number}"
            events.append(ProfileEvent(
                name=parts[0], category=KERNEL,
                start_us=_float(fields[0], where, "start") / 1e3,
                dur_us=_float(fields[1], where, "duration") * 1e3,
                tid=fields[2] if len(fields) > 2 else ""))
    return events


def _first(paths: Iterable[Path]) -> Path | None:
    return next(iter(sorted(paths)), None)


def read_mindspore_profile(path: str | Path, allow_empty: bool = False) -> Profile:
    """`allow_empty`: a profile opbench took of a call that launches no kernel (a view)
    is a Profile with no kernels; a user's profile without any is a ProfileError."""
    root = profile_root(Path(path))
    framework = "torch" if root.name.endswith("_ascend_pt") else "mindspore"
    output = root / _OUTPUT
    details = _first(output.glob("kernel_details*.csv")) if output.is_dir() else None
    if details is not None:
        events = _kernel_details(details)
        source, devices = ASCEND_SOURCE, ("npu",)
    else:
        view = output / "trace_view.json"
        events = _trace_view(view) if view.is_file() else []
        if not any(e.category == KERNEL for e in events):
            stamps = _first((root / "FRAMEWORK").glob("cpu_op_execute_timestamp_*.txt"))
            events = _cpu_timestamps(stamps) if stamps is not None else events
        source, devices = MINDSPORE_CPU_SOURCE, ("cpu",)
    if not any(e.category in (KERNEL, OP) for e in events) and not allow_empty:
        raise ProfileError(
            f"{root}: no kernel events found (looked for {_OUTPUT}/kernel_details.csv, "
            f"{_OUTPUT}/trace_view.json HostCpuOps events and "
            "FRAMEWORK/cpu_op_execute_timestamp_*.txt)")
    events.sort(key=lambda ev: (ev.start_us, -ev.dur_us))
    return Profile(framework, source, str(root), devices, tuple(events))

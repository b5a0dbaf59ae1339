"""Chrome trace export (the JSON object format that Perfetto and chrome://tracing open).

One process track per framework, one thread track per Python thread under it; every call is
a complete event ("ph": "X"), so nested calls nest by time on their thread's track.
"""
from __future__ import annotations

import json
import os
from typing import Any

from opbench.trace.events import TIMING_NOTES
from opbench.trace.recorder import TraceData
from opbench.trace.signature import format_signature
from opbench.trace.table import header_lines

CHROME_FORMAT_VERSION = 1
_NS_PER_US = 1000.0


def chrome_trace(data: TraceData) -> dict[str, Any]:
    frameworks = sorted({e.framework for e in data.events})
    pids = {name: index + 1 for index, name in enumerate(frameworks)}
    first_start: dict[int, int] = {}
    for event in data.events:
        if event.start_ns < first_start.get(event.thread_id, event.start_ns + 1):
            first_start[event.thread_id] = event.start_ns
    # Threads numbered in the order they first called an API (the main thread is usually 1).
    tids = {thread: index + 1
            for index, thread in enumerate(sorted(first_start, key=first_start.__getitem__))}
    trace_events: list[dict[str, Any]] = []
    for name, pid in pids.items():
        trace_events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                             "args": {"name": f"{name} ({data.timing} timing)"}})
        trace_events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                             "args": {"sort_index": pid}})
        for thread in sorted({e.thread_id for e in data.events if e.framework == name},
                             key=tids.__getitem__):
            trace_events.append({"ph": "M", "name": "thread_name", "pid": pid,
                                 "tid": tids[thread],
                                 "args": {"name": data.thread_names.get(thread, str(thread))}})
    # Parents before children at equal start times, so strict importers nest them right.
    ordered = sorted(data.events, key=lambda e: (e.start_ns, -e.duration_ns, e.index))
    for event in ordered:
        args: dict[str, Any] = {"inputs": format_signature(data.signatures[event.signature]),
                                "kind": event.kind, "timing": data.timing}
        if event.failed:
            args["error"] = event.error
        trace_events.append({
            "name": event.api, "cat": f"{event.framework},{event.kind}", "ph": "X",
            "ts": (event.start_ns - data.start_ns) / _NS_PER_US,
            "dur": event.duration_ns / _NS_PER_US,
            "pid": pids[event.framework], "tid": tids[event.thread_id], "args": args})
    return {
        "traceEvents": trace_events,
        "displayTimeUnit": "ns",
        "otherData": {
            "generator": "opbench trace", "format_version": CHROME_FORMAT_VERSION,
            "timing": data.timing, "timing_note": TIMING_NOTES[data.timing],
            "nested": data.nested, "notes": header_lines(data),
            "overhead": [o.as_dict() for o in data.overheads],
            "frameworks": data.frameworks,
            "dropped_events": data.dropped_events},
    }


def track_counts(trace: dict[str, Any]) -> dict[str, int]:
    """Complete events per track, 'process / thread' (what the closing summary reports)."""
    names: dict[tuple[str, int, int], str] = {}
    for event in trace["traceEvents"]:
        if event["ph"] == "M" and event["name"] in ("process_name", "thread_name"):
            names[(event["name"], event["pid"], event["tid"])] = event["args"]["name"]
    counts: dict[str, int] = {}
    for event in trace["traceEvents"]:
        if event["ph"] != "X":
            continue
        process = names.get(("process_name", event["pid"], 0), str(event["pid"]))
        thread = names.get(("thread_name", event["pid"], event["tid"]), str(event["tid"]))
        track = f"{process} / {thread}"
        counts[track] = counts.get(track, 0) + 1
    return counts


def write_chrome_trace(data: TraceData, path: str | os.PathLike[str]) -> dict[str, int]:
    trace = chrome_trace(data)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(trace, handle)
    return track_counts(trace)

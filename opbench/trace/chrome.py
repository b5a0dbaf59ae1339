"""Chrome trace export (the JSON object format that Perfetto and chrome://tracing open).

One process track per framework, one thread track per Python thread under it; every call is
a complete event ("ph": "X"), so nested calls nest by time on their thread's track.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Mapping

from opbench.config.record_codec import record_from
from opbench.trace.events import TIMING_NOTES
from opbench.trace.recorder import TraceData
from opbench.trace.signature import format_signature
from opbench.trace.table import header_lines

CHROME_FORMAT_VERSION = 1
_NS_PER_US = 1000.0
METADATA, COMPLETE = "M", "X"          # the two phases (`ph`) opbench writes
_TRACK_NAMES = ("process_name", "thread_name")


@dataclass(frozen=True)
class ChromeEvent:
    """One event of the trace: a track's metadata (`M`: its name or sort index in `args`)
    or a call (`X`: a complete event, with category, start and duration in microseconds).
    The JSON keys are the fields' names; `as_json` writes them in Chrome's own order."""

    ph: str
    name: str
    pid: int
    tid: int
    args: Mapping[str, Any] = field(default_factory=dict)
    cat: str | None = None
    ts: float | None = None
    dur: float | None = None

    def as_json(self) -> dict[str, Any]:
        if self.ph == COMPLETE:
            return {"name": self.name, "cat": self.cat, "ph": self.ph, "ts": self.ts,
                    "dur": self.dur, "pid": self.pid, "tid": self.tid, "args": self.args}
        return {"ph": self.ph, "name": self.name, "pid": self.pid, "tid": self.tid,
                "args": self.args}


@dataclass(frozen=True)
class _TrackName:
    """A process_name or thread_name event's args."""

    name: str


def chrome_events(data: TraceData) -> list[ChromeEvent]:
    """The trace's events: each framework's process track and its threads' tracks named,
    then every call, parents before children at equal start times."""
    frameworks = sorted({e.framework for e in data.events})
    pids = {name: index + 1 for index, name in enumerate(frameworks)}
    first_start: dict[int, int] = {}
    for event in data.events:
        if event.start_ns < first_start.get(event.thread_id, event.start_ns + 1):
            first_start[event.thread_id] = event.start_ns
    # Threads numbered in the order they first called an API (the main thread is usually 1).
    tids = {thread: index + 1
            for index, thread in enumerate(sorted(first_start, key=first_start.__getitem__))}
    events: list[ChromeEvent] = []
    for name, pid in pids.items():
        events.append(ChromeEvent(METADATA, "process_name", pid, 0,
                                  {"name": f"{name} ({data.timing} timing)"}))
        events.append(ChromeEvent(METADATA, "process_sort_index", pid, 0,
                                  {"sort_index": pid}))
        for thread in sorted({e.thread_id for e in data.events if e.framework == name},
                             key=tids.__getitem__):
            events.append(ChromeEvent(METADATA, "thread_name", pid, tids[thread],
                                      {"name": data.thread_names.get(thread, str(thread))}))
    # Parents before children at equal start times, so strict importers nest them right.
    ordered = sorted(data.events, key=lambda e: (e.start_ns, -e.duration_ns, e.index))
    for event in ordered:
        args: dict[str, Any] = {"inputs": format_signature(data.signatures[event.signature]),
                                "kind": event.kind, "timing": data.timing}
        if event.failed:
            args["error"] = event.error
        events.append(ChromeEvent(
            COMPLETE, event.api, pids[event.framework], tids[event.thread_id], args,
            cat=f"{event.framework},{event.kind}",
            ts=(event.start_ns - data.start_ns) / _NS_PER_US,
            dur=event.duration_ns / _NS_PER_US))
    return events


def chrome_trace(data: TraceData) -> dict[str, Any]:
    return {
        "traceEvents": [event.as_json() for event in chrome_events(data)],
        "displayTimeUnit": "ns",
        "otherData": {
            "generator": "opbench trace", "format_version": CHROME_FORMAT_VERSION,
            "timing": data.timing, "timing_note": TIMING_NOTES[data.timing],
            "nested": data.nested, "notes": header_lines(data),
            "overhead": [o.as_dict() for o in data.overheads],
            "frameworks": data.frameworks,
            "dropped_events": data.dropped_events},
    }


def track_counts(trace: Mapping[str, Any]) -> dict[str, int]:
    """Complete events per track, 'process / thread' (what the closing summary reports),
    from a trace's JSON (its events read as ChromeEvent)."""
    return events_per_track([record_from(ChromeEvent, e) for e in trace["traceEvents"]])


def events_per_track(events: list[ChromeEvent]) -> dict[str, int]:
    names: dict[tuple[str, int, int], str] = {}
    for event in events:
        if event.ph == METADATA and event.name in _TRACK_NAMES:
            names[(event.name, event.pid, event.tid)] = record_from(_TrackName,
                                                                     event.args).name
    counts: dict[str, int] = {}
    for event in events:
        if event.ph != COMPLETE:
            continue
        process = names.get(("process_name", event.pid, 0), str(event.pid))
        thread = names.get(("thread_name", event.pid, event.tid), str(event.tid))
        track = f"{process} / {thread}"
        counts[track] = counts.get(track, 0) + 1
    return counts


def write_chrome_trace(data: TraceData, path: str | os.PathLike[str]) -> dict[str, int]:
    trace = chrome_trace(data)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(trace, handle)
    return track_counts(trace)

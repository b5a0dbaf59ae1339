"""The JSON record and the text log of a trace (the format's version and its argument
descriptions: record_format.py)."""
from __future__ import annotations

import json
import os
from typing import Any, TextIO

__all__ = ["trace_record", "write_record", "write_log", "write_log_to", "RECORD_FILE",
           "RECORD_FORMAT", "RECORD_VERSION"]

from opbench.trace.events import TIMING_NOTES
from opbench.trace.record_format import (RECORD_FILE, RECORD_FORMAT, RECORD_VERSION,
                                         signature_json)
from opbench.trace.recorder import TraceData
from opbench.trace.signature import format_signature
from opbench.trace.summary import summarize
from opbench.trace.table import header_lines
from opbench.trace.units import format_ns

def trace_record(data: TraceData) -> dict[str, Any]:
    rows = summarize(data, group_by_shape=True, sort_by="total")
    return {
        "format": RECORD_FORMAT, "version": RECORD_VERSION,
        "settings": {"timing": data.timing, "timing_note": TIMING_NOTES[data.timing],
                     "nested": data.nested},
        "notes": header_lines(data),
        "frameworks": data.frameworks,
        "overhead": {"per_framework": [o.as_dict() for o in data.overheads],
                     "bookkeeping_ns_per_recorded_call": {
                         "median": round(data.bookkeeping_median_ns, 1),
                         "mean": round(data.bookkeeping_ns_per_call, 1)}},
        "duration_ns": data.stop_ns - data.start_ns,
        "dropped_events": data.dropped_events,
        "summary": [{"framework": r.framework, "api": r.api, "kind": r.kind,
                     "inputs": r.inputs, "calls": r.calls, "failed": r.failed,
                     "total_ns": r.total_ns, "self_ns": r.self_ns, "mean_ns": round(r.mean_ns, 1),
                     "min_ns": r.min_ns, "max_ns": r.max_ns, "share": round(r.share, 6)}
                    for r in rows],
        "markers": [{"at": at, "label": label} for at, label in data.markers],
        "signatures": [signature_json(s) for s in data.signatures],
        "events": [{"index": e.index, "framework": e.framework, "api": e.api, "kind": e.kind,
                    "thread": e.thread_id, "start_ns": e.start_ns - data.start_ns,
                    "duration_ns": e.duration_ns, "depth": e.depth, "parent": e.parent,
                    "signature": e.signature, "failed": e.failed, "error": e.error}
                   for e in data.events],
    }


def write_record(data: TraceData, path: str | os.PathLike[str]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(trace_record(data), handle, indent=1)
        handle.write("\n")


def write_log(data: TraceData, path: str | os.PathLike[str]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        write_log_to(data, handle)


def write_log_to(data: TraceData, out: TextIO) -> None:
    """One line per call in start order, indented by nesting depth."""
    for line in header_lines(data):
        out.write(f"# {line}\n")
    out.write("# columns: start (from trace start) | thread | framework | api(inputs) | "
              "duration | status\n")
    for event in data.events:
        start = format_ns(event.start_ns - data.start_ns)
        thread = data.thread_names.get(event.thread_id, str(event.thread_id))
        status = f"FAILED {event.error}" if event.failed else "ok"
        arguments = format_signature(data.signatures[event.signature])
        call = f"{'  ' * event.depth}{event.api}({arguments})"
        out.write(f"{start:>10} | {thread} | {event.framework} | {call} | "
                  f"{format_ns(event.duration_ns)} | {status}\n")
    if data.dropped_events:
        out.write(f"# {data.dropped_events} later events were not kept (event cap)\n")

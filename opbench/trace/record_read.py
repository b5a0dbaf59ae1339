"""Read a trace record (trace_record.json, record.py) back, for `opbench trace compare`: the
calls of its outermost framework APIs per API and input shapes, from its steady steps when
the script marked them (opbench.model.step()), else from the whole trace.

Every problem is a TraceRecordError whose message names the file and the key.
"""
from __future__ import annotations

import bisect
import json
import os
from dataclasses import dataclass
from typing import Any

from opbench.trace.events import API_KINDS, TIMINGS
from opbench.trace.record_format import (RECORD_FORMAT, RECORD_VERSION,
                                         signature_from_json)
from opbench.trace.signature import format_inputs
from opbench.trace.steps import marked_steps

__all__ = ["TraceRecordError", "CallGroup", "LoadedTrace", "load_trace_record",
           "read_trace_record"]


class TraceRecordError(ValueError):
    """A trace record cannot be read; the message names the file and the key."""


@dataclass(frozen=True)
class CallGroup:
    """The calls of one API with one set of input shapes and dtypes."""
    framework: str
    api: str
    kind: str
    inputs: str            # 'f32[2,64,256], f32[256]' (signature.format_inputs), '-' for none
    calls: int
    failed: int
    total_ns: int


@dataclass(frozen=True)
class LoadedTrace:
    path: str
    timing: str                      # serial | async
    nested: bool
    frameworks: tuple[str, ...]      # the ones the script used
    versions: tuple[tuple[str, str], ...]
    groups: tuple[CallGroup, ...]
    region: str                      # which calls are compared, for people
    notes: tuple[str, ...] = ()

    @property
    def api_ns(self) -> int:
        """Time in the compared API calls (the denominator of every share)."""
        return sum(g.total_ns for g in self.groups)

    @property
    def calls(self) -> int:
        return sum(g.calls for g in self.groups)


def load_trace_record(path: str | os.PathLike[str]) -> LoadedTrace:
    name = os.fspath(path)
    try:
        with open(name, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        raise TraceRecordError(f"{name}: no such file (write one with opbench trace -o DIR -- "
                               f"python script.py: DIR/trace_record.json)") from None
    except IsADirectoryError:
        raise TraceRecordError(f"{name}: is a directory; give its trace_record.json") from None
    except (OSError, UnicodeDecodeError) as err:
        raise TraceRecordError(f"{name}: cannot be read: {err}") from None
    except json.JSONDecodeError as err:
        raise TraceRecordError(f"{name}: not JSON: {err}") from None
    return read_trace_record(data, name)


class _Reader:
    """Typed access to the record's keys, with the key's path in every error."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, key: str, problem: str) -> TraceRecordError:
        return TraceRecordError(f"{self.source}: key {key!r}: {problem}")

    def get(self, parent: Any, key: str, where: str, kind: type | tuple[type, ...],
            default: Any = ...) -> Any:
        path = f"{where}.{key}" if where else key
        if not isinstance(parent, dict):
            raise self.fail(where or "(top)", f"expected an object, got "
                                              f"{type(parent).__name__}")
        if key not in parent:
            if default is not ...:
                return default
            raise self.fail(path, "missing")
        value = parent[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            names = " or ".join(k.__name__ for k in kinds)
            raise self.fail(path, f"expected {names}, got {type(value).__name__}")
        return value


def read_trace_record(data: Any, source: str = "<trace record>") -> LoadedTrace:
    """The compared calls of a parsed trace record; `source` names it in errors."""
    r = _Reader(source)
    if not isinstance(data, dict):
        raise TraceRecordError(f"{source}: not a trace record (a JSON {type(data).__name__}, "
                               f"expected an object)")
    found = data.get("format")
    if found != RECORD_FORMAT:
        raise r.fail("format", f"{found!r}, expected {RECORD_FORMAT!r}: not a trace record "
                               f"(opbench trace writes one as DIR/trace_record.json)")
    version = r.get(data, "version", "", int)
    if version != RECORD_VERSION:
        raise r.fail("version", f"{version}: this opbench reads version {RECORD_VERSION}")
    settings = r.get(data, "settings", "", dict)
    timing = r.get(settings, "timing", "settings", str)
    if timing not in TIMINGS:
        raise r.fail("settings.timing", f"{timing!r} is not one of {', '.join(TIMINGS)}")
    nested = r.get(settings, "nested", "settings", bool)
    frameworks = r.get(data, "frameworks", "", dict)
    traced = tuple(fw for fw, facts in frameworks.items()
                   if isinstance(facts, dict) and facts.get("status") == "traced")
    versions = tuple((fw, str(frameworks[fw].get("version", "?"))) for fw in traced)
    dropped = r.get(data, "dropped_events", "", int, 0)
    markers = [r.get(m, "at", f"markers[{i}]", int)
               for i, m in enumerate(r.get(data, "markers", "", list, []))]
    notes: list[str] = []
    if not markers and not nested:
        groups = _summary_groups(r, r.get(data, "summary", "", list))
        region = "the whole trace (no step marks)"
    else:
        if dropped:
            notes.append(f"{dropped} events past the trace's event cap were not kept: only "
                         f"the kept ones are compared")
        groups, region = _event_groups(r, data, markers)
        if nested:
            notes.append("a nested trace: its outermost API calls are compared")
    return LoadedTrace(source, timing, nested, traced, versions, tuple(groups), region,
                       tuple(notes))


def _summary_groups(r: _Reader, rows: list[Any]) -> list[CallGroup]:
    groups = []
    for i, row in enumerate(rows):
        where = f"summary[{i}]"
        kind = r.get(row, "kind", where, str)
        if kind not in API_KINDS:
            continue
        inputs = r.get(row, "inputs", where, (str, type(None))) or "-"
        groups.append(CallGroup(r.get(row, "framework", where, str),
                                r.get(row, "api", where, str), kind, inputs,
                                r.get(row, "calls", where, int),
                                r.get(row, "failed", where, int),
                                r.get(row, "total_ns", where, int)))
    return groups


def _event_groups(r: _Reader, data: dict[str, Any], marks: list[int]
                  ) -> tuple[list[CallGroup], str]:
    """Group the outermost API events, of the steady steps when there are marks."""
    signatures = r.get(data, "signatures", "", list)
    inputs_of: dict[int, str] = {}

    def inputs(index: int, where: str) -> str:
        if index not in inputs_of:
            if not 0 <= index < len(signatures):
                raise r.fail(f"{where}.signature", f"{index} is not an index into signatures "
                                                   f"(0..{len(signatures) - 1})")
            try:
                inputs_of[index] = format_inputs(signature_from_json(signatures[index]))
            except (KeyError, TypeError, ValueError, AttributeError, StopIteration) as err:
                raise r.fail(f"signatures[{index}]", f"not an argument description ({err})")
        return inputs_of[index]

    events = []
    by_index: dict[int, tuple[str, int | None]] = {}
    for i, event in enumerate(r.get(data, "events", "", list)):
        where = f"events[{i}]"
        index = r.get(event, "index", where, int)
        kind = r.get(event, "kind", where, str)
        parent = r.get(event, "parent", where, (int, type(None)))
        by_index[index] = (kind, parent)
        events.append((index, r.get(event, "framework", where, str),
                       r.get(event, "api", where, str), kind,
                       inputs(r.get(event, "signature", where, int), where),
                       r.get(event, "duration_ns", where, int),
                       r.get(event, "failed", where, bool)))
    outermost = sorted((e for e in events if e[3] in API_KINDS
                        and not _inside_api(e[0], by_index)), key=lambda e: e[0])
    region = "the whole trace (no step marks)"
    if marks:
        starts = [e[0] for e in outermost]
        steps = marked_steps(sorted(bisect.bisect_left(starts, m) for m in marks),
                             len(outermost), lambda i: outermost[i][2:5])
        if steps is None:
            raise r.fail("markers", "the step marks enclose no framework API call")
        kept = [outermost[i] for start, end in steps.steady for i in range(start, end)]
        region = (f"{len(steps.steady)} marked steps ({len(kept)} calls; "
                  f"{len(outermost) - len(kept)} calls before, "
                  + ("in the first step (warm-up) " if steps.warmup else "")
                  + "and after them left out)" + "".join(f"; {n}" for n in steps.notes))
        outermost = kept
    totals: dict[tuple[str, str, str, str], list[int]] = {}
    for _index, framework, api, kind, shapes, duration, failed in outermost:
        total = totals.setdefault((framework, api, kind, shapes), [0, 0, 0])
        total[0] += 1
        total[1] += failed
        total[2] += duration
    return [CallGroup(fw, api, kind, shapes, calls, failed, ns)
            for (fw, api, kind, shapes), (calls, failed, ns) in totals.items()], region


def _inside_api(index: int, by_index: dict[int, tuple[str, int | None]]) -> bool:
    """Whether a recorded API call encloses this one (a nested trace's inner calls)."""
    seen = set()
    parent = by_index[index][1]
    while parent is not None and parent not in seen and parent in by_index:
        seen.add(parent)
        kind, grand = by_index[parent]
        if kind in API_KINDS:
            return True
        parent = grand
    return False


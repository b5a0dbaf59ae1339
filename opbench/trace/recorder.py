"""The recorder: times intercepted calls, keeps their nesting, and stores events.

Interceptors (torch, MindSpore) only decide *what* a call is (a CallSite) and hand the call to
`Recorder.call`; every rule about nesting, timing, syncing and failures lives here, with an
injectable clock and sync so it is tested without any framework.

Nesting rules (per thread):
- nested=False: only the outermost API call is recorded; anything it calls internally runs
  untouched. User scopes (a user's Module/Cell) are not recorded at all.
- nested=True: every intercepted call is recorded with its parent, and user scopes are
  recorded as structure (kind "scope").
- Always: a call whose API equals its immediate parent's is the same call seen by two
  interception layers (an operator wrapper and the torch function mode under it), and is
  not recorded twice.
"""
from __future__ import annotations

import itertools
import statistics
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Protocol

from opbench.trace.events import (
                                  ASYNC,
                                  SCOPE,
                                  SERIAL,
                                  TIMINGS,
                                  CallEvent,
                                  CallSite,
                                  CallStats,
                                  Opaque,
                                  Signature,
                                  StatsKey,
                                  )
from opbench.trace.overhead import TracerOverhead
from opbench.trace.signature import TensorDescriber, describe_call

Clock = Callable[[], int]
# Is this framework layer's call traced THROUGH (its own calls recorded, itself not)? Asked
# by the interceptors before a top-level layer call, with the layer's CallSite, the layer and
# its arguments (the model's capture: a layer with no function form, model/capture/lowering.py
# traced_through).
LayerRule = Callable[[CallSite, Any, tuple, dict], bool]


class CallObserver(Protocol):
    """Sees every recorded call that returned, with its arguments and result, right after it
    finished and outside its timing (opbench/model/capture/observer.py follows the data flow with
    it). Framework calls it makes are not recorded."""

    def on_call(self, index: int, site: CallSite, args: tuple, kwargs: dict,
                result: Any) -> None: ...

# Events kept for the Chrome trace and the log. A training epoch can make millions of calls;
# at ~300 bytes per event this caps memory near 300 MB. Aggregates (the table, the cases)
# keep counting every call past the cap, and the outputs say how many events were dropped.
DEFAULT_MAX_EVENTS = 1_000_000
# Per-call bookkeeping times kept for the median (800 KB at most). The mean alone misleads:
# a few calls that happen to trigger a full garbage collection (millions of framework objects
# to traverse) or lose the CPU take milliseconds, while the typical call takes microseconds.
BOOKKEEPING_SAMPLES = 100_000


_new_event = tuple.__new__     # the NamedTuple without its Python-level __new__ (hot path)

# Stands for the arguments of a call whose description failed.
UNREADABLE = Signature((Opaque("unreadable", ""),), ())


def _no_tensors(value: Any) -> None:
    return None


def NO_SYNC() -> None:       # noqa: N802 (a constant, called like the syncs it stands for)
    """The sync of a framework that has nothing to wait for (CPU): registered with
    add_framework, the recorder leaves it out of every recorded call's window (calling it
    there, through the adapter and the recorder's internal flag, cost ~0.45 us a call on torch
    CPU, 2026-11-27: a quarter of a 1.7 us add)."""


@dataclass
class TraceData:
    """Everything recorded, as plain data (what every output is built from)."""
    timing: str
    nested: bool
    start_ns: int
    stop_ns: int
    events: list[CallEvent]
    stats: dict[StatsKey, CallStats]
    signatures: list[Signature]
    thread_names: dict[int, str]
    dropped_events: int
    bookkeeping_ns: int           # time spent inside the recorder around recorded calls
    recorded_calls: int           # calls that paid that bookkeeping
    bookkeeping_median_ns: float  # the typical call's bookkeeping
    # Filled in by the tracer: framework name -> facts (version, what was intercepted),
    # the calibrated overhead per framework, and notes every output repeats.
    frameworks: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Step marks (opbench.model.step() under `opbench trace`): (index, label); the calls of
    # a step are the events whose index lies after its mark and before the next one.
    markers: list[tuple[int, str]] = field(default_factory=list)
    overheads: list[TracerOverhead] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def bookkeeping_ns_per_call(self) -> float:
        return self.bookkeeping_ns / self.recorded_calls if self.recorded_calls else 0.0


def without_defaults(kwargs: dict, defaults: frozenset) -> dict:
    kept = {}
    for name, value in kwargs.items():
        try:
            if (name, type(value), value) in defaults:
                continue
        except TypeError:       # unhashable value: not a literal default
            pass
        kept[name] = value
    return kept


class _Store:
    """Where finished calls go. Swappable, so overhead calibration can run the real code path
    without its calls landing in the user's trace."""

    def __init__(self, max_events: int):
        self.max_events = max_events
        self.events: list[CallEvent] = []
        self.stats: dict[tuple[CallSite, int], CallStats] = {}   # (site, signature) -> stats
        self.dropped = 0
        self.bookkeeping_ns = 0
        self.recorded_calls = 0
        self.bookkeeping_samples: list[int] = []

    def durations_ns(self) -> list[int]:
        """The recorded calls' durations, in the order they finished."""
        return [e.duration_ns for e in self.events]


class TimingSink:
    """Where a timing-only recorder (TimingRecorder) keeps each recorded call: its API name
    and duration, in lists allocated up front (`capacity` slots), nothing else. Calls past
    the capacity are counted (`extra`), not kept. `on_full`: called after the call that
    fills the last slot and after every call past it (it may raise to end the program, as
    the model's light timing pass does where the capture ended the script)."""

    def __init__(self, capacity: int, on_full: Callable[[], None] | None = None):
        self.apis: list[str | None] = [None] * capacity
        self.durations: list[int] = [0] * capacity
        self.count = 0
        self.extra = 0
        self._on_full = on_full

    def add(self, api: str, duration_ns: int) -> None:
        count = self.count
        if count < len(self.apis):
            self.apis[count] = api
            self.durations[count] = duration_ns
            self.count = count = count + 1
            if count < len(self.apis):
                return
        else:
            self.extra += 1
        if self._on_full is not None:
            self._on_full()

    def durations_ns(self) -> list[int]:
        return self.durations[:self.count]


class _OpenCall:
    __slots__ = ("index", "site", "children_ns")

    def __init__(self, index: int, site: CallSite):
        self.index, self.site, self.children_ns = index, site, 0


class _ThreadState(threading.local):
    def __init__(self) -> None:
        self.stack: list[_OpenCall] = []
        self.internal = 0     # > 0 while the tracer itself runs framework code (sync, shapes)


class Recorder:
    def __init__(self, *, nested: bool = False, timing: str = SERIAL,
                 clock: Clock = time.perf_counter_ns, max_events: int = DEFAULT_MAX_EVENTS,
                 observer: CallObserver | None = None, through: LayerRule | None = None):
        if timing not in TIMINGS:
            raise ValueError(f"timing must be one of {TIMINGS}, not {timing!r}")
        self.nested = nested
        self.timing = timing
        self._clock = clock
        self._syncs: dict[str, Callable[[], None]] = {}
        self._describers: dict[str, TensorDescriber] = {}
        self._local = _ThreadState()
        self._lock = threading.Lock()
        self._counter = itertools.count()
        self._store = _Store(max_events)
        self._signature_ids: dict[Signature, int] = {}
        self._signatures: list[Signature] = []
        self._thread_names: dict[int, str] = {}
        self._active = False
        self._start_ns = self._stop_ns = 0
        self._observer = observer
        self._through = through
        self._markers: list[tuple[int, str]] = []

    # -- configuration ------------------------------------------------------------------
    def add_framework(self, framework: str, *, sync: Callable[[], None],
                      tensor_spec: TensorDescriber) -> None:
        """Register how to wait for `framework`'s queued work and how to describe its tensors
        (the sync is only called in serial timing)."""
        if sync is not NO_SYNC:
            self._syncs[framework] = sync
        self._describers[framework] = tensor_spec

    @property
    def recorded_calls(self) -> int:
        return self._store.recorded_calls

    def start(self) -> None:
        self._start_ns = self._clock()
        self._active = True

    def stop(self) -> None:
        self._active = False
        self._stop_ns = self._clock()

    @property
    def active(self) -> bool:
        return self._active

    def mark(self, label: str = "") -> None:
        """A step boundary (opbench.model.step()): it takes an index of its own, so the calls
        that started before it have lower indices and the ones after it higher."""
        if self._active:
            with self._lock:
                self._markers.append((next(self._counter), str(label)))

    # -- the tracer's own framework calls ------------------------------------------------
    @contextmanager
    def internal(self) -> Iterator[None]:
        """Framework calls made by the tracer itself (sync, reading shapes) are not traced."""
        local = self._local
        local.internal += 1
        try:
            yield
        finally:
            local.internal -= 1

    def in_internal(self) -> bool:
        return self._local.internal > 0

    def traces_through(self, site: CallSite, layer: Any, args: tuple, kwargs: dict) -> bool:
        """Whether a framework layer's call about to run is traced through: not recorded
        itself, the calls its forward makes recorded in its place. Only a call that would be
        recorded at the top level is asked about (inside a recorded call nothing is)."""
        rule = self._through
        local = self._local
        if rule is None or local.internal or not self._active or local.stack:
            return False
        local.internal += 1
        try:
            return rule(site, layer, args, kwargs)
        finally:
            local.internal -= 1

    # -- the hot path -------------------------------------------------------------------
    def call(self, site: CallSite, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """Run fn(*args, **kwargs), recording it as a call of `site` when the nesting rules
        say so. Exceptions propagate unchanged; the call is then recorded as failed."""
        clock = self._clock
        enter_ns = clock()
        local = self._local
        if local.internal or not self._active:
            return fn(*args, **kwargs)
        stack = local.stack
        parent = stack[-1] if stack else None
        if parent is None:
            if site.kind == SCOPE and not self.nested:
                return fn(*args, **kwargs)
        elif not self.nested or (parent.site.api == site.api
                                 and parent.site.framework == site.framework):
            return fn(*args, **kwargs)

        local.internal += 1
        try:
            signature = self._intern(site, args, kwargs)
        finally:
            local.internal -= 1
        open_call = _OpenCall(next(self._counter), site)
        stack.append(open_call)
        sync = self._syncs.get(site.framework) if self.timing == SERIAL else None
        error: str | None = None
        start_ns = clock()
        try:
            result = fn(*args, **kwargs)
            if sync is not None:
                local.internal += 1
                try:
                    sync()
                finally:
                    local.internal -= 1
        except BaseException as exc:
            error = type(exc).__name__
            raise
        finally:
            end_ns = clock()
            stack.pop()
            duration_ns = end_ns - start_ns
            if stack:
                stack[-1].children_ns += duration_ns
            self._finish(open_call, parent, len(stack), signature, enter_ns, start_ns, end_ns,
                         error)
        if self._observer is not None:
            local.internal += 1
            try:
                self._observer.on_call(open_call.index, site, args, kwargs, result)
            finally:
                local.internal -= 1
        return result

    def _intern(self, site: CallSite, args: tuple, kwargs: dict) -> int:
        describer = self._describers.get(site.framework, _no_tensors)
        try:
            if site.defaults and kwargs:
                kwargs = without_defaults(kwargs, site.defaults)
            signature = describe_call(args[site.skip:] if site.skip else args, kwargs,
                                      describer)
        except Exception:        # an odd argument must never break the traced program
            signature = UNREADABLE
        found = self._signature_ids.get(signature)
        if found is not None:
            return found
        with self._lock:
            found = self._signature_ids.get(signature)
            if found is None:
                found = len(self._signatures)
                self._signatures.append(signature)
                self._signature_ids[signature] = found
        return found

    def _finish(self, open_call: _OpenCall, parent: _OpenCall | None, depth: int,
                signature: int, enter_ns: int, start_ns: int, end_ns: int,
                error: str | None) -> None:
        site = open_call.site
        duration_ns = end_ns - start_ns
        thread_id = threading.get_ident()
        key = (site, signature)
        with self._lock:
            store = self._store
            stats = store.stats.get(key)
            if stats is None:
                stats = store.stats[key] = CallStats()
            stats.add(duration_ns, open_call.children_ns, error is not None)
            if thread_id not in self._thread_names:
                self._thread_names[thread_id] = threading.current_thread().name
            if len(store.events) < store.max_events:
                store.events.append(_new_event(CallEvent, (
                    open_call.index, site.framework, site.api, site.kind, thread_id, start_ns,
                    duration_ns, depth, parent.index if parent is not None else None,
                    signature, error is not None, error)))
            else:
                store.dropped += 1
            store.recorded_calls += 1
            bookkeeping_ns = (start_ns - enter_ns) + (self._clock() - end_ns)
            store.bookkeeping_ns += bookkeeping_ns
            if len(store.bookkeeping_samples) < BOOKKEEPING_SAMPLES:
                store.bookkeeping_samples.append(bookkeeping_ns)

    # -- calibration support ------------------------------------------------------------
    @contextmanager
    def detached(self, observer: CallObserver | None = None) -> Iterator[_Store]:
        """Run the real code path into a scratch store (for overhead calibration), leaving the
        trace itself untouched. Calls made on other threads meanwhile land in the scratch
        store too, so calibrate only once the traced region is over. `observer`: a scratch
        observer that sees the calibration's calls (so they pay what the traced calls paid
        between their timestamps, caches left cold by its work included)."""
        saved, scratch = self._store, _Store(self._store.max_events)
        was_active, own_observer = self._active, self._observer
        # the calibration's own calls are not the program's: the program's observer does not
        # see them
        self._store, self._active, self._observer = scratch, True, observer
        try:
            yield scratch
        finally:
            self._store, self._active, self._observer = saved, was_active, own_observer

    # -- results ------------------------------------------------------------------------
    def data(self) -> TraceData:
        with self._lock:
            store = self._store
            stop_ns = self._stop_ns if not self._active else self._clock()
            return TraceData(
                timing=self.timing, nested=self.nested, start_ns=self._start_ns,
                stop_ns=stop_ns, events=sorted(store.events, key=lambda e: e.index),
                stats={StatsKey(site.framework, site.api, site.kind, signature):
                       CallStats(**{f: getattr(v, f) for f in CallStats.__dataclass_fields__})
                       for (site, signature), v in store.stats.items()},
                signatures=list(self._signatures), thread_names=dict(self._thread_names),
                markers=list(self._markers),
                dropped_events=store.dropped, bookkeeping_ns=store.bookkeeping_ns,
                recorded_calls=store.recorded_calls,
                bookkeeping_median_ns=(statistics.median(store.bookkeeping_samples)
                                       if store.bookkeeping_samples else 0.0))


class TimingRecorder(Recorder):
    """A recorder that only times: the same interception and nesting rules, the same window
    (the call and its sync, nothing else), but no argument description, no events, no
    statistics and no observer; each recorded call that returned goes to a TimingSink as
    (API, duration). The model's light timing pass (opbench/model/capture/light.py) runs a
    script a second time under it, so its calls pay the interception alone between them
    (docs/model.md, "The self-check's base"). Top-level calls only (nested=False)."""

    def __init__(self, sink: TimingSink | _GrowingSink, *, timing: str = SERIAL,
                 clock: Clock = time.perf_counter_ns, through: LayerRule | None = None):
        super().__init__(nested=False, timing=timing, clock=clock, max_events=0,
                         through=through)
        self._sink = sink

    def call(self, site: CallSite, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        # the window (clock, call, sync, clock) is written out as Recorder.call writes it, not
        # shared through a helper: a helper's frame would sit inside the window it measures
        local = self._local
        if local.internal or not self._active:
            return fn(*args, **kwargs)
        stack = local.stack
        if stack or site.kind == SCOPE:
            return fn(*args, **kwargs)
        stack.append(site)
        sync = self._syncs.get(site.framework) if self.timing == SERIAL else None
        clock = self._clock
        start_ns = clock()
        try:
            result = fn(*args, **kwargs)
            if sync is not None:
                local.internal += 1
                try:
                    sync()
                finally:
                    local.internal -= 1
        finally:
            end_ns = clock()
            stack.pop()
        # only a call that returned is kept, as only those become a captured program's calls
        local.internal += 1
        try:
            self._sink.add(site.api, end_ns - start_ns)
        finally:
            local.internal -= 1
        return result

    @contextmanager
    def detached(self, observer: CallObserver | None = None) -> Iterator[Any]:
        """The overhead calibrations' calls go to a scratch sink (not the pass's)."""
        saved, scratch, was_active = self._sink, _GrowingSink(), self._active
        self._sink, self._active = scratch, True
        try:
            yield scratch
        finally:
            self._sink, self._active = saved, was_active


class _GrowingSink:
    """A calibration's scratch sink: every duration, no limit."""

    def __init__(self) -> None:
        self._durations: list[int] = []

    def add(self, api: str, duration_ns: int) -> None:
        self._durations.append(duration_ns)

    def durations_ns(self) -> list[int]:
        return list(self._durations)


__all__ = ["Recorder", "TimingRecorder", "TimingSink", "TraceData", "DEFAULT_MAX_EVENTS",
           "NO_SYNC", "SERIAL", "ASYNC"]

"""The Tracer: starts and stops interception of the chosen frameworks, and hands out outputs.

Frameworks are never imported by the tracer itself. One already imported when tracing starts
is intercepted at once; one imported later by the traced program is intercepted right after
its import finishes (a post-import hook on sys.meta_path), so `opbench trace -- python
train.py` sees a script's very first call without importing what the script does not use.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from dataclasses import replace
from typing import Any, Callable, Iterable

from opbench.config.vocabulary import FRAMEWORKS
from opbench.trace.chrome import write_chrome_trace
from opbench.trace.emit import EmitReport, emit_cases
from opbench.trace.events import SERIAL, TIMINGS
from opbench.trace.import_hook import PostImportHook
from opbench.trace.overhead import TracerOverhead, calibrate, calibrate_in_window
from opbench.trace.record import write_log, write_record
from opbench.trace.recorder import (DEFAULT_MAX_EVENTS, NO_SYNC, CallObserver, LayerRule,
                                    Recorder, TimingRecorder, TimingSink, TraceData)
from opbench.trace.summary import SummaryRow, summarize
from opbench.trace.table import table_text

BOTH = "both"
FRAMEWORK_CHOICES = (*FRAMEWORKS, BOTH)
_INTERCEPTORS = {"torch": ("opbench.trace.torch_intercept", "TorchInterceptor"),
                 "mindspore": ("opbench.trace.mindspore_intercept", "MindSporeInterceptor")}


class TraceError(Exception):
    """A user-facing problem starting or using a trace."""


def _installed(module: str) -> bool:
    if module in sys.modules:
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


class Tracer:
    """Times every framework API call made between start() and stop() (or inside `with`).

    nested: record calls made inside an API too (as its children); default only the
        outermost API call a program made is timed.
    sync: "serial" syncs after every call (per-call latency); "async" times the host-side
        launch only, and every output says so.
    framework: "torch", "mindspore" or "both" (whichever the program imports).
    """

    def __init__(self, *, nested: bool = False, sync: str = SERIAL,
                 framework: str | Iterable[str] = BOTH, max_events: int = DEFAULT_MAX_EVENTS,
                 calibrate_overhead: bool = True, observer: CallObserver | None = None,
                 calibration_observer: Callable[[], CallObserver] | None = None,
                 calibrate_in_window: bool = False, timing_sink: TimingSink | None = None,
                 through: LayerRule | None = None):
        if sync not in TIMINGS:
            raise TraceError(f"sync must be one of {', '.join(TIMINGS)}, not {sync!r}")
        names = (FRAMEWORKS if framework == BOTH else
                 (framework,) if isinstance(framework, str) else tuple(framework))
        unknown = [n for n in names if n not in FRAMEWORKS]
        if unknown or not names:
            raise TraceError(f"framework must be one of {', '.join(FRAMEWORK_CHOICES)}, "
                             f"not {framework!r}")
        self.nested = nested
        self.timing = sync
        self.explicit = framework != BOTH
        self.frameworks = names
        self.max_events = max_events
        self.calibrate_overhead = calibrate_overhead
        # sees each recorded call's arguments and result (opbench/model/capture/observer.py)
        self.observer = observer
        # makes a scratch observer for the overhead calibration's calls (None: none), so the
        # tracer's cost inside a call's duration is calibrated as the observed calls paid it
        self.calibration_observer = calibration_observer
        # also calibrate the tracer's cost inside a call's duration (trace/overhead.py): only
        # the model's capture uses that figure, so a plain trace does not pay for it
        self.calibrate_in_window = calibrate_in_window
        # timing only (trace/recorder.py TimingRecorder): each recorded call's API and
        # duration go to this sink, with no event, description or observer (the model's
        # light timing pass); None: the full recorder
        self.timing_sink = timing_sink
        # which framework layers are traced through (trace/recorder.py LayerRule); None: none,
        # every framework layer is one recorded call
        self.through = through
        self._recorder: Recorder | None = None
        self._interceptors: dict[str, Any] = {}
        self._hook: PostImportHook | None = None
        self._status: dict[str, str] = {}
        self._notes: list[str] = []
        self._data: TraceData | None = None

    # -- lifecycle ----------------------------------------------------------------------
    def start(self) -> Tracer:
        if self.running:
            raise TraceError("this tracer is already running")
        missing = [n for n in self.frameworks if not _installed(n)]
        if self.explicit and missing:
            raise TraceError(f"cannot trace {', '.join(missing)}: not installed")
        if self.timing_sink is not None:
            if self.nested or self.observer is not None:
                raise TraceError("a timing-only tracer records top-level calls with no "
                                 "observer")
            self._recorder = TimingRecorder(self.timing_sink, timing=self.timing,
                                            through=self.through)
        else:
            self._recorder = Recorder(nested=self.nested, timing=self.timing,
                                      max_events=self.max_events, observer=self.observer,
                                      through=self.through)
        self._interceptors, self._notes, self._data = {}, [], None
        self._status = {n: "not installed" for n in missing}
        self._recorder.start()
        pending = []
        for name in self.frameworks:
            if name in missing:
                continue
            if name in sys.modules:
                self._install(name, raise_errors=True)
            else:
                self._status[name] = "not imported by the traced code"
                pending.append(name)
        if pending:
            self._hook = PostImportHook(tuple(pending), self._on_import)
            self._hook.install()
        return self

    @property
    def running(self) -> bool:
        return self._recorder is not None and self._recorder.active

    @property
    def recorded_calls(self) -> int:
        """Calls recorded so far (for a live display while the program runs)."""
        recorder = getattr(self, "_recorder", None)
        return recorder.recorded_calls if recorder is not None else 0

    def mark(self, label: str = "") -> None:
        """Mark the start of a step (what opbench.model.step() calls under `opbench trace`):
        `opbench trace compare` then compares the steady steps only."""
        if self._recorder is not None:
            self._recorder.mark(label)

    def pause(self) -> None:
        """Stop recording and syncing and let the traced code run on at full speed: the
        intercepted calls then pass straight through (trace/recorder.py: inactive). Unlike
        stop(), it leaves the interception installed, so it may be called from inside an
        intercepted call (where undoing the patches would pull them from under the call on
        the stack); stop() later undoes them and returns what was recorded up to the pause."""
        if self._recorder is None:
            raise TraceError("this tracer was never started")
        self._recorder.stop()

    def _on_import(self, name: str) -> None:
        if not self.running or name in self._interceptors:
            return
        # Never break the program's own import: a failure becomes a note in the outputs.
        self._install(name, raise_errors=False)

    def _install(self, name: str, *, raise_errors: bool) -> None:
        recorder = self._recorder
        assert recorder is not None
        module_name, class_name = _INTERCEPTORS[name]
        try:
            from opbench.frameworks import get_adapter
            with recorder.internal():
                adapter = get_adapter(name)
                interceptor_class = getattr(importlib.import_module(module_name), class_name)
                sync = NO_SYNC if adapter.syncs_nothing() else adapter.sync
                interceptor = interceptor_class(recorder, sync)
            interceptor.install()
        except Exception as err:
            self._status[name] = f"not traced: {type(err).__name__}: {err}"
            if raise_errors:
                self.stop()
                raise TraceError(f"cannot trace {name}: {err}") from err
            return
        self._interceptors[name] = interceptor
        self._status[name] = "traced"

    def stop(self) -> TraceData:
        recorder = self._recorder
        if recorder is None:
            raise TraceError("this tracer was never started")
        if self._data is not None and not recorder.active:
            return self._data
        if self._hook is not None:
            self._hook.uninstall()
            self._hook = None
        recorder.stop()
        overheads = []
        if self.calibrate_overhead:
            for name, interceptor in self._interceptors.items():
                try:
                    with recorder.detached():
                        probe, traced, untraced = interceptor.calibration_loops()
                        overhead = calibrate(name, probe, traced, untraced)
                    overheads.append(self._with_in_window(recorder, interceptor, overhead))
                except Exception as err:   # never let the report break the program
                    self._notes.append(f"{name}: overhead calibration failed: {err}")
        facts: dict[str, dict[str, Any]] = {}
        for name in reversed(list(self._interceptors)):
            interceptor = self._interceptors[name]
            facts[name] = interceptor.facts()
            for problem in interceptor.uninstall():
                self._notes.append(f"{name}: {problem}")
        data = recorder.data()
        for name in self.frameworks:
            data.frameworks[name] = {"status": self._status.get(name, "not traced"),
                                     **facts.get(name, {})}
            data.notes.extend(f"{name}: {note}" for note in facts.get(name, {}).get("notes", []))
        data.overheads = overheads
        data.notes.extend(self._notes)
        self._interceptors = {}
        self._data = data
        return data

    def _with_in_window(self, recorder: Recorder, interceptor: Any,
                        overhead: TracerOverhead) -> TracerOverhead:
        """The overhead with the tracer's cost inside a call's duration calibrated, where the
        framework's interceptor has a sequence for it (trace/overhead.py)."""
        sequence = getattr(interceptor, "in_window_sequence", None)
        if sequence is None or not self.calibrate_in_window:
            return overhead
        observer = self.calibration_observer() if self.calibration_observer else None
        with recorder.detached(observer) as scratch:
            count, traced, untraced = sequence()
            in_window = calibrate_in_window(
                count, traced, untraced, scratch.durations_ns)
        return replace(overhead, in_window_ns_per_call=in_window)

    def __enter__(self) -> Tracer:
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> bool:  # noqa: ANN001
        self.stop()
        return False          # an exception in the traced code propagates unchanged

    # -- outputs ------------------------------------------------------------------------
    @property
    def data(self) -> TraceData:
        """What was recorded (a live snapshot while running)."""
        if self._data is not None and not self.running:
            return self._data
        if self._recorder is None:
            raise TraceError("this tracer was never started")
        return self._recorder.data()

    def rows(self, *, sort_by: str = "total", group_by_shape: bool = False) -> list[SummaryRow]:
        return summarize(self.data, sort_by=sort_by, group_by_shape=group_by_shape)

    def table(self, *, sort_by: str = "total", group_by_shape: bool = False,
              limit: int | None = None) -> str:
        """The per-API table as text (calls, total, mean, min, max, share of traced time)."""
        return table_text(self.data, sort_by=sort_by, group_by_shape=group_by_shape,
                          limit=limit)

    def export_chrome_trace(self, path: str | os.PathLike[str]) -> dict[str, int]:
        """Write a Chrome trace JSON (Perfetto, chrome://tracing); returns events per track."""
        return write_chrome_trace(self.data, path)

    def save_record(self, path: str | os.PathLike[str]) -> None:
        write_record(self.data, path)

    def write_log(self, path: str | os.PathLike[str]) -> None:
        write_log(self.data, path)

    def emit_cases(self, path: str | os.PathLike[str], mapping: Any = None) -> EmitReport:
        """Write one case per (API, shapes, dtypes) seen, for both frameworks."""
        return emit_cases(self.data, path, mapping)


def trace(*, nested: bool = False, sync: str = SERIAL, framework: str = BOTH,
          max_events: int = DEFAULT_MAX_EVENTS) -> Tracer:
    """A tracer to use as `with opbench.trace() as t:` (or t = opbench.trace(); t.start();
    ...; t.stop())."""
    return Tracer(nested=nested, sync=sync, framework=framework, max_events=max_events)

"""The light timing pass: the traced times' base (docs/model.md, "The self-check's base").

Under the capture a small call reads 1.2-2.3x its untraced time: the capture's observer
(~20-30 us of Python a call: describing arguments and outputs, finding the user's frame,
following tensors) runs between two calls and leaves caches cold; the tracer alone leaves
1.0-1.5x. So once the captured run is over, the capture runs the script a second time in
its own process under a timing-only tracer (trace/recorder.py TimingRecorder): the same
interception and nesting rules (top-level calls, each synced as the capture synced it, in
the same order), but nothing between two calls beyond the interception itself, and per call
only its API name and duration kept, in lists allocated up front.

Its durations replace the observed ones only where the second run made the captured calls:
as many (or, where the capture ended the script early or dropped calls past its cap, at
least as many: the second run is ended at the same call count), with the same API names in
the same order. Otherwise (random control flow, a script that fails, a MindSpore backward or
compiled function the capture made up and no tracer sees) the observed durations are kept
and `LightTiming.note` says why.

What holds from the untraced re-run tried before (branch selfbase): the captured run's
objects are frozen out of the collector for the second run (without it, hf_bert_inference's
steps alternated 1.6 and 6.2 ms: a collection every other step walking the capture's ~10^5
objects), the script's output is discarded (the user saw it once), and a script the capture
ended is ended at the same point.
"""
from __future__ import annotations

import contextlib
import gc
import os
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

from opbench.trace.events import SERIAL
from opbench.trace.recorder import TimingSink
from opbench.trace.tracer import Tracer

__all__ = ["LightTiming", "light_pass", "match_light", "LightEnough"]


class LightEnough(SystemExit):
    """Raised into the script once its second run has made as many calls as the captured
    run kept (where the capture ended the script or dropped calls past its cap)."""

    def __init__(self) -> None:
        super().__init__(0)


@dataclass(frozen=True)
class LightTiming:
    """What the pass gives the program: per captured call its light duration (empty: not
    used), why not (None: used), the timing-only tracer's calibrated cost inside a call, and
    the second run's wall time."""
    durations_ns: tuple[int, ...]
    note: str | None
    in_window_ns_per_call: float = 0.0
    wall_s: float = 0.0


class _TimingTracer(Protocol):
    def start(self) -> Any: ...

    def stop(self) -> Any: ...      # has .overheads (trace/overhead.py TracerOverhead)


def _framework_tracer(sink: TimingSink) -> _TimingTracer:
    # in-window calibrated as the capture's tracer is, on the same sequence of small calls,
    # with nothing observing them (as nothing observes the pass's calls)
    return Tracer(nested=False, sync=SERIAL, framework="both", timing_sink=sink,
                  calibrate_in_window=True)


def match_light(captured: Sequence[str | None], sink: TimingSink,
                ended_early: bool) -> tuple[tuple[int, ...], str | None]:
    """The light durations per captured call where the second run made the same calls in
    the same order, else () and why not. `captured`: per captured call, its API name (None:
    a call no tracer sees). `ended_early`: the capture did not run the script to its end,
    so the second run may have gone on past the captured calls."""
    made_up = sum(1 for api in captured if api is None)
    if made_up:
        return (), (f"{made_up} of the captured calls were made up by the capture (a "
                    f"MindSpore backward or compiled function), which a timing-only run "
                    f"does not see")
    wanted = len(captured)
    made = sink.count + sink.extra
    if sink.count < wanted or (sink.extra and not ended_early):
        return (), (f"its second run made {made} framework calls where the captured run "
                    f"made {wanted}")
    for position, (api, light_api) in enumerate(zip(captured, sink.apis)):
        if api != light_api:
            return (), (f"its second run's call {position} was {light_api} where the "
                        f"captured run's was {api} (the script's control flow differs "
                        f"between runs)")
    return tuple(sink.durations), None


def light_pass(captured: Sequence[str | None], run: Callable[[], Any], framework: str,
               ended_early: bool,
               make_tracer: Callable[[TimingSink], _TimingTracer] = _framework_tracer,
               clock: Callable[[], int] = time.perf_counter_ns) -> LightTiming:
    """Run the script again (`run`: its outcome has a `status`) under a timing-only tracer
    and match its calls against the captured ones (match_light). Never raises for the
    script's own failure."""
    if not captured:
        return LightTiming((), "the script made no framework call that was recorded")
    if any(api is None for api in captured):
        # not worth a second run: match_light would refuse it
        return LightTiming(*match_light(captured, TimingSink(0), ended_early))

    def enough() -> None:
        raise LightEnough()

    sink = TimingSink(len(captured), on_full=enough if ended_early else None)
    tracer = make_tracer(sink)
    failure: str | None = None
    in_window = 0.0
    # the captured run's objects (its program, events, tensors' descriptions) stay alive
    # in this process; frozen, the collector's passes in the second run skip them
    gc.freeze()
    started = clock()
    try:
        tracer.start()
        try:
            with open(os.devnull, "w", encoding="utf-8") as sink_file, \
                    contextlib.redirect_stdout(sink_file):
                try:
                    status = run().status
                except LightEnough:     # a runner that does not take SystemExit as run_target
                    status = 0
            if status != 0 and not (ended_early and sink.count >= len(captured)):
                failure = f"the script exited with status {status} in its second run"
        except KeyboardInterrupt:
            raise
        except BaseException as exc:      # the script's own failure, the second time
            last = traceback.format_exception_only(type(exc), exc)[-1].strip()
            failure = f"the script failed in its second run ({last})"
        finally:
            data = tracer.stop()
        calibrated = next((o for o in data.overheads if o.framework == framework), None)
        in_window = calibrated.in_window_ns_per_call if calibrated else 0.0
    finally:
        gc.unfreeze()
    wall_s = (clock() - started) / 1e9
    if failure is not None:
        return LightTiming((), failure, in_window, wall_s)
    durations, note = match_light(captured, sink, ended_early)
    return LightTiming(durations, note, in_window, wall_s)

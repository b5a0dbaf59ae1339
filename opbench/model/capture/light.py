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
from dataclasses import dataclass, replace
from typing import Any, Callable, Protocol, Sequence

from opbench.model.capture.lowering import traced_through
from opbench.trace.events import SERIAL
from opbench.trace.recorder import TimingSink
from opbench.trace.tracer import Tracer

__all__ = ["LightTiming", "light_pass", "match_light", "with_untimed", "LightEnough", "NO_LIGHT_NS",
           "SET_UP_SLACK"]

# Calls one run may make that the other does not, in one block (match_light): work a library
# does once per process (two `torch.device` calls in hf_bert_inference's first run, none in
# its second), far fewer than a step of any corpus script (7 to 891 calls).
SET_UP_SLACK = 32
# A captured call the second run made no counterpart of (Program.light_ns).
NO_LIGHT_NS = -1


class LightEnough(SystemExit):
    """Raised into the script once its second run has made as many calls as the captured
    run kept (where the capture ended the script or dropped calls past its cap)."""

    def __init__(self) -> None:
        super().__init__(0)


@dataclass(frozen=True)
class LightTiming:
    """What the pass gives the program: per captured call its light duration (empty: not
    used; NO_LIGHT_NS: a call the second run did not make), why not (or, where used, the
    calls one run made and the other did not; None: the runs agreed call for call), the
    timing-only tracer's calibrated cost inside a call, and the second run's wall time."""
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
    # the same layers traced through as in the capture, so the two runs make the same calls
    return Tracer(nested=False, sync=SERIAL, framework="both", timing_sink=sink,
                  calibrate_in_window=True, through=traced_through)


def match_light(captured: Sequence[str | None], sink: TimingSink, ended_early: bool,
                slack: int = SET_UP_SLACK) -> tuple[tuple[int, ...], str | None]:
    """The light durations per captured call where the second run made the same calls in
    the same order, else () and why not. `captured`: per captured call, its API name (None:
    a call no tracer sees). `ended_early`: the capture did not run the script to its end,
    so the second run may have gone on past the captured calls.

    One block of at most `slack` calls made in one run only is allowed in the first half of
    the captured calls, after which the two runs agree to the captured run's end: a
    library's work done once per process (the first run's `transformers` models made two
    `torch.device` calls the second did not). A
    captured call with no counterpart reads -1 (steady.own_time_ns keeps its observed
    time); the note then says how many there were (the durations are still used)."""
    made_up = sum(1 for api in captured if api is None)
    if made_up:
        return (), (f"{made_up} of the captured calls were made up by the capture (a "
                    f"MindSpore backward or compiled function), which a timing-only run "
                    f"does not see")
    wanted, light = len(captured), sink.apis[:sink.count]
    made = sink.count + sink.extra
    first = next((k for k, (a, b) in enumerate(zip(captured, light)) if a != b),
                 min(wanted, len(light)))
    # the block must end in the first half of the captured calls (set-up, not the steps)
    shifts = [d for d in sorted(range(-slack, slack + 1), key=abs)
              if d == 0 or first + max(d, 0) <= wanted // 2]
    for shift in shifts:
        # shift > 0: the captured run made `shift` calls at `first` that the second did
        # not; shift < 0: the second run made -shift calls there that the first did not
        counterparts = wanted - shift
        if sink.count < counterparts or (not ended_early and made != counterparts):
            continue
        if shift >= 0 and captured[first + shift:] != light[first:counterparts]:
            continue
        if shift < 0 and captured[first:] != light[first - shift:counterparts]:
            continue
        durations = sink.durations
        if shift >= 0:
            matched = (*durations[:first], *(NO_LIGHT_NS,) * shift,
                       *durations[first:counterparts])
        else:
            matched = (*durations[:first], *durations[first - shift:counterparts])
        if shift == 0:
            return matched, None
        which = captured[first:first + shift] if shift > 0 else light[first:first - shift]
        return matched, (f"{'the captured' if shift > 0 else 'its second'} run made "
                         f"{abs(shift)} calls at call {first} the other did not "
                         f"({', '.join(sorted(set(which)))}); "
                         f"{'their observed times are kept' if shift > 0 else 'left out'}")
    if sink.count < wanted or (made != wanted and not ended_early):
        return (), (f"its second run made {made} framework calls where the captured run "
                    f"made {wanted}")
    return (), (f"its second run's call {first} was {light[first]} where the captured run's "
                f"was {captured[first]} (the script's control flow differs between runs)")


def light_pass(captured: Sequence[str | None], run: Callable[[], Any], framework: str,
               ended_early: bool,
               make_tracer: Callable[[TimingSink], _TimingTracer] = _framework_tracer,
               clock: Callable[[], int] = time.perf_counter_ns,
               untimed: frozenset[int] = frozenset()) -> LightTiming:
    """Run the script again (`run`: its outcome has a `status`) under a timing-only tracer
    and match its calls against the captured ones (match_light). `untimed`: captured calls
    the capture added that have no time of their own (a custom autograd.Function's output,
    model/autograd_function.py): left out of the matching, they read NO_LIGHT_NS. Never
    raises for the script's own failure."""
    if untimed:
        kept = [api for i, api in enumerate(captured) if i not in untimed]
        timing = light_pass(kept, run, framework, ended_early, make_tracer, clock)
        return replace(timing, durations_ns=with_untimed(timing.durations_ns, len(captured),
                                                         untimed))
    if not captured:
        return LightTiming((), "the script made no framework call that was recorded")
    if any(api is None for api in captured):
        # not worth a second run: match_light would refuse it
        return LightTiming(*match_light(captured, TimingSink(0), ended_early))

    def enough() -> None:
        raise LightEnough()

    # room for the calls the second run may make that the first did not (match_light)
    sink = TimingSink(len(captured) + SET_UP_SLACK, on_full=enough if ended_early else None)
    tracer = make_tracer(sink)
    failure: str | None = None
    in_window = 0.0
    # the captured run's objects (its program, events, tensors' descriptions) stay alive
    # in this process; frozen, the collector's passes in the second run skip them
    gc.freeze()
    started = clock()
    try:
        try:
            tracer.start()
        except Exception as exc:      # the interception would not install: no second run
            return LightTiming((), f"the timing-only tracer could not start ({exc})")
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


def with_untimed(durations: tuple[int, ...], count: int, untimed: frozenset[int]
                 ) -> tuple[int, ...]:
    """The light durations of the calls other than `untimed` spread back over all `count`
    captured calls, NO_LIGHT_NS at the untimed ones (steady.own_time_ns then keeps their
    observed time); () stays () (the pass not used)."""
    if not durations:
        return ()
    timed = iter(durations)
    return tuple(NO_LIGHT_NS if i in untimed else next(timed) for i in range(count))

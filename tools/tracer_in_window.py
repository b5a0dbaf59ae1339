"""The tracer's cost INSIDE a recorded call's duration, per call, on torch CPU: the
measurement behind trace/overhead.py `calibrate_in_window` (docs/model.md, "The
self-check's base").

    python tools/tracer_in_window.py [--repeats 400]

Nine different small calls run in sequence, first untraced (each timed alone with
perf_counter_ns, as a replay times a call), then under the tracer twice (serial timing): with
no observer (what the window itself holds: the frames between the recorder's two clock reads)
and with a capture observer (what `opbench model` runs a script under: its work between two
calls leaves caches cold for the next), then under the timing-only tracer of the light
timing pass ("light": model/capture/light.py), then untraced again. Prints, per call, the untraced
median (mean of the two untraced passes), the median duration the recorder gave it each way
and its ratio to the untraced median; then what the capture calibrated (Program's
in_window_ns_per_call: the median of such differences over its own eight-call sequence).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from opbench.model.capture.observer import Capture  # noqa: E402
from opbench.trace.events import SERIAL  # noqa: E402
from opbench.trace.recorder import TimingSink  # noqa: E402
from opbench.trace.tracer import Tracer  # noqa: E402


def _calls() -> list[tuple[str, object]]:
    torch.manual_seed(0)
    x, w, b = torch.randn(8, 16), torch.randn(16, 16), torch.randn(16)
    one_a, one_b = torch.ones(1), torch.ones(1)
    layer = torch.nn.Linear(16, 16)
    return [("torch.add 1-element", lambda: torch.add(one_a, one_b)),
            ("torch.add 8x16", lambda: torch.add(x, x)), ("Tensor.__add__", lambda: x + x),
            ("Tensor.relu", lambda: x.relu()), ("F.linear", lambda: F.linear(x, w, b)),
            ("F.softmax", lambda: F.softmax(x, dim=-1)), ("nn.Linear", lambda: layer(x)),
            ("torch.matmul", lambda: torch.matmul(x, w)), ("Tensor.sum", lambda: x.sum())]


def untraced(calls: list, repeats: int) -> dict[str, float]:
    out: dict[str, list[int]] = {name: [] for name, _ in calls}
    for _ in range(repeats):
        for name, call in calls:
            start = time.perf_counter_ns()
            call()
            out[name].append(time.perf_counter_ns() - start)
    return {name: statistics.median(v) for name, v in out.items()}


def traced(calls: list, repeats: int, *, observed: bool) -> tuple[dict[str, float], float]:
    def capture() -> Capture:
        return Capture(max_calls=10 ** 6, steps=None)

    tracer = Tracer(nested=False, sync=SERIAL, framework="torch",
                    observer=capture() if observed else None, max_events=10 ** 6,
                    calibrate_in_window=observed,
                    calibration_observer=capture if observed else None)
    tracer.start()
    for _ in range(repeats):
        for _, call in calls:
            call()
    data = tracer.stop()
    events = [e for e in data.events if e.depth == 0]
    out: dict[str, list[int]] = {name: [] for name, _ in calls}
    for i, event in enumerate(events):
        out[calls[i % len(calls)][0]].append(event.duration_ns)
    calibrated = next((o.in_window_ns_per_call for o in data.overheads
                       if o.framework == "torch"), 0.0)
    return {name: statistics.median(v) for name, v in out.items()}, calibrated


def light(calls: list, repeats: int) -> tuple[dict[str, float], float]:
    """The timing-only tracer of the model's light timing pass (model/capture/light.py):
    the same interception, per call only its API and duration kept."""
    sink = TimingSink(repeats * len(calls))
    tracer = Tracer(nested=False, sync=SERIAL, framework="torch", timing_sink=sink,
                    calibrate_in_window=True)
    tracer.start()
    for _ in range(repeats):
        for _, call in calls:
            call()
    data = tracer.stop()
    out: dict[str, list[int]] = {name: [] for name, _ in calls}
    for i, ns in enumerate(sink.durations_ns()):
        out[calls[i % len(calls)][0]].append(ns)
    calibrated = next((o.in_window_ns_per_call for o in data.overheads
                       if o.framework == "torch"), 0.0)
    return {name: statistics.median(v) for name, v in out.items()}, calibrated


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=400)
    args = parser.parse_args()
    calls = _calls()
    before = untraced(calls, args.repeats)
    bare, _ = traced(calls, args.repeats, observed=False)
    recorded, calibrated = traced(calls, args.repeats, observed=True)
    timed_only, light_calibrated = light(calls, args.repeats)
    after = untraced(calls, args.repeats)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"{args.repeats} repeats; ns, medians")
    print(f"{'call':20} {'untraced':>9} {'no observer':>11} {'ratio':>6} {'capture':>9} "
          f"{'ratio':>6} {'light':>9} {'ratio':>6}")
    for name, _ in calls:
        own = (before[name] + after[name]) / 2
        print(f"{name:20} {own:9.0f} {bare[name]:11.0f} {bare[name] / own:6.2f} "
              f"{recorded[name]:9.0f} {recorded[name] / own:6.2f} "
              f"{timed_only[name]:9.0f} {timed_only[name] / own:6.2f}")
    print(f"the capture's calibrated in-window cost: {calibrated:.0f} ns a call; the light "
          f"pass's: {light_calibrated:.0f} ns a call")
    return 0


if __name__ == "__main__":
    sys.exit(main())

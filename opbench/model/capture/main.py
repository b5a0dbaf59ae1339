"""The capture process: `python -m opbench.model.capture.main --out FILE -- script.py ARGS`,
started by `opbench model` in the interpreter its command names, so the script runs where
its user runs it (that interpreter's packages, threads and launch mode).

It runs the script unchanged under the tracer (top-level calls only, synced after each one
so each duration is that call's latency) with a Capture observer, then a second time under a
timing-only tracer (light.py: the traced times' base where the two runs made the same calls),
and writes the program (opbench/model/program.py) as JSON, also when the script fails or
exits early: what was captured before is kept. Exit status: the script's own (first run).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from typing import Any

from opbench.model import markers
from opbench.model.capture.light import LightTiming, light_pass
from opbench.model.capture.lowering import traced_through
from opbench.model.capture.observer import DEFAULT_MAX_CALLS, Capture
from opbench.model.capture.ms_backward import MindSporeBackward
from opbench.model.capture.ms_grad_operation import MindSporeGradOperation
from opbench.model.capture.ms_jit import MindSporeJit
from opbench.model.capture.torch_checkpoint import TorchCheckpoint
from opbench.model.capture.torch_function import TorchFunctionApply
from opbench.model.program import Program
from opbench.model.steady import DEFAULT_CAPTURE_STEPS
from opbench.trace.events import SERIAL
from opbench.trace.import_hook import PostImportHook
from opbench.trace.target import TargetError, parse_target, run_target
from opbench.trace.tracer import Tracer

__all__ = ["main", "capture_program"]

# Why a MindSpore script gets no light timing pass (docs/model.md, "The self-check's base";
# corpus run 2026-11-27 22:49-22:59, where it had one): the capture's work between calls is
# small against MindSpore's calls (its in-window cost calibrates to 0), while a second run
# lands in another of MindSpore's speed modes as often as not (its steady step read 0.45,
# 0.87, 0.96 and 1.04 of the captured run's in four scripts: mindcv_mobilenet_inference 169
# against 77 ms), and the speed probe, taken after the captured run, would no longer tell
# the traced times' mode.
LIGHT_NOT_MINDSPORE = ("no light timing pass for a MindSpore script: a second run lands in "
                       "another of its speed modes as often as not")
LAUNCH_QUEUED = "queued"
LAUNCH_BLOCKING = "blocking"


class _MindSporeSettings:
    """What the script asked MindSpore for: launch_blocking() and threads_num(N) cannot be
    read back once set, so their calls are watched from the moment mindspore is imported."""

    def __init__(self) -> None:
        self.blocking = False
        self.threads: int | None = None
        self._hook = PostImportHook(("mindspore",), self._on_import)

    def install(self) -> None:
        self._hook.install()

    def uninstall(self) -> None:
        self._hook.uninstall()

    def _on_import(self, name: str) -> None:
        ms = sys.modules.get("mindspore")
        runtime = getattr(ms, "runtime", None)
        original_blocking = getattr(runtime, "launch_blocking", None)
        if original_blocking is not None:
            def launch_blocking(*args: Any, **kwargs: Any) -> Any:
                self.blocking = True
                return original_blocking(*args, **kwargs)
            runtime.launch_blocking = launch_blocking
        try:
            tuning = ms.device_context.cpu.op_tuning
            original_threads = tuning.threads_num
        except AttributeError:
            return

        def threads_num(*args: Any, **kwargs: Any) -> Any:
            if args:
                self.threads = int(args[0])
            return original_threads(*args, **kwargs)
        tuning.threads_num = threads_num


def _traced_framework(calls: list, imported: list[str]) -> str:
    counts: dict[str, int] = {}
    for call in calls:
        counts[call.framework] = counts.get(call.framework, 0) + 1
    if counts:
        return max(counts, key=lambda name: counts[name])
    return imported[0] if imported else "none"


class EnoughSteps(SystemExit):
    """Raised into the script once the steps wanted are recorded: it ends the script as
    sys.exit(0) would (a SystemExit, so `except Exception` in a training loop does not
    swallow it; one that does is ended again at its next framework call)."""

    def __init__(self) -> None:
        super().__init__(0)


def capture_program(words: list[str], max_calls: int = DEFAULT_MAX_CALLS,
                    steps: int | None = DEFAULT_CAPTURE_STEPS,
                    run_on: bool = False, light: bool = True) -> Program:
    """Run the script the command words name under the capture; never raises for the
    script's own failure (the program records it). Once the warm-up step and `steps` steady
    steps are recorded (None: no limit), the script is ended, or with `run_on` runs on
    untraced. Then, with `light`, the light timing pass (light.py) runs it again."""
    target = parse_target(words)
    ended: list[str] = []

    def on_enough() -> None:
        if run_on:
            if not ended:
                ended.append(f"the capture stopped once {steps} steady steps were recorded "
                             f"(--capture-steps); the script ran on untraced")
                # pause, not stop: this runs inside an intercepted call, whose patches
                # stop() would undo under it; the capture's stop() at the end undoes them
                tracer.pause()
            return
        if not ended:
            ended.append(f"the capture ended the script once {steps} steady steps were "
                         f"recorded (--capture-steps)")
        raise EnoughSteps()

    capture = Capture(max_calls=max_calls, steps=steps, on_enough=on_enough)
    ms_settings = _MindSporeSettings()
    ms_settings.install()
    ms_backward = MindSporeBackward(capture)
    ms_backward.install()
    ms_grad_operation = MindSporeGradOperation(capture)
    ms_grad_operation.install()
    ms_jit = MindSporeJit(capture)
    ms_jit.install()
    torch_function = TorchFunctionApply(capture)
    torch_function.install()
    torch_checkpoint = TorchCheckpoint(capture)
    torch_checkpoint.install()
    # the tracer keeps an event per call; the capture needs those of its calls only (a call
    # that raised has an event and no program call: twice as many is room enough)
    tracer = Tracer(nested=False, sync=SERIAL, framework="both", observer=capture,
                    max_events=2 * max_calls,
                    # the overhead calibration's calls are observed as the script's were, by
                    # a capture of their own (its work between two calls is part of what a
                    # call's duration pays: trace/overhead.py)
                    calibration_observer=lambda: Capture(max_calls=max_calls, steps=None),
                    calibrate_in_window=True, through=traced_through)
    markers.activate(capture)
    status, error = 0, None
    tracer.start()
    try:
        outcome = run_target(target)
        status = outcome.status
        if outcome.message:
            error = outcome.message
    except BaseException as exc:       # the script failed: keep what was captured
        status = 130 if isinstance(exc, KeyboardInterrupt) else 1
        # the traceback's last line, as the user reads it last ("ValueError: boom")
        error = traceback.format_exception_only(type(exc), exc)[-1].strip()
        tb = traceback.format_exc(limit=-6)
        sys.stderr.write(tb)
    finally:
        data = tracer.stop()
        markers.deactivate()
        ms_settings.uninstall()
        ms_backward.uninstall()
        ms_grad_operation.uninstall()
        ms_jit.uninstall()
        torch_function.uninstall()
        torch_checkpoint.uninstall()
    calls = capture.calls(data.events)
    imported = [n for n in ("torch", "mindspore") if n in sys.modules]
    framework = _traced_framework(calls, imported)
    probe_s = _speed_probe() if framework == "mindspore" else None
    facts = data.frameworks.get(framework, {})
    threads, launch, device = _run_settings(framework, ms_settings)
    calibrated = next((o for o in data.overheads if o.framework == framework), None)
    overhead = calibrated.per_call_ns if calibrated else 0.0
    in_window = calibrated.in_window_ns_per_call if calibrated else 0.0
    wall = (calls[-1].start_ns + calls[-1].duration_ns - calls[0].start_ns) if calls else 0
    if not light:
        timing = LightTiming((), "the light timing pass was not asked for")
    elif status != 0:
        timing = LightTiming((), "the script failed, so it was not run a second time")
    elif framework == "mindspore":
        timing = LightTiming((), LIGHT_NOT_MINDSPORE)
    else:
        timing = light_pass(capture.traced_apis(data.events), lambda: run_target(target),
                            framework, bool(ended) or capture.dropped > 0,
                            untimed=capture.function_positions())
    return Program(
        framework=framework, version=str(facts.get("version", "")), threads=threads,
        launch=launch, device=device, timing=SERIAL, calls=tuple(calls),
        externals=tuple(capture.externals()), markers=tuple(capture.markers),
        wall_ns=wall, overhead_ns_per_call=float(overhead),
        in_window_ns_per_call=float(in_window), notes=tuple(data.notes),
        dropped_calls=capture.dropped, script_status=status, script_error=error,
        frameworks_imported=tuple(imported), cpus=_affinity(),
        ended_early=ended[0] if ended else None, speed_probe_s=probe_s,
        light_ns=timing.durations_ns, light_note=timing.note,
        light_in_window_ns_per_call=float(timing.in_window_ns_per_call),
        light_pass_s=round(timing.wall_s, 3))


def _speed_probe() -> float | None:
    """The speed probe in the script's process, right after its last call (the mode its
    steps ran in, as far as one process tells: model/speed_probe.py); None where it cannot
    run (graph mode, a MindSpore without the pipeline's executor)."""
    from opbench.frameworks.mindspore_adapter import find_pynative_executor
    from opbench.model.speed_probe import mindspore_speed_probe
    try:
        ms = sys.modules["mindspore"]
        if ms.get_context("mode") != ms.PYNATIVE_MODE:
            return None
        executor, _ = find_pynative_executor()
        return mindspore_speed_probe(executor.sync)
    except Exception:        # the capture stands without it; the self-check says so
        return None


def _affinity() -> tuple[int, ...]:
    """The cores the script could run on: the replays run on the same ones."""
    try:
        return tuple(sorted(os.sched_getaffinity(0)))
    except (AttributeError, OSError):      # not Linux: no affinity to keep
        return ()


def _run_settings(framework: str, ms: _MindSporeSettings) -> tuple[int | None, str, str]:
    """Threads, launch mode and device the script ran with."""
    if framework == "torch":
        torch = sys.modules["torch"]
        return int(torch.get_num_threads()), LAUNCH_BLOCKING, "cpu"
    if framework == "mindspore":
        target = "cpu"
        try:
            target = str(sys.modules["mindspore"].get_context("device_target")).lower()
        except Exception:     # an old MindSpore without the context key: CPU is the default
            pass
        return ms.threads, LAUNCH_BLOCKING if ms.blocking else LAUNCH_QUEUED, target
    return None, LAUNCH_BLOCKING, "cpu"


def write_program(program: Program, path: str) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(program.to_json(), handle, separators=(",", ":"))
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m opbench.model.capture.main")
    parser.add_argument("--out", required=True)
    parser.add_argument("--max-calls", type=int, default=DEFAULT_MAX_CALLS)
    parser.add_argument("--steps", type=int, default=DEFAULT_CAPTURE_STEPS,
                        help="steady steps to record, then end the script (0: no limit)")
    parser.add_argument("--run-on", action="store_true",
                        help="after the steps, let the script run on untraced")
    parser.add_argument("--no-light-pass", action="store_true",
                        help="do not run the script a second time to time its calls "
                             "(the traced times are then the captured run's)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    words = args.command[1:] if args.command[:1] == ["--"] else args.command
    try:
        program = capture_program(words, args.max_calls, args.steps or None, args.run_on,
                                  not args.no_light_pass)
    except TargetError as exc:
        sys.stderr.write(f"opbench model: {exc}\n")
        return 2
    write_program(program, args.out)
    return program.script_status


if __name__ == "__main__":
    sys.exit(main())

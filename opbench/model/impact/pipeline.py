"""`opbench model` as a library call: a user's script -> what each API costs its model.

  capture (the script, in its interpreter) -> steady state -> one step as a program
  -> probe each framework (routes chosen, outputs fingerprinted and compared)
  -> timed replays, one framework per process, interleaved A B B A ...
  -> projected step time per framework, time lost per signature and per API (project.py)

The traced framework replays in the launch mode and with the threads the script ran with;
the other framework with the same threads and in its own default launch mode (MindSpore:
queued), unless `launch` names one. Nothing here prints: progress goes to a callback.

A side (config/sides.py) is a framework in an interpreter: each side's replay processes run
in its `python`, or in the script's interpreter when it names none (where the user's
frameworks are installed). Both sides on one framework (two builds: `--reference
mindspore@envs/ms29/bin/python --target mindspore`) replay the script's calls as the script
made them, every call in both (no route translation), in the script's launch mode; the
figures are keyed by the sides' names (config.sides.side_labels), and the time lost is what
the target build loses against the reference build.
"""
from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from opbench.config.sides import Side, side_labels
from opbench.config.vocabulary import FRAMEWORKS
from opbench.model.capture.observer import DEFAULT_MAX_CALLS
from opbench.model.replay.optimizer_fold import adam_update_tolerances
from opbench.model.impact.alias_windows import alias_windows
from opbench.model.impact.mode_match import ModeMatch, mode_match, round_sums
from opbench.model.impact.output_check import CHECK_ATOL, CHECK_RTOL, compare as _compare
from opbench.model.impact.processes import (Interpreter, ModelError, ReplayFailed,
                                            interpreter_version, run_capture, run_replay,
                                            side_interpreter, split_command)
from opbench.model.program import (Dtype, Ext, Lit, Program, Ref, Seq, SliceOf, output_at,
                                   refs_in)
from opbench.model.impact.project import (MODES_APART, Estimate, FrameworkTiming, api_rows,
                                          call_times, processes_split, signature_rows, step_ratio,
                                          step_time)
from opbench.model.replay.executor import CallStatus
from opbench.model.replay.randomness import draws_random_numbers
from opbench.model.replay.truncation import truncation_tolerances
from opbench.model.steady import (DEFAULT_CAPTURE_STEPS, Region, RegionError, StepProgram,
                                  find_region, step_program)
from opbench.runner import ipc
from opbench.trace.signature import SHORT_DTYPES

__all__ = ["ModelOptions", "ModelImpact", "measure_model", "ModelError"]

DEFAULT_LAUNCH = {"torch": "blocking", "mindspore": "queued"}
# Replay processes per framework: MindSpore's speed differs up to 3x between them here (and
# switches modes within one), so the process is the unit of the projection (project.py). 6
# give a t interval of 5 degrees of freedom, at ~4 s per replay process of the transformer
# example and ~11 s of the CNN's.
DEFAULT_PROCESSES = 6
# Where a framework's processes split into modes (project.MODES_APART), it gets more
# processes, up to this many: the mean of 6 of the 32 MindSpore processes measured here falls
# within 25% of their overall mean in 77% of draws, of 16 in 95% (docs/model.md). A planned
# second stage, not a stop on the estimate's value.
DEFAULT_MAX_PROCESSES = 16

Progress = Callable[[str], None]
# Three minutes: the measuring processes' start-up (~15 s) and, at ~2.5 s per signature and
# process, the dozen heaviest signatures of a small model.
DEFAULT_ISOLATED_BUDGET_S = 180.0


@dataclass(frozen=True)
class ModelOptions:
    # python None: the script's interpreter (not opbench's: the script's frameworks are there)
    reference: Side = Side("torch")
    target: Side = Side("mindspore")
    processes: int = DEFAULT_PROCESSES
    max_processes: int = DEFAULT_MAX_PROCESSES   # where the processes split into modes
    samples: int = 5               # step samples per round
    passes: int = 2                # per-call passes per round
    rounds: int = 3                # rounds per process
    launch: str | None = None      # the other framework's launch mode (default: its own)
    skip_first_calls: int | None = None
    max_calls: int = DEFAULT_MAX_CALLS
    # steady steps the capture records before it ends the script (None: all it runs)
    capture_steps: int | None = DEFAULT_CAPTURE_STEPS
    run_on: bool = False           # after those steps the script runs on, untraced
    keep_going: bool = False       # a script that failed: replay what ran before
    # Time for measuring the heaviest signatures alone (isolated.py); 0: none.
    isolated_budget_s: float = DEFAULT_ISOLATED_BUDGET_S


@dataclass
class ModelImpact:
    """Everything `opbench model` found; views and JSON are built from it."""
    command: list[str]
    interpreter: str
    reference: str                 # the sides' names (side_labels): every dict's keys
    target: str
    traced_framework: str          # the name of the side that replays as the script ran
    program: Program
    region: Region
    step: StepProgram
    launch: dict[str, str] = field(default_factory=dict)
    threads: int | None = None
    status: dict[str, list[CallStatus]] = field(default_factory=dict)
    covered: list[bool] = field(default_factory=list)
    # alias calls whose traced window holds work no replay runs: why (alias_windows.py)
    windows: dict[int, str] = field(default_factory=dict)
    mismatches: list[dict[str, Any]] = field(default_factory=list)
    step_time: dict[str, Estimate] = field(default_factory=dict)
    step_ratio: dict[str, Any] = field(default_factory=dict)
    scale: dict[str, float] = field(default_factory=dict)
    # per step, the calls each framework ran as themselves (no stand-ins), each synced
    call_sum_s: dict[str, float] = field(default_factory=dict)
    # per framework, the share of its replayed step that stand-ins took
    stand_in_share: dict[str, float] = field(default_factory=dict)
    signatures: list[Any] = field(default_factory=list)
    apis: list[Any] = field(default_factory=list)
    uncovered: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    measuring_s: float = 0.0
    # signature key -> alone_cases.IsolatedFinding (the row alone, context factor, cause)
    isolated: dict[tuple[str, str, str], Any] = field(default_factory=dict)
    isolated_share: float = 0.0    # of the region's traced time measured alone
    isolated_s: float = 0.0
    isolated_note: str = ""        # why nothing was measured alone, when it was not
    # each side by name: its framework, interpreter and label; and the version its replay
    # processes imported (what names the two builds of one framework in every view)
    sides: dict[str, Side] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    # MindSpore traced: the replay rounds in the capture's speed mode (mode_match.py)
    mode_match: ModeMatch | None = None

    def framework_of(self, name: str) -> str:
        """The framework side `name` runs (the name itself before sides were records)."""
        side = self.sides.get(name)
        return side.framework if side else name

    def described(self, name: str) -> str:
        """`mindspore 2.9.0 (envs/ms29)`: the side's framework, version and interpreter."""
        side = self.sides.get(name)
        return side.described(self.versions.get(name)) if side else name

    # -- figures -------------------------------------------------------------------------
    @property
    def other(self) -> str:
        return self.target if self.traced_framework == self.reference else self.reference

    @property
    def steps(self) -> int:
        return self.step.steps

    @property
    def traced_s(self) -> float:
        """Traced time of the measured region (the steady steps), every call: steps x the
        per-call medians over the steps (one step hit by a pause does not count double)."""
        return self.steps * sum(self.step.traced_ns) / 1e9

    @property
    def covered_traced_s(self) -> float:
        return self.steps * sum(ns for ns, ok in zip(self.step.traced_ns, self.covered)
                                if ok) / 1e9

    @property
    def coverage(self) -> float:
        """The share of the region's traced time the other framework replayed (and the
        traced framework, which replays every call it can run: all, as a rule)."""
        return self.covered_traced_s / self.traced_s if self.traced_s > 0 else 0.0

    def own_traced_s(self, framework: str) -> float:
        """Traced time of the calls `framework`'s replay ran as themselves."""
        status = self.status.get(framework, [])
        return self.steps * sum(ns for i, (ns, s) in enumerate(zip(self.step.traced_ns, status))
                                if s.ok and i not in self.windows) / 1e9

    def projected_s(self, framework: str) -> Estimate | None:
        e = self.step_time.get(framework)
        if e is None:
            return None
        k = self.steps
        return e.scaled(k)

    @property
    def self_check(self) -> float | None:
        """The traced framework's replay against its own traced time, like for like: the
        latencies of the calls it replayed (every call it could run, whether or not the
        other framework could; each synced, as the capture synced them) summed, against the
        same calls' traced times; (replay - traced) / traced. Over every replay round:
        self_check_in_capture_mode is over the rounds a speed probe put in the capture's
        mode (MindSpore: mode_match.py), reported beside it."""
        return self._self_check(self.call_sum_s.get(self.traced_framework))

    @property
    def self_check_in_capture_mode(self) -> float | None:
        """The self-check over the replay rounds whose speed probe read within
        mode_match.MODE_FACTOR of the capture's; None without a probe or such a round."""
        match = self.mode_match
        if match is None or match.in_mode_call_sum_s is None:
            return None
        return self._self_check(match.in_mode_call_sum_s)

    def _self_check(self, replayed: float | None) -> float | None:
        traced = self.own_traced_s(self.traced_framework)
        if replayed is None or traced <= 0:
            return None
        return (replayed * self.steps - traced) / traced


def _signature_text(step: StepProgram, index: int) -> str:
    call = step.calls[index]

    def text(value: Any) -> str:
        if isinstance(value, Ref):
            return _spec_text(output_at(step.calls[value.call].outputs, value.path))
        if isinstance(value, Ext):
            e = step.externals[value.id]
            return f"{_short(e.dtype)}[{'x'.join(map(str, e.shape))}]"
        if isinstance(value, Seq):
            inner = ", ".join(text(v) for v in value.items)
            return f"[{inner}]" if value.kind == "list" else f"({inner})"
        if isinstance(value, Lit):
            return repr(value.value)
        if isinstance(value, Dtype):
            return value.name
        if isinstance(value, SliceOf):
            return ":".join("" if v is None else str(v)
                            for v in (value.start, value.stop, value.step)).rstrip(":") or ":"
        return "?"

    parts = [text(a) for a in call.args] + [f"{k}={text(v)}" for k, v in call.kwargs]
    return ", ".join(parts)


def _short(dtype: str) -> str:
    return SHORT_DTYPES.get(dtype, dtype)


def _spec_text(node: Any) -> str:
    if node and node[0] == "tensor":
        return f"{_short(node[2])}[{'x'.join(map(str, node[1]))}]"
    return "?"


def _tainted(step: StepProgram, stand_in: Sequence[bool]) -> list[bool]:
    """Calls downstream of a stand-in in either framework, or of a call drawing random
    numbers (a training-mode dropout): their outputs cannot agree."""
    tainted = [False] * len(step.calls)
    for call in step.calls:
        tainted[call.index] = stand_in[call.index] or draws_random_numbers(call) or any(
            tainted[r.call] for r in refs_in(call))
    return tainted


def replay_skips(status: dict[str, list[CallStatus]], traced: str, other: str
                 ) -> dict[str, list[int]]:
    """The calls each framework's timed replays stand in for without trying them again: the
    traced framework only what it could not run itself (it is the script's framework: its
    backward and optimizer replay even where the other framework cannot follow); the other
    framework what it could not run, and what the traced framework could not."""
    own = {fw: [s.index for s in status[fw] if not s.ok] for fw in (traced, other)}
    return {traced: own[traced], other: sorted(set(own[other]) | set(own[traced]))}


def measure_model(command: Sequence[str], options: ModelOptions = ModelOptions(),
                  workdir: str | Path | None = None,
                  on_progress: Progress = lambda message: None) -> ModelImpact:
    """Capture, replay and project. Raises ModelError for what the user must fix."""
    interpreter, words = split_command(command)
    # one probe per interpreter, for the frameworks of the sides that replay in it
    frameworks_in: dict[str, list[str]] = {}
    for side in (options.reference, options.target):
        frameworks_in.setdefault(side_interpreter(side, interpreter).path,
                                 []).append(side.framework)
    for python, frameworks in frameworks_in.items():
        interpreter_version(Interpreter(python, True), frameworks)
    work = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="opbench-model-"))
    work.mkdir(parents=True, exist_ok=True)
    program_path = work / "program.json"
    on_progress(f"running the script under the capture in {interpreter.path}")
    status = run_capture(interpreter, words, program_path, options.max_calls,
                         options.capture_steps, options.run_on)
    if not program_path.exists():
        raise ModelError(f"the capture wrote no program (the script's interpreter exited "
                         f"with status {status} before the capture could save anything)")
    program = Program.from_json(json.loads(program_path.read_text(encoding="utf-8")))
    if program.script_status != 0 and not options.keep_going:
        raise ModelError(script_failed(program))
    return measure_program(program, options, interpreter, list(command), work, on_progress)


def script_failed(program: Program) -> str:
    """A failed script, said as soon as it ended: its exit status, the last line of its
    traceback, and what to do (nothing is replayed: a user would otherwise wait minutes for
    a replay of a script that did not run)."""
    error = f" ({program.script_error})" if program.script_error else ""
    return (f"the script exited with status {program.script_status}{error} after "
            f"{len(program.calls)} recorded framework calls; nothing was replayed. Fix the "
            f"script, or give --keep-going to replay what it ran before it failed")


def traced_side(framework: str, reference: Side, target: Side, names: tuple[str, str],
                script: Interpreter) -> str | None:
    """The name of the side that replays the script's calls as the script made them: the
    one on the script's framework; of two on it, the one in the script's interpreter, else
    the reference. None: neither side runs the script's framework."""
    on_it = [(name, side) for name, side in zip(names, (reference, target))
             if side.framework == framework]
    if len(on_it) == 2:
        same = [name for name, side in on_it
                if side_interpreter(side, script).path == script.path]
        return same[0] if len(same) == 1 else names[0]
    return on_it[0][0] if on_it else None


def measure_program(program: Program, options: ModelOptions, interpreter: Interpreter,
                    command: list[str], work: Path,
                    on_progress: Progress = lambda message: None) -> ModelImpact:
    if program.framework not in FRAMEWORKS:
        error = f": {program.script_error}" if program.script_error else ""
        detail = (f" (it exited with status {program.script_status}{error})"
                  if program.script_status else "")
        raise ModelError(f"the script imported neither torch nor MindSpore, or made no call "
                         f"of theirs that was recorded{detail}")
    try:
        region = find_region(program, options.skip_first_calls)
    except RegionError as exc:
        raise ModelError(str(exc)) from None
    step = step_program(program, region)
    names = side_labels(options.reference, options.target)
    sides = dict(zip(names, (options.reference, options.target)))
    traced = traced_side(program.framework, options.reference, options.target, names,
                         interpreter)
    if traced is None:
        raise ModelError(f"the script ran {program.framework}, and neither side does "
                         f"({' and '.join(s.label for s in sides.values())}): one side must be "
                         f"the script's framework, e.g. --reference {program.framework}")
    other = names[1] if traced == names[0] else names[0]
    one_framework = options.reference.framework == options.target.framework
    # two builds of one framework both replay the script's calls as the script made them
    other_launch = program.launch if one_framework else (
        options.launch or DEFAULT_LAUNCH.get(sides[other].framework, "queued"))
    launch = {traced: program.launch, other: other_launch}
    impact = ModelImpact(command=command, interpreter=interpreter.path,
                         reference=names[0], target=names[1],
                         traced_framework=traced, program=program, region=region, step=step,
                         launch=launch, threads=program.threads, sides=sides)
    where = {name: side_interpreter(side, interpreter) for name, side in sides.items()}
    started = time.perf_counter()
    base = ipc.ReplayStep(framework=sides[traced].framework, program=step,
                          device=program.device,
                          threads=program.threads, cpus=tuple(program.cpus))

    # 1. probes: routes, and outputs compared
    probes: dict[str, ipc.ReplayResult] = {}
    for framework in (traced, other):
        on_progress(f"probing the replay in {framework} ({where[framework].path})")
        try:
            probes[framework] = run_replay(
                where[framework].path, replace(base, kind=ipc.REPLAY_PROBE,
                                               framework=sides[framework].framework,
                                               launch=launch[framework]), work)
        except ReplayFailed as exc:
            raise ModelError(f"the {framework} replay could not start: {exc}") from None
        impact.status[framework] = list(probes[framework].status)
        if probes[framework].version:
            impact.versions[framework] = str(probes[framework].version)
    ok = [a.ok and b.ok for a, b in zip(impact.status[traced], impact.status[other])]
    impact.windows = alias_windows(step)
    impact.covered = [c and i not in impact.windows for i, c in enumerate(ok)]
    stand_in = [not (a.ok and b.ok) for a, b in zip(impact.status[traced],
                                                     impact.status[other])]
    tainted = _tainted(step, stand_in)
    # differences two right replays may show: an Adam update's step, a truncated integer's
    # one step
    allowed = adam_update_tolerances(step.calls)
    for i, step_size in truncation_tolerances(step.calls).items():
        allowed[i] = max(allowed.get(i, 0.0), step_size)
    for i, (fa, fb) in enumerate(zip(probes[traced].fingerprints or (),
                                     probes[other].fingerprints or ())):
        if tainted[i]:
            continue
        found = _compare(fa, fb, max(CHECK_ATOL, allowed.get(i, 0.0)))
        if found:
            impact.mismatches.append({"call": i, "api": step.calls[i].api,
                                      "mapped_api": impact.status[other][i].api,
                                      "detail": found})
    if not any(impact.covered[i] for i, c in enumerate(step.calls) if c.alias_of is None):
        reasons = {}
        for fw in (traced, other):
            for s in impact.status[fw]:
                if not s.ok:
                    reasons.setdefault(f"{step.calls[s.index].api}: {s.problem}", None)
        raise ModelError(f"no call of the step replays in both {traced} and {other}: "
                         + "; ".join(list(reasons)[:5]))
    skip = replay_skips(impact.status, traced, other)
    routes = {fw: {s.index: s.route for s in impact.status[fw] if s.ok}
              for fw in (traced, other)}

    # 2. timed replays, interleaved A B B A ...
    timing: dict[str, list[ipc.ReplayResult]] = {traced: [], other: []}
    order = []
    for p in range(options.processes):
        order += [traced, other] if p % 2 == 0 else [other, traced]
    request = replace(base, kind=ipc.REPLAY_TIME, samples=options.samples,
                      passes=options.passes, rounds=options.rounds)

    def time_one(framework: str, n: int, of: int) -> None:
        on_progress(f"timing the replay: process {n} of {of} ({framework})")
        try:
            result = run_replay(where[framework].path, replace(
                request, framework=sides[framework].framework, launch=launch[framework],
                routes=routes[framework], skip=tuple(skip[framework])), work, index=n)
        except ReplayFailed as exc:
            impact.errors.append(f"{framework} replay process {n}: {exc}")
        else:
            timing[framework].append(result)

    for n, framework in enumerate(order, 1):
        time_one(framework, n, len(order))
    # a framework whose processes ran in different modes gets more of them (second stage)
    for framework in (traced, other):
        runs = timing[framework]
        if not processes_split(step_time([r.samples_s for r in runs]), MODES_APART):
            continue
        more = max(options.max_processes - len(runs), 0)
        for n in range(1, more + 1):
            time_one(framework, len(order) + n, len(order) + more)
    if not timing[traced] or not timing[other]:
        raise ModelError("no replay process of " + " or ".join(
            f for f in (traced, other) if not timing[f]) + " finished: "
            + "; ".join(impact.errors))
    impact.measuring_s = time.perf_counter() - started
    _project(impact, timing)
    impact.mode_match = _mode_match(impact, timing[traced], options)
    if options.isolated_budget_s > 0 and impact.signatures and one_framework:
        # the alone stage builds cases from one framework's call and its mapped
        # counterpart; two builds of one framework compare in the case library instead
        impact.isolated_note = (f"not measured alone: both sides run "
                                f"{options.reference.framework} (compare the builds' "
                                f"operators with `opbench run --reference "
                                f"{options.reference.label} --target {options.target.label}`)")
    elif options.isolated_budget_s > 0 and impact.signatures:
        _measure_alone(impact, options, work, on_progress)
    return impact


def _mode_match(impact: ModelImpact, runs: Sequence[ipc.ReplayResult],
                options: ModelOptions) -> ModeMatch | None:
    """The traced framework's replay rounds set beside the capture's speed probe."""
    own = [s.ok and i not in impact.windows
           for i, s in enumerate(impact.status[impact.traced_framework])]
    probes: list[float] = []
    sums: list[float] = []
    for run in runs:
        if len(run.probe_s) != options.rounds:
            return None
        probes += run.probe_s
        sums += round_sums(run.per_call_s, own, options.passes, options.rounds)
    return mode_match(impact.program.speed_probe_s, probes, sums)


def _measure_alone(impact: ModelImpact, options: ModelOptions, work: Path,
                   on_progress: Progress) -> None:
    from opbench.model.impact.alone_cases import (IsolatedFinding, cause_of, measure_isolated,
                                                  target_floor_s)

    started = time.perf_counter()
    try:
        rows, record, share = measure_isolated(impact, options.isolated_budget_s, work,
                                               min(options.processes, 3), on_progress)
    except Exception as exc:     # the projection stands without it; the report says why
        impact.errors.append(f"measuring the signatures alone failed: "
                             f"{type(exc).__name__}: {exc}")
        return
    impact.isolated_share = share
    impact.isolated_s = time.perf_counter() - started
    floor = target_floor_s(record, impact.target)
    by_key = {(r.api, r.signature, r.mapped_api): r for r in impact.signatures}
    for iso in rows:
        row = by_key.get(iso.key)
        if row is None:
            continue
        cause, why = cause_of(row, iso, floor) if row.lost_s > 0 else ("", "")
        context = {}
        if iso.reference_s:
            context[impact.reference] = row.reference_s / iso.reference_s
        if iso.target_s:
            context[impact.target] = row.target_s / iso.target_s
        impact.isolated[iso.key] = IsolatedFinding(iso, context, cause, why)


def stand_in_share(call_s: Sequence[float], status: Sequence[CallStatus]) -> float:
    """The share of a framework's replayed step its stand-ins took (in-context times)."""
    total = sum(call_s)
    stood_in = sum(t for t, s in zip(call_s, status) if s.stand_in)
    return stood_in / total if total > 0 else 0.0


def _project(impact: ModelImpact, timing: dict[str, list[ipc.ReplayResult]]) -> None:
    step = impact.step
    frameworks = {fw: FrameworkTiming(fw, tuple(tuple(r.samples_s) for r in runs),
                                      tuple(tuple(tuple(c) for c in r.per_call_s)
                                            for r in runs))
                  for fw, runs in timing.items()}
    for fw, t in frameworks.items():
        impact.step_time[fw] = step_time(t.step_samples)
    ref, tgt = impact.reference, impact.target
    impact.step_ratio = step_ratio(frameworks[ref], frameworks[tgt])
    # every call a framework's replay ran (its own route or a stand-in) is in its step:
    # the per-call times are scaled to that step over all of them
    everything = [True] * len(step.calls)
    times = {fw: call_times(frameworks[fw], impact.step_time[fw].value, everything)
             for fw in frameworks}
    impact.scale = {fw: t.scale for fw, t in times.items()}
    impact.call_sum_s = {fw: sum(m for i, (m, s) in enumerate(zip(t.median, impact.status[fw]))
                                 if s.ok and i not in impact.windows)
                         / t.scale if t.scale else 0.0 for fw, t in times.items()}
    impact.stand_in_share = {fw: stand_in_share(t.median, impact.status[fw])
                             for fw, t in times.items()}
    groups: dict[tuple[str, str, str], list[int]] = {}
    other = impact.other
    for i, call in enumerate(step.calls):
        if not impact.covered[i] or call.alias_of is not None:
            continue
        key = (call.api, _signature_text(step, i), impact.status[other][i].api)
        groups.setdefault(key, []).append(i)
    impact.signatures = signature_rows(groups, impact.steps, times[ref], times[tgt],
                                       step.traced_ns)
    impact.apis = api_rows(impact.signatures)
    not_covered: dict[tuple[str, str], list[int]] = {}
    for i, call in enumerate(step.calls):
        if impact.covered[i]:
            continue
        reasons = ([impact.windows[i]] if i in impact.windows
                   else [s[i].problem for s in impact.status.values() if not s[i].ok])
        not_covered.setdefault((call.api, reasons[0] if reasons else "not replayed"),
                               []).append(i)
    total = impact.traced_s
    traced = {key: sum(impact.steps * step.traced_ns[i] / 1e9 for i in indices)
              for key, indices in not_covered.items()}
    impact.uncovered = [{"api": api, "reason": reason,
                         "calls": impact.steps * len(not_covered[(api, reason)]),
                         "traced_s": traced_s, "share": traced_s / total if total else 0.0}
                        for (api, reason), traced_s in sorted(traced.items(),
                                                              key=lambda kv: kv[1],
                                                              reverse=True)]

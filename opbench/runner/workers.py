"""Measure in fresh worker processes, as pyperf does: each instance's rounds are spread
over `config.processes` workers.

One pool, two placements of a process number. `SharedProcess` (the default): each worker
process holds both frameworks and measures its share of an instance itself. `SidePair`, when
the sides need it (a side in another interpreter, `--target mindspore@PYTHON`, or one
framework on both sides): each process number k has one process per side, each importing
only its own framework in its side's interpreter (config.python_of), and the parent's
RemoteSession k (below) runs the protocol through the pair, each sample timed whole in its
side's process. `WorkerPool` keeps the schedule, the batches, the losses and their
replacements alike for both (placement_for picks).
Why not always one process per side: measured here (6 fresh runs each, alternating, same
hour, 2026-11-26; docs/measurement.md) the between-process spread of the ratio was 1.9-8.8%
(median 5.2%) with one process per side against 1.8-4.6% (median 3.1%) with both
frameworks in each worker, and the ratio moved more between runs (1.08x against 1.05x).

Why: a process keeps an offset of its own for its whole life (thread placement, allocator
state, kernel choice, where the frameworks' code landed). Measured here, it moves a ratio
by 10-45% between fresh runs, and rounds inside one process cannot see it: their interval
is narrow and the next run lands outside it. With several processes per instance, that
offset is inside the data and the statistics treat the process as the unit
(stats.ratio_estimate with groups).

The pool and runner.session.Session are the two MeasuringSessions (protocol.py), so
runloop/recorded_run.py drives either unchanged. Worker
1 makes pass 1 through the selection: it checks each instance's outputs, calibrates and
takes the first share of its rounds. Then worker 1's further passes, then worker 2's, and so
on: each checks again and adds its share at the same loop count. So an instance's shares
lie a pass apart: the ratio drifts ~10% over seconds to minutes here (host load, an SMT
sibling's neighbour: a plain torch process ran softmax 4x64 at 1.9 us or 3.6 us for
stretches of seconds), and shares back to back would all fall in one stretch. All workers
start together (their imports measure nothing); one measures at a time while the others
wait on their socket, and every worker's pre-sample quiesce watches its siblings too.
Under sequential stopping process 1 starts alone and the others when an instance is still
undecided after it (first_batch, batch_of below). A
worker that dies (a crashing operator) is recorded against that instance, with its signal
or exit status (`worker process 1 (mindspore) was killed by SIGSEGV (signal 11) while
running exp[...]`), and replaced by a fresh one; the run goes on.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Mapping, Protocol, Sequence

import numpy as np

from opbench.cases.case_files import CaseInstance
from opbench.config import RunConfig
from opbench.runner import inputs as inputs_mod
from opbench.runner import ipc
from opbench.runner.interpreters import InterpreterError, check_interpreter
from opbench.runner.worker_handle import (REPLY_TIMEOUT_S, WORKER_MODULE, ChildProcess,
                                          Worker, WorkerError, WorkerLost, spawn_worker)
from opbench.runner.measure import Clock, WarmUp
from opbench.runner.protocol import BACKWARD, FORWARD
from opbench.runner.raw_records import instance_header
from opbench.runner.session import Session, SideFailed

# The worker handle and spawn_worker live in worker_handle.py (light: no measuring); they are
# named here too, where the pools and every caller before the split found them.
__all__ = ["WorkerError", "WorkerLost", "WorkerPool", "worker_pool", "placement_for",
           "ProcessPlacement", "SharedProcess", "SidePair",
           "Worker", "spawn_worker", "WORKER_MODULE", "REPLY_TIMEOUT_S", "ChildProcess",
           "RemoteSession", "ProcessSide"]

# spawn(index, side, python) -> a started Worker for that side
Spawner = Callable[[int, str, "str | None"], Worker]


# -- which processes a pool starts, and when (both pools) ------------------------------------
# A sequential run (config.sequential) starts process 1 alone: its first look often decides
# every instance (`opbench compare reshape -k 8x16`: both after process 1), and two more
# processes importing both frameworks on this 2-core machine made its set-up ~3x one
# process's (docs/measurement.md). The others start in a batch when the first look leaves an
# instance undecided (ensure_process), together, as the fixed protocol's do at open().
# Not started early, while process 1 measures: their imports would burn the cores process
# 1's samples run on, and the batch's start at the look costs about what starting it at
# open() did (imports in parallel on the same cores).

def first_batch(config: RunConfig) -> range:
    """The process numbers open() starts: 1 alone under sequential stopping, else all."""
    return range(1, 2 if config.sequential is not None else config.processes + 1)


def batch_of(index: int, config: RunConfig) -> range:
    """The process numbers started together with process `index` (>= 2) when it is first
    needed: the rest of its batch of config.processes (2..3, then 4..6 with 3), never past a
    sequential run's cap."""
    size = config.processes
    end = ((index - 1) // size + 1) * size
    if config.sequential is not None:
        end = min(end, config.sequential.max_processes)
    return range(index, max(end, index) + 1)


# -- the parent's half of a split measurement ------------------------------------------------
# RemoteSession is a Session whose sides live in worker processes, one per framework
# (side_server.py answers there): the same check, calibration, interleaved rounds, settle and
# records, with its four per-side methods asking a side's process instead of an adapter
# here. The parent keeps the schedule: one process measures at a time while the other waits
# blocked on its socket; the settle before a sample watches every worker's threads from here.


@dataclass(frozen=True)
class ProcessSide:
    """measure.RemoteSide over a side's worker: each primitive is one request."""

    name: str
    worker: Any
    which: str

    def sample(self, loops: int, mode: str, rewarm_first: bool = False
               ) -> tuple[float, float | None]:
        return self.worker.call(ipc.Sample(self.which, loops, mode, rewarm_first))

    def warm_up(self, mode: str, warmup_time_s: float) -> WarmUp:
        return self.worker.call(ipc.RunWarmUp(self.which, mode, warmup_time_s))

    def sync_cost(self) -> float:
        return self.worker.call(ipc.SyncCost(self.which))


class RemoteSession(Session):
    """Process `process_index`'s share of a run: one worker per side (`workers`, opened by
    the pool with "open_side"); `watch_pids` every worker of the run, for the settle."""

    def __init__(self, config: RunConfig, workers: Mapping[str, Any], process_index: int,
                 watch_pids: Sequence[int] = (), clock: Clock = time.perf_counter):
        super().__init__(config, clock, watch_pids=watch_pids, process_index=process_index)
        self.workers = dict(workers)
        self.infos: dict[str, dict[str, Any]] = {}

    def open(self) -> None:
        """The workers are already open (the pool starts them together); only the settle,
        and each sample's CPU time, read in its side's process (ProcessSide.sample)."""
        self.quiescer = self.make_quiescer()
        self.cpu_clock = time.process_time

    def replace_worker(self, name: str, worker: Any) -> None:
        """A fresh process for side `name`: it has measured nothing yet, so every instance
        gets its full warm-up again."""
        self.workers[name] = worker
        self._measured_here = set()

    def framework_info(self) -> dict[str, Any]:
        return {name: dict(self.infos[name]) for name in self.config.frameworks}

    def measure_overheads(self) -> dict[str, dict[str, float]]:
        for name in self.config.frameworks:
            self.overhead[name] = self.workers[name].call(ipc.SideOverheads())
        return self.overhead

    def measure_ceilings(self) -> dict[str, dict[str, Any]]:
        return {name: self.workers[name].call(ipc.SideCeilings())
                for name in self.config.frameworks}

    def check_apis(self, instances: Sequence[CaseInstance]) -> list[str]:
        problems: list[str] = []
        for name in self.config.frameworks:
            problems += self.workers[name].call(ipc.SideCheckApis(tuple(instances)))
        return problems

    # -- the per-side work, asked of the side's process --------------------------------------
    def forward_side(self, instance: CaseInstance, arrays: Mapping[str, np.ndarray],
                     name: str) -> tuple[Any, Any]:
        reply = self.workers[name].call(ipc.Forward(instance))
        if isinstance(reply, ipc.OperatorFailed):
            raise SideFailed(reply.message)
        output, checksum = reply.output, reply.inputs_checksum
        ours = inputs_mod.inputs_checksum(arrays)
        if checksum != ours:
            raise SideFailed(
                f"{name}'s process generated other inputs than the parent from the same seed "
                f"(checksum {checksum[:12]} against {ours[:12]}): its numpy differs; install "
                f"the same numpy in both interpreters")
        return FORWARD, output

    def backward_side(self, instance: CaseInstance, arrays: Mapping[str, np.ndarray],
                      name: str, reference_out: Any) -> tuple[Any, Any]:
        reply = self.workers[name].call(ipc.Backward(instance, reference_out))
        if isinstance(reply, ipc.OperatorFailed):
            raise SideFailed(reply.message)
        return BACKWARD, reply.gradients

    def timed_side(self, name: str, prepared: Any, backward: Any = None) -> ProcessSide:
        return ProcessSide(name, self.workers[name], BACKWARD if backward else FORWARD)

    def _peak_memory(self, prepared: Mapping[str, Any]) -> dict[str, Any]:
        return {name: self.workers[name].call(ipc.PeakMemory()) for name in self.config.frameworks}

    def profile_side(self, side: ProcessSide, mode: str, loops: int) -> dict[str, Any]:
        return self.workers[side.name].call(ipc.ProfileCall(side.which, mode, loops))


# -- what one process number holds: the two placements -----------------------------------------
# A pool measures through process numbers 1..N; what stands behind a number is its
# placement: one worker holding both frameworks (SharedProcess) or one worker per side, each
# in its side's interpreter (SidePair). The pool (below) keeps the schedule, the batches, the
# losses and the replacements alike for both; a placement only opens its processes and
# answers the Session calls through them.


class ProcessPlacement(Protocol):
    """What process number `index` of a pool is: opened in batches by the placement's
    `open_batch`, renewed in place after a loss."""

    index: int
    # the exceptions after which the pool renews the process (WorkerPool._renew) instead of
    # letting them end the run
    renewed_on: ClassVar[type[BaseException]]

    @classmethod
    def open_batch(cls, pool: "WorkerPool", numbers: Sequence[int]
                   ) -> list["ProcessPlacement"]: ...
    def workers(self) -> tuple[Worker, ...]: ...
    def renew(self, pool: "WorkerPool") -> None: ...
    def framework_info(self) -> dict[str, dict[str, Any]]: ...
    def measure_overheads(self) -> dict[str, dict[str, float]]: ...
    def measure_ceilings(self) -> dict[str, dict[str, Any]]: ...
    def check_apis(self, instances: Sequence[CaseInstance]) -> list[str]: ...
    def run_instance(self, instance: CaseInstance) -> dict[str, Any]: ...
    def extend_instance(self, instance: CaseInstance, record: dict[str, Any],
                        own_pass: int) -> dict[str, Any]: ...


class SharedProcess:
    """Process `index` as one worker holding both frameworks, measuring its share of an
    instance itself (worker_main's Session): the default (the module doc says why)."""

    renewed_on: ClassVar[type[BaseException]] = WorkerError

    def __init__(self, worker: Worker, info: Mapping[str, Any]):
        self.worker = worker
        self.info = dict(info)

    @property
    def index(self) -> int:
        return self.worker.index

    @classmethod
    def open_batch(cls, pool: "WorkerPool", numbers: Sequence[int]) -> list["SharedProcess"]:
        """Workers `numbers` started together, each told its siblings (for the settle) and
        its frameworks set up; closes what it started and raises on any failure."""
        started: list[Worker] = []
        try:
            for number in numbers:
                started.append(pool.start(number))
            pids = tuple(w.pid for w in started)
            for w in started:
                w.send(ipc.Open(pool.config, pids, w.index))
            infos = [w.receive() for w in started]
        except BaseException:
            for w in started:
                w.close()
            raise
        return [cls(w, info) for w, info in zip(started, infos)]

    def workers(self) -> tuple[Worker, ...]:
        return (self.worker,)

    def renew(self, pool: "WorkerPool") -> None:
        """A fresh worker in place of a dead or hung one, told about its siblings, with
        its floors measured when the run's were (it may be the one that measures them)."""
        self.worker.kill()
        self.worker = pool.start(self.index)
        self.worker.call(ipc.Open(pool.config, tuple(w.pid for w in pool.workers),
                                  self.index))
        if pool.overhead:
            self.worker.call(ipc.Overheads())

    def framework_info(self) -> dict[str, dict[str, Any]]:
        return {name: dict(facts) for name, facts in self.info.items()}

    def measure_overheads(self) -> dict[str, dict[str, float]]:
        return self.worker.call(ipc.Overheads())

    def measure_ceilings(self) -> dict[str, dict[str, Any]]:
        return self.worker.call(ipc.Ceilings())

    def check_apis(self, instances: Sequence[CaseInstance]) -> list[str]:
        return self.worker.call(ipc.CheckApis(tuple(instances)))

    def run_instance(self, instance: CaseInstance) -> dict[str, Any]:
        return self.worker.call(ipc.Run(instance))

    def extend_instance(self, instance: CaseInstance, record: dict[str, Any],
                        own_pass: int) -> dict[str, Any]:
        return self.worker.call(ipc.Extend(instance, record, own_pass))


class SidePair:
    """Process `index` as one worker per side, each importing only its own framework in its
    side's interpreter (config.python_of), the parent's RemoteSession running the protocol
    through them: when the sides need it (config.split_sides)."""

    renewed_on: ClassVar[type[BaseException]] = WorkerLost

    def __init__(self, session: RemoteSession):
        self.session = session

    @property
    def index(self) -> int:
        return self.session.process_index

    @classmethod
    def open_batch(cls, pool: "WorkerPool", numbers: Sequence[int]) -> list["SidePair"]:
        """A worker per side for each process number, started together; closes what it
        started and raises on any failure."""
        config = pool.config
        started: list[Worker] = []
        try:
            for i in numbers:
                for name in config.frameworks:
                    started.append(pool.start(i, name))
            for w in started:
                w.send(ipc.OpenSide(config, w.side, w.index))
            infos = [w.receive() for w in started]
        except BaseException:
            for w in started:
                w.close()
            raise
        pids = [w.pid for w in started]
        pairs = []
        for i in numbers:
            mine = {w.side: (w, info) for w, info in zip(started, infos) if w.index == i}
            session = RemoteSession(config, {n: w for n, (w, _) in mine.items()}, i,
                                    watch_pids=pids, clock=pool.clock)
            session.infos = {n: info for n, (_, info) in mine.items()}
            session.open()
            pairs.append(cls(session))
        return pairs

    def workers(self) -> tuple[Worker, ...]:
        return tuple(self.session.workers.values())

    def renew(self, pool: "WorkerPool") -> None:
        """A fresh process in place of each of its side workers that died or hung (a
        WorkerError when one cannot start: the pool then drops the pair)."""
        for name, old in list(self.session.workers.items()):
            if old.alive():
                continue
            old.kill()
            fresh = pool.start(old.index, name)
            self.session.replace_worker(name, fresh)
            fresh.call(ipc.OpenSide(pool.config, name, fresh.index))

    def framework_info(self) -> dict[str, dict[str, Any]]:
        return self.session.framework_info()

    def measure_overheads(self) -> dict[str, dict[str, float]]:
        return self.session.measure_overheads()

    def measure_ceilings(self) -> dict[str, dict[str, Any]]:
        return self.session.measure_ceilings()

    def check_apis(self, instances: Sequence[CaseInstance]) -> list[str]:
        return self.session.check_apis(instances)

    def run_instance(self, instance: CaseInstance) -> dict[str, Any]:
        return self.session.run_instance(instance)

    def extend_instance(self, instance: CaseInstance, record: dict[str, Any],
                        own_pass: int) -> dict[str, Any]:
        return self.session.extend_instance(instance, record, own_pass)


def placement_for(config: RunConfig) -> type[ProcessPlacement]:
    """One process per side when the sides need it (config.split_sides: a side in another
    interpreter, or one framework on both sides), else each worker holding both frameworks
    (the default: see the module doc for why)."""
    return SidePair if config.split_sides else SharedProcess


class WorkerPool:
    """Processes 1..config.processes measuring in turn, each placed as `placement` says
    (default placement_for(config)): a MeasuringSession (protocol.py) like Session; see the
    module doc."""

    def __init__(self, config: RunConfig, spawn: Spawner | None = None,
                 clock: Clock = time.perf_counter,
                 placement: type[ProcessPlacement] | None = None):
        self.config = config
        self.placement = placement or placement_for(config)
        # The parent's clock: instance durations, the clock's resolution (split samples
        # themselves are timed in the side workers, on theirs).
        self.clock = clock
        # looked up now, not at import: tests put fake workers and probes in their place
        self._spawn = spawn or spawn_worker
        self._check_interpreter = check_interpreter
        self.processes: list[ProcessPlacement] = []
        self.overhead: dict[str, dict[str, float]] = {}
        self._info: dict[str, dict[str, Any]] = {}
        self.restarts: list[str] = []
        self.setup_s: float | None = None

    @property
    def workers(self) -> list[Worker]:
        """Every worker process of the pool, process number by process number."""
        return [w for p in self.processes for w in p.workers()]

    # -- life cycle ------------------------------------------------------------------------
    def open(self) -> None:
        """Check each side's interpreter, start the first batch and set the frameworks up.
        The imports run in parallel (they measure nothing); a failure closes the pool and
        raises WorkerError with the worker's message (a missing framework, a bad device)."""
        for name in self.config.frameworks:
            python = self.config.python_of(name)
            if python is not None:
                try:
                    self._check_interpreter(python, self.config.framework_of(name))
                except InterpreterError as exc:
                    raise WorkerError(str(exc)) from None
        self.processes = self.placement.open_batch(self, first_batch(self.config))
        self._info = self.processes[0].framework_info()

    def start(self, index: int, side: str | None = None) -> Worker:
        """A started worker for process `index` (and `side`, in its interpreter)."""
        try:
            if side is None:
                return self._spawn(index)
            return self._spawn(index, side, self.config.python_of(side))
        except OSError as exc:
            which = f" ({side})" if side else ""
            raise WorkerError(f"cannot start worker process {index}{which}: {exc}") from None

    def close(self) -> None:
        for w in self.workers:
            w.close()
        self.processes = []

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def ensure_process(self, index: int) -> None:
        """Process `index` ready to measure: when the pool holds none by that number, a
        fresh batch (batch_of) replaces the pool's processes, started together, as at
        open(). They measure no per-call floors: the run's are process 1's (or the cache's),
        and only explanations read them (machine_facts.py)."""
        if any(p.index == index for p in self.processes):
            return
        self.close()
        self.processes = self.placement.open_batch(self, batch_of(index, self.config))

    def _renew(self, position: int, reason: str) -> None:
        """Fresh workers in place of a dead or hung process's. If even that fails, the pool
        goes on with the processes it has (never with none: then the WorkerError
        propagates and the run ends with what it saved)."""
        self.restarts.append(reason)
        process = self.processes[position]
        try:
            process.renew(self)
        except WorkerError as exc:
            self.restarts.append(str(exc))
            for w in process.workers():
                w.kill()
            del self.processes[position]
            if not self.processes:
                raise

    # -- the Session interface -------------------------------------------------------------
    def framework_info(self) -> dict[str, Any]:
        """Each side's facts as process 1 reported them (version, build, ...), with the
        pool's processes and the interpreter a side was started in, when not this one."""
        info = {name: dict(facts) for name, facts in self._info.items()}
        for name, facts in info.items():
            facts["processes"] = self.config.processes
            python = self.config.python_of(name)
            if python is not None:
                facts["python"] = python
        return info

    def measure_overheads(self) -> dict[str, dict[str, float]]:
        """Process 1's floors, the run's (its siblings idle: a floor measured while a
        sibling works is no floor). Only explanations and the report read them, from the
        parent (machine_facts.py), so the siblings' own were never used and are not
        measured."""
        self.overhead = self.processes[0].measure_overheads()
        return self.overhead

    def measure_ceilings(self) -> dict[str, dict[str, Any]]:
        """Process 1's ceilings: the machine's, measured once per run (the others idle)."""
        return self.processes[0].measure_ceilings()

    def check_apis(self, instances: Sequence[CaseInstance]) -> list[str]:
        return self.processes[0].check_apis(instances)

    @property
    def total_passes(self) -> int:
        """runner.run_passes makes this many passes: each process's passes in turn."""
        return self.config.processes * self.config.passes

    def _position(self, pass_index: int) -> tuple[int, int]:
        """(worker process number, its own pass number) for run-wide pass `pass_index`."""
        return (pass_index - 1) // self.config.passes + 1, \
            (pass_index - 1) % self.config.passes + 1

    def run_instance(self, instance: CaseInstance) -> dict[str, Any]:
        """Pass 1: process 1 checks the outputs, calibrates and takes its share of rounds."""
        first = self.processes[0]
        try:
            return first.run_instance(instance)
        except first.renewed_on as exc:
            self._renew(0, str(exc))
            record = instance_header(instance, self.config)
            record.update(error=str(exc), duration_s=0.0)   # ERROR when judged
            return record

    def extend_instance(self, instance: CaseInstance, record: dict[str, Any],
                        pass_index: int) -> dict[str, Any]:
        """Run-wide pass `pass_index` (2..total_passes) of an instance, in the process whose
        turn it is."""
        if not record.get("measurements"):
            return record
        number, own_pass = self._position(pass_index)
        position = next((i for i, p in enumerate(self.processes) if p.index == number), None)
        if position is None:    # a process was lost and could not be replaced
            return record
        process = self.processes[position]
        try:
            return process.extend_instance(instance, record, own_pass)
        except process.renewed_on as exc:
            # the message names the worker process and the instance; the record as a split
            # session left it (Session.extend_instance: the rounds pooled before the loss)
            record = getattr(exc, "record", record)
            record = {**record, "pass_errors": [*record.get("pass_errors", ()),
                                                f"pass {own_pass}: {exc}"]}
            self._renew(position, str(exc))
            return record


def worker_pool(config: RunConfig, spawn: Any = None) -> WorkerPool:
    """The pool a run in worker processes measures through, placed by placement_for."""
    return WorkerPool(config, spawn=spawn)

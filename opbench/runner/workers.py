"""Measure in fresh worker processes, as pyperf does: each instance's rounds are spread
over `config.processes` workers.

Two pools, one protocol. `WorkerPool` (the default): each worker process holds both
frameworks and measures its share of an instance itself. `SideWorkerPool`, when the sides
need it (a side in another interpreter, `--target mindspore@PYTHON`, or one framework on
both sides): each process index k has one process per side, each importing only its own
framework in its side's interpreter (config.python_of), and the parent's RemoteSession k
(below) runs the protocol through the pair, each sample timed whole in its side's process.
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
from typing import Any, Callable, Mapping, Sequence

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
__all__ = ["WorkerError", "WorkerLost", "WorkerPool", "SideWorkerPool", "worker_pool",
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


class WorkerPool:
    """config.processes workers measuring in turn, each holding both frameworks: a
    MeasuringSession (protocol.py) like Session; see the module doc."""

    def __init__(self, config: RunConfig, spawn: Callable[[int], Worker] | None = None):
        self.config = config
        # looked up now, not at import: tests put fake workers in its place
        self._spawn = spawn or spawn_worker
        self.workers: list[Worker] = []
        self.overhead: dict[str, dict[str, float]] = {}
        self._info: dict[str, Any] = {}
        self.restarts: list[str] = []
        self.setup_s: float | None = None

    # -- life cycle ------------------------------------------------------------------------
    def open(self) -> None:
        """Start every worker and set its frameworks up. The imports run in parallel (they
        measure nothing); a failure closes the pool and raises WorkerError with the
        worker's message (a missing framework, a bad device)."""
        self._info = self._open_workers(first_batch(self.config))

    def _open_workers(self, numbers: Sequence[int]) -> dict[str, Any]:
        """Workers `numbers` started together and their frameworks set up (each told its
        siblings, for the settle); the first one's framework info. Closes the pool and
        raises on any failure."""
        try:
            for number in numbers:
                self.workers.append(self._start(number))
            pids = [w.pid for w in self.workers]
            for w in self.workers:
                w.send(ipc.Open(self.config, tuple(pids), w.index))
            infos = [w.receive() for w in self.workers]
        except BaseException:
            self.close()
            raise
        return infos[0]

    def _start(self, index: int) -> Worker:
        try:
            return self._spawn(index)
        except OSError as exc:
            raise WorkerError(f"cannot start worker process {index}: {exc}") from None

    def close(self) -> None:
        for w in self.workers:
            w.close()
        self.workers = []

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def ensure_process(self, index: int) -> None:
        """Worker process `index` ready to measure: when the pool holds none by that number,
        fresh workers replace the pool's, its batch (batch_of) started together, as at
        open(). They measure no per-call floors: the run's are process 1's (or the cache's),
        and only explanations read them (machine_facts.py)."""
        if any(w.index == index for w in self.workers):
            return
        self.close()
        self._open_workers(batch_of(index, self.config))

    def _replace(self, position: int, reason: str) -> None:
        """A fresh worker in place of a dead or hung one, told about its siblings. If even
        that fails, the pool goes on with the workers it has (never with none: then the
        WorkerError propagates and the run ends with what it saved)."""
        old = self.workers[position]
        old.kill()
        self.restarts.append(reason)
        try:
            fresh = self._start(old.index)
            self.workers[position] = fresh
            fresh.call(ipc.Open(self.config, tuple(w.pid for w in self.workers), fresh.index))
            if self.overhead:
                fresh.call(ipc.Overheads())
        except WorkerError as exc:
            self.restarts.append(str(exc))
            del self.workers[position]
            if not self.workers:
                raise

    # -- the Session interface -------------------------------------------------------------
    def framework_info(self) -> dict[str, Any]:
        info = {name: dict(facts) for name, facts in self._info.items()}
        for facts in info.values():
            facts["processes"] = self.config.processes
        return info

    def measure_overheads(self) -> dict[str, dict[str, float]]:
        """Worker 1's floors, the run's (its siblings idle: a floor measured while a sibling
        works is no floor). Only explanations and the report read them, from the parent
        (machine_facts.py), so the siblings' own were never used and are not measured."""
        self.overhead = self.workers[0].call(ipc.Overheads())
        return self.overhead

    def measure_ceilings(self) -> dict[str, dict[str, Any]]:
        """Worker 1's ceilings: the machine's, measured once per run (the siblings idle)."""
        return self.workers[0].call(ipc.Ceilings())

    def check_apis(self, instances: Sequence[CaseInstance]) -> list[str]:
        return self.workers[0].call(ipc.CheckApis(tuple(instances)))

    @property
    def total_passes(self) -> int:
        """runner.run_passes makes this many passes: each process's passes in turn."""
        return self.config.processes * self.config.passes

    def _position(self, pass_index: int) -> tuple[int, int]:
        """(worker process number, its own pass number) for run-wide pass `pass_index`."""
        return (pass_index - 1) // self.config.passes + 1, \
            (pass_index - 1) % self.config.passes + 1

    def run_instance(self, instance: CaseInstance) -> dict[str, Any]:
        """Pass 1: worker 1 checks the outputs, calibrates and takes its share of rounds."""
        try:
            return self.workers[0].call(ipc.Run(instance))
        except WorkerError as exc:
            self._replace(0, str(exc))
            record = instance_header(instance, self.config)
            record.update(error=str(exc), duration_s=0.0)   # ERROR when judged
            return record

    def extend_instance(self, instance: CaseInstance, record: dict[str, Any],
                        pass_index: int) -> dict[str, Any]:
        """Run-wide pass `pass_index` (2..total_passes) of an instance, in the worker whose
        turn it is."""
        if not record.get("measurements"):
            return record
        process, own_pass = self._position(pass_index)
        position = next((i for i, w in enumerate(self.workers) if w.index == process), None)
        if position is None:    # a worker was lost and could not be replaced
            return record
        worker = self.workers[position]
        try:
            return worker.call(ipc.Extend(instance, record, own_pass))
        except WorkerError as exc:
            # the message names the worker process and the instance
            record.setdefault("pass_errors", []).append(f"pass {own_pass}: {exc}")
            self._replace(position, str(exc))
            return record


class SideWorkerPool:
    """config.processes pairs of side workers (one process per side) measuring in turn: a
    MeasuringSession (protocol.py) like Session; see the module doc."""

    def __init__(self, config: RunConfig, spawn: Spawner | None = None,
                 clock: Clock = time.perf_counter):
        self.config = config
        # The parent's clock: instance durations, the clock's resolution (the samples
        # themselves are timed in the side workers, on theirs).
        self.clock = clock
        # looked up now, not at import: tests put fake workers in its place
        self._spawn = spawn or spawn_worker
        self._check_interpreter = check_interpreter
        self.sessions: list[RemoteSession] = []
        self.overhead: dict[str, dict[str, float]] = {}
        self.restarts: list[str] = []
        self.setup_s: float | None = None

    @property
    def workers(self) -> list[Worker]:
        """Every side worker, process by process."""
        return [w for s in self.sessions for w in s.workers.values()]

    # -- life cycle ------------------------------------------------------------------------
    def open(self) -> None:
        """Start every side worker and set its framework up. The imports run in parallel
        (they measure nothing); a failure closes the pool and raises WorkerError with the
        worker's message (a missing framework, a bad device)."""
        for name in self.config.frameworks:
            python = self.config.python_of(name)
            if python is not None:
                try:
                    self._check_interpreter(python, self.config.framework_of(name))
                except InterpreterError as exc:
                    raise WorkerError(str(exc)) from None
        self.sessions = self._open_processes(first_batch(self.config))

    def _open_processes(self, numbers: Sequence[int]) -> list[RemoteSession]:
        """A pair of side workers (one per framework) for each process number, started
        together; closes what it started and raises on any failure."""
        started: list[Worker] = []
        try:
            for i in numbers:
                for name in self.config.frameworks:
                    started.append(self._start(i, name))
            for w in started:
                w.send(ipc.OpenSide(self.config, w.side, w.index))
            infos = [w.receive() for w in started]
        except BaseException:
            for w in started:
                w.close()
            raise
        pids = [w.pid for w in started]
        sessions = []
        for i in numbers:
            mine = {w.side: (w, info) for w, info in zip(started, infos) if w.index == i}
            session = RemoteSession(self.config, {n: w for n, (w, _) in mine.items()}, i,
                                    watch_pids=pids, clock=self.clock)
            session.infos = {n: info for n, (_, info) in mine.items()}
            session.open()
            sessions.append(session)
        return sessions

    def _start(self, index: int, side: str) -> Worker:
        try:
            return self._spawn(index, side, self.config.python_of(side))
        except OSError as exc:
            raise WorkerError(f"cannot start worker process {index} ({side}): {exc}") from None

    def close(self) -> None:
        for w in self.workers:
            w.close()
        self.sessions = []

    def __enter__(self) -> "SideWorkerPool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def ensure_process(self, index: int) -> None:
        """Process `index` ready to measure: when the pool holds none by that number, fresh
        side workers replace the pool's, its batch (batch_of) started together, as at
        open(); no per-call floors measured (WorkerPool.ensure_process says why)."""
        if any(s.process_index == index for s in self.sessions):
            return
        self.close()
        self.sessions = self._open_processes(batch_of(index, self.config))

    def _replace_lost(self, position: int, reason: str) -> None:
        """A fresh process in place of each of process `position`'s side workers that died
        or hung. If even that fails, the pool goes on without that process pair (never with
        none: then the WorkerError propagates and the run ends with what it saved)."""
        session = self.sessions[position]
        self.restarts.append(reason)
        for name, old in list(session.workers.items()):
            if old.alive():
                continue
            old.kill()
            try:
                fresh = self._start(old.index, name)
                session.replace_worker(name, fresh)
                fresh.call(ipc.OpenSide(self.config, name, fresh.index))
            except WorkerError as exc:
                self.restarts.append(str(exc))
                for w in session.workers.values():
                    w.kill()
                del self.sessions[position]
                if not self.sessions:
                    raise
                return

    # -- the Session interface -------------------------------------------------------------
    def framework_info(self) -> dict[str, Any]:
        """Each side's facts as its own process reported them (version, build, ...), with
        the pool's processes and the interpreter it started the side in, when not this one."""
        info = self.sessions[0].framework_info()
        for name, facts in info.items():
            facts["processes"] = self.config.processes
            python = self.config.python_of(name)
            if python is not None:
                facts["python"] = python
        return info

    def measure_overheads(self) -> dict[str, dict[str, float]]:
        """Process 1's floors, the run's (WorkerPool.measure_overheads says why only its)."""
        self.overhead = self.sessions[0].measure_overheads()
        return self.overhead

    def measure_ceilings(self) -> dict[str, dict[str, Any]]:
        """Process 1's ceilings: the machine's, measured once per run (the others idle)."""
        return self.sessions[0].measure_ceilings()

    def check_apis(self, instances: Sequence[CaseInstance]) -> list[str]:
        return self.sessions[0].check_apis(instances)

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
        try:
            return self.sessions[0].run_instance(instance)
        except WorkerLost as exc:
            self._replace_lost(0, str(exc))
            record = instance_header(instance, self.config)
            record.update(error=str(exc), duration_s=0.0)   # ERROR when judged
            return record

    def extend_instance(self, instance: CaseInstance, record: dict[str, Any],
                        pass_index: int) -> dict[str, Any]:
        """Run-wide pass `pass_index` (2..total_passes) of an instance, in the process whose
        turn it is."""
        if not record.get("measurements"):
            return record
        process, own_pass = self._position(pass_index)
        position = next((i for i, s in enumerate(self.sessions)
                         if s.process_index == process), None)
        if position is None:    # a process was lost and could not be replaced
            return record
        try:
            return self.sessions[position].extend_instance(instance, record, own_pass)
        except WorkerLost as exc:
            # the message names the worker process and the instance; the record as the
            # session left it (Session.extend_instance: the rounds pooled before the loss)
            record = getattr(exc, "record", record)
            record.setdefault("pass_errors", []).append(f"pass {own_pass}: {exc}")
            self._replace_lost(position, str(exc))
            return record


def worker_pool(config: RunConfig, spawn: Any = None) -> "WorkerPool | SideWorkerPool":
    """The pool a run in worker processes measures through: one process per side when the
    sides need it (config.split_sides: a side in another interpreter, or one framework on
    both sides), else each worker holding both frameworks (the default: see the module
    doc for why)."""
    if config.split_sides:
        return SideWorkerPool(config, spawn=spawn)
    return WorkerPool(config, spawn=spawn)

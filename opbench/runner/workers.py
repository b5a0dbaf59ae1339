"""Measure in fresh worker processes, as pyperf does: each instance's rounds are spread
over `config.processes` workers.

Why: a process keeps an offset of its own for its whole life (thread placement, allocator
state, kernel choice, where the frameworks' code landed). Measured here, it moves a ratio
by 10-45% between fresh runs, and rounds inside one process cannot see it: their interval
is narrow and the next run lands outside it. With several processes per instance, that
offset is inside the data and the statistics treat the process as the unit
(stats.ratio_estimate with groups).

The pool and runner.session.Session are the two MeasuringSessions (protocol.py), so
results/recorded_run.py drives either unchanged. Worker
1 makes pass 1 through the selection: it checks each instance's outputs, calibrates and
takes the first share of its rounds. Then worker 1's further passes, then worker 2's, and so
on: each checks again and adds its share at the same loop count. So an instance's shares
lie a pass apart: the ratio drifts ~10% over seconds to minutes here (host load, an SMT
sibling's neighbour: a plain torch process ran softmax 4x64 at 1.9 us or 3.6 us for
stretches of seconds), and shares back to back would all fall in one stretch. All workers
start together (their imports measure nothing); one measures at a time while the others
wait on their socket, and every worker's pre-sample quiesce watches its siblings too. A
worker that dies (a crashing operator) is recorded against that instance, with its signal
or exit status (`worker process 1 was killed by SIGSEGV (signal 11) while running
exp[...]`), and replaced by a fresh one; the run goes on.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
from multiprocessing.connection import Connection
from typing import Any, Callable, Sequence

from opbench.cases.case_files import CaseInstance
from opbench.config import RunConfig
from opbench.runner.exits import describe_exit
from opbench.runner.raw_records import instance_header

__all__ = ["WorkerError", "WorkerPool", "Worker", "spawn_worker"]

# A worker that sends nothing for this long is taken for hung and replaced. One instance's
# share is seconds; importing both frameworks ~5-10 s on a loaded 2-core machine.
REPLY_TIMEOUT_S = 600.0


class WorkerError(RuntimeError):
    """A worker failed (died, hung, or could not start); the message says how, and what it
    was doing: `worker process 1 was killed by SIGSEGV (signal 11) while running
    exp[shape=16x64,dtype=float32]` (the full instance id: it goes into the results file)."""


# What a worker is doing while it answers each request (worker_main's list), for the
# message when it dies on one; "{id}" is the instance's id.
_ACTIVITIES = {
    "open": "starting its frameworks",
    "overheads": "measuring its dispatch floors",
    "ceilings": "measuring the machine's ceilings",
    "check_apis": "checking the cases' APIs",
    "run": "running {id}",
    "extend": "running {id}",
    "close": "closing",
}


def activity(request: tuple[Any, ...]) -> str:
    """`running exp[shape=16x64,dtype=float32]` for ("run", instance), and so on."""
    if not request:
        return "waiting for its first request"
    name = request[0]
    words = _ACTIVITIES.get(name, f"answering {name!r}")
    if "{id}" in words:
        words = words.format(id=getattr(request[1], "id", "?"))
    return words


class Worker:
    """The parent's handle on one worker process."""

    def __init__(self, conn: Any, process: Any, index: int):
        self.conn, self.process, self.index = conn, process, index
        # The request last sent: what the worker was doing if it dies before answering.
        self.request: tuple[Any, ...] = ()

    @property
    def pid(self) -> int:
        return self.process.pid

    def send(self, *request: Any) -> None:
        self.request = request
        try:
            self.conn.send(request)
        except (OSError, ValueError) as exc:
            raise WorkerError(f"{self._ending()} before {activity(request)} (the request "
                              f"could not be sent: {exc})") from None

    def receive(self, timeout_s: float = REPLY_TIMEOUT_S) -> Any:
        try:
            if not self.conn.poll(timeout_s):
                self.kill()
                raise WorkerError(f"worker process {self.index} sent nothing for "
                                  f"{timeout_s:.0f} s while {activity(self.request)} and "
                                  f"was stopped")
            reply = self.conn.recv()
        except (EOFError, OSError):
            raise WorkerError(f"{self._ending()} while {activity(self.request)}") from None
        if reply[0] == "error":
            raise WorkerError(reply[1])
        return reply[1]

    def call(self, *request: Any) -> Any:
        self.send(*request)
        return self.receive()

    def _ending(self) -> str:
        """`worker process 1 was killed by SIGSEGV (signal 11)`: its socket closed, so it
        has ended or is ending; wait briefly for its status."""
        code = self.process.poll() if hasattr(self.process, "poll") else None
        if code is None and hasattr(self.process, "wait"):
            try:
                code = self.process.wait(timeout=5)
            except Exception:  # noqa: BLE001 - only for the message
                code = None
        return f"worker process {self.index} {describe_exit(code)}"

    def close(self) -> None:
        try:
            self.conn.send(("close",))
            self.conn.poll(5)
        except (OSError, ValueError, EOFError):
            pass
        self.kill()

    def kill(self) -> None:
        try:
            self.conn.close()
        except OSError:
            pass
        if hasattr(self.process, "poll") and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def spawn_worker(index: int) -> Worker:
    """A fresh `python -m opbench.runner.worker_main` with a socket to it. The environment is
    inherited (GLOG_v, PYTHONPATH, a gate self-test's injection)."""
    parent_sock, child_sock = socket.socketpair()
    process = subprocess.Popen(
        [sys.executable, "-m", "opbench.runner.worker_main", str(child_sock.fileno())],
        pass_fds=(child_sock.fileno(),), stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL)
    child_sock.close()
    conn = Connection(os.dup(parent_sock.fileno()))
    parent_sock.close()
    return Worker(conn, process, index)


Spawner = Callable[[int], Worker]


class WorkerPool:
    """config.processes workers measuring in turn: a MeasuringSession (protocol.py) like
    Session; see the module doc."""

    def __init__(self, config: RunConfig, spawn: Spawner | None = None):
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
        try:
            for i in range(self.config.processes):
                self.workers.append(self._start(i + 1))
            pids = [w.pid for w in self.workers]
            for w in self.workers:
                w.send("open", self.config, pids, w.index)
            infos = [w.receive() for w in self.workers]
        except BaseException:
            self.close()
            raise
        self._info = infos[0]

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
        fresh workers replace the pool's, numbered from `index` (as many as the pool
        holds): a sequential run's processes beyond config.processes. Their imports run in
        parallel, as at open(); each measures its own per-call floors."""
        if any(w.index == index for w in self.workers):
            return
        for w in self.workers:
            w.close()
        count = len(self.workers) or self.config.processes
        self.workers = []
        try:
            for number in range(index, index + count):
                self.workers.append(self._start(number))
            pids = [w.pid for w in self.workers]
            for w in self.workers:
                w.send("open", self.config, pids, w.index)
            for w in self.workers:
                w.receive()
            for w in self.workers:
                w.call("overheads")
        except BaseException:
            self.close()
            raise

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
            fresh.call("open", self.config, [w.pid for w in self.workers], fresh.index)
            if self.overhead:
                fresh.call("overheads")
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
        """Each worker measures its own (it explains its own samples); the record keeps
        worker 1's. One at a time: a floor measured while a sibling works is no floor."""
        for w in self.workers:
            found = w.call("overheads")
            if w.index == 1:
                self.overhead = found
        return self.overhead

    def measure_ceilings(self) -> dict[str, dict[str, Any]]:
        """Worker 1's ceilings: the machine's, measured once per run (the siblings idle)."""
        return self.workers[0].call("ceilings")

    def check_apis(self, instances: Sequence[CaseInstance]) -> list[str]:
        return self.workers[0].call("check_apis", list(instances))

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
            return self.workers[0].call("run", instance)
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
            return worker.call("extend", instance, record, own_pass)
        except WorkerError as exc:
            # the message names the worker process and the instance
            record.setdefault("pass_errors", []).append(f"pass {own_pass}: {exc}")
            self._replace(position, str(exc))
            return record

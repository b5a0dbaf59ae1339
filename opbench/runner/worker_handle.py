"""The parent's handle on one worker process and the one way to start one: `spawn_worker`
starts `PYTHON -m MODULE FD` through spawn.py with a socket to it, `Worker` sends it
ipc.py's requests and reads its replies, and says how it ended when it dies.

Kept apart from workers.py's pools (which import the measuring session and, through it, the
framework adapters) so that a process that only starts workers, such as the model's pipeline
starting its replay processes, imports the handle and the messages, not the measuring.
"""
from __future__ import annotations

import os
import socket
import subprocess
from multiprocessing.connection import Connection
from typing import Any, Mapping, Protocol

from opbench.runner import ipc
from opbench.runner.exits import SideLost, describe_exit
from opbench.runner.spawn import spawn_child

__all__ = ["REPLY_TIMEOUT_S", "WORKER_MODULE", "ChildProcess", "WorkerError", "WorkerLost",
           "Worker", "spawn_worker"]

# A worker that sends nothing for this long is taken for hung and replaced. One instance's
# share is seconds; importing both frameworks ~5-10 s on a loaded 2-core machine.
REPLY_TIMEOUT_S = 600.0


class WorkerError(RuntimeError):
    """A worker failed (died, hung, or could not start); the message says how, and what it
    was doing: `worker process 1 was killed by SIGSEGV (signal 11) while running
    exp[shape=16x64,dtype=float32]` (the full instance id: it goes into the results file)."""


class WorkerLost(WorkerError, SideLost):
    """The worker itself is gone (died, hung, unreachable), not just its request: the pool
    records it against the instance and starts a fresh one."""


class ChildProcess(Protocol):
    """The parent's handle on a child process: a subprocess.Popen, or a test's fake."""

    pid: int

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int | None: ...

    def kill(self) -> None: ...


class Worker:
    """The parent's handle on one worker process: requests and replies are ipc.py's."""

    def __init__(self, conn: Any, process: ChildProcess, index: int,
                 side: str | None = None):
        self.conn, self.process, self.index, self.side = conn, process, index, side
        # The request last sent: what the worker was doing if it dies before answering.
        self.request: ipc.Request | None = None
        self.current = "?"     # the instance a side worker holds, for the messages

    @property
    def label(self) -> str:
        """`worker process 2 (mindspore)`; a worker of both frameworks has no side."""
        side = f" ({self.side})" if self.side else ""
        return f"worker process {self.index}{side}"

    @property
    def pid(self) -> int:
        return self.process.pid

    def send(self, request: ipc.Request) -> None:
        self.request = request
        if request.instance_id is not None:
            self.current = request.instance_id
        try:
            ipc.send(self.conn, request)
        except (OSError, ValueError) as exc:
            raise WorkerLost(f"{self._ending()} before {self._activity()} (the request "
                             f"could not be sent: {exc})") from None

    def _activity(self) -> str:
        return ipc.activity(self.request, self.current)

    def receive(self, timeout_s: float = REPLY_TIMEOUT_S) -> Any:
        try:
            if not self.conn.poll(timeout_s):
                self.kill()
                raise WorkerLost(f"{self.label} sent nothing for {timeout_s:.0f} s while "
                                 f"{self._activity()} and was stopped")
            reply = ipc.receive(self.conn)
        except (EOFError, OSError):
            raise WorkerLost(f"{self._ending()} while {self._activity()}") from None
        except ipc.UnreadableMessage as exc:
            raise WorkerError(f"{self.label} answered unreadably while "
                              f"{self._activity()}: {exc}") from None
        if isinstance(reply, ipc.Failed):
            raise WorkerError(reply.message)
        if not isinstance(reply, ipc.Ok):
            raise WorkerError(f"{self.label} answered {type(reply).__name__}, not a reply, "
                              f"while {self._activity()}")
        return reply.value

    def call(self, request: ipc.Request) -> Any:
        self.send(request)
        return self.receive()

    def _ending(self) -> str:
        """`worker process 1 was killed by SIGSEGV (signal 11)`: its socket closed, so it
        has ended or is ending; wait briefly for its status."""
        code = self.process.poll()
        if code is None:
            try:
                code = self.process.wait(timeout=5)
            except Exception:  # noqa: BLE001 - only for the message
                code = None
        return f"{self.label} {describe_exit(code)}"

    def alive(self) -> bool:
        """False once its process has ended (or its socket is closed)."""
        if getattr(self.conn, "closed", False):
            return False
        return self.process.poll() is None

    def close(self) -> None:
        try:
            ipc.send(self.conn, ipc.Close())
            self.conn.poll(5)
        except (OSError, ValueError, EOFError):
            pass
        self.kill()

    def kill(self) -> None:
        try:
            self.conn.close()
        except OSError:
            pass
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


# The module a worker process runs unless told otherwise: the runner's own server.
WORKER_MODULE = "opbench.runner.worker_main"


def spawn_worker(index: int, side: str | None = None, python: str | None = None, *,
                 module: str = WORKER_MODULE, this_opbench: bool | None = None,
                 env_defaults: Mapping[str, str] = {}, stderr: Any = None) -> Worker:
    """A fresh `PYTHON -m MODULE FD` (this interpreter unless `python` names another; the
    runner's worker_main unless `module` names another server, as the model's replay
    processes do) with a socket to it, for framework `side`. Started by spawn.spawn_child:
    the environment inherited (GLOG_v, PYTHONPATH, a gate self-test's injection), the
    current directory kept off the worker's sys.path, `this_opbench` first on it (default:
    for this interpreter only). stdout is dropped (the frameworks' prints), stderr inherited
    unless `stderr` is a file."""
    parent_sock, child_sock = socket.socketpair()
    try:
        process = spawn_child(module, (str(child_sock.fileno()),), python,
                              this_opbench=this_opbench, env_defaults=env_defaults,
                              pass_fds=(child_sock.fileno(),), stdout=subprocess.DEVNULL,
                              stderr=stderr)
    except BaseException:
        parent_sock.close()
        raise
    finally:
        child_sock.close()
    conn = Connection(os.dup(parent_sock.fileno()))
    parent_sock.close()
    return Worker(conn, process, index, side)



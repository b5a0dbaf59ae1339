"""The worker process: one side's framework (side_server.py) that the parent measures
through, or one Session with both frameworks that measures what its parent asks.

Started by opbench/runner/workers.py's pools (worker_handle.spawn_worker) as
`python -m opbench.runner.worker_main FD`; FD is one end of a socket pair over which
requests arrive and replies leave (runner/ipc.py: the records, their serialisation, the
dispatcher; stdout is left to the frameworks' own prints, stderr to their logs). The
worker exits when its parent closes the socket or dies, so a crashed parent leaves no
worker behind.

Requests (ipc.py), each answered Ok(value) or Failed(message, traceback):
  OpenSide(config, framework, process_index)  set up `framework` alone; -> its info and
                                              this interpreter's (environment_facts); then
                                              the side's requests (ipc.SIDE_REQUESTS,
                                              answered by side_server.SideServer)
  Open(config, watch_pids, process_index)     set the frameworks up; -> framework info
  Overheads()                                 dispatch floors and sync costs
  Ceilings()                                  memory bandwidth and peak FLOP/s
  CheckApis(instances)                        -> problems (list of messages)
  Run(instance)                               check, calibrate, first share of rounds
  Extend(instance, record, pass_index)        another share at the record's loop count
  Close()                                     answered, then the worker exits
"""
from __future__ import annotations

import signal
import sys
from typing import Any, Callable

from opbench.runner import ipc
from opbench.runner.side_server import SideServer

__all__ = ["serve", "main", "WorkerServer"]

SessionFactory = Callable[..., Any]


def default_session_factory(config, **kwargs):
    """A Session, or the gate self-test's InjectingSession when its environment variable
    asks for an injected slowdown (so a self-test's workers are slowed like its parent)."""
    from opbench.runner.injection import InjectingSession, injection_from_env
    from opbench.runner.session import Session

    injection = injection_from_env()
    if injection:
        return InjectingSession(config, injection, **kwargs)
    return Session(config, **kwargs)


def ignore_interrupts() -> None:
    """Ctrl-C reaches the whole process group; the parent handles it (saves, marks the
    results interrupted, closes the workers), so a worker must not die first, nor let
    MindSpore's own SIGINT handler answer it with a SIGTERM."""
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


class WorkerServer:
    """What one worker process holds between requests: its Session (both frameworks after
    Open, one after OpenSide) and, after OpenSide, the SideServer answering the side's
    requests. `dispatcher` is its table of handlers."""

    def __init__(self, session_factory: SessionFactory = default_session_factory):
        self._session_factory = session_factory
        self._session: Any = None
        self._side: SideServer | None = None
        handlers: dict[type, ipc.Handler] = {
            ipc.Open: self._open,
            ipc.OpenSide: self._open_side,
            ipc.Overheads: lambda _: self.session.measure_overheads(),
            ipc.Ceilings: lambda _: self.session.measure_ceilings(),
            ipc.CheckApis: lambda request: self.session.check_apis(request.instances),
            ipc.Run: lambda request: self.session.run_instance(request.instance),
            ipc.Extend: lambda request: self.session.extend_instance(
                request.instance, request.record, request.pass_index),
            ipc.Close: lambda _: None,
        }
        handlers.update({kind: self._to_side for kind in ipc.SIDE_REQUESTS})
        self.dispatcher = ipc.Dispatcher(handlers)

    @property
    def session(self) -> Any:
        if self._session is None:
            raise RuntimeError("no framework is set up in this worker: Open or OpenSide "
                               "comes first")
        return self._session

    def _open(self, request: ipc.Open) -> Any:
        self._session = self._session_factory(request.config,
                                              watch_pids=request.watch_pids,
                                              process_index=request.process_index)
        self._session.open()
        return self._session.framework_info()

    def _open_side(self, request: ipc.OpenSide) -> Any:
        self._session = self._session_factory(request.config,
                                              process_index=request.process_index,
                                              sides=(request.framework,))
        self._session.open()
        self._side = SideServer(self._session, request.framework)
        return self._side.answer(ipc.SideInfo())

    def _to_side(self, request: ipc.Request) -> Any:
        if self._side is None:
            raise RuntimeError(f"{type(request).__name__} is a side's request and this "
                               f"worker holds no side: OpenSide comes first")
        return self._side.answer(request)


def serve(conn: Any, session_factory: SessionFactory = default_session_factory) -> int:
    """Answer requests until Close or the parent goes away. Never raises for a request's
    failure (nor for a message it cannot read): it is sent back as Failed."""
    # MindSpore installs a SIGINT handler at its first operator: ignored again after each
    return ipc.answer_requests(conn, WorkerServer(session_factory).dispatcher,
                               after_each=ignore_interrupts)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    ignore_interrupts()
    conn = ipc.connection_from_fd(int(args[0]))
    try:
        return serve(conn)
    except KeyboardInterrupt:
        # The parent handles Ctrl-C (it reaches the whole process group); the worker
        # just stops.
        return 130


if __name__ == "__main__":
    sys.exit(main())

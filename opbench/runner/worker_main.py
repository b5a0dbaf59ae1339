"""The worker process: one side's framework (side_server.py) that the parent measures
through, or one Session with both frameworks that measures what its parent asks.

Started by opbench/runner/workers.py as `python -m opbench.runner.worker_main FD`; FD is
one end of a socket pair over which pickled requests arrive and replies leave (stdout is left to the
frameworks' own prints, stderr to their logs). The worker exits when its parent closes the
socket or dies, so a crashed parent leaves no worker behind.

Requests, each answered ("ok", value) or ("error", message, traceback):
  ("open_side", config, name, process_index)   set up framework `name` alone; -> its info
                                               and this interpreter's (environment_facts);
                                               then side_server.py's requests
  ("open", config, watch_pids, process_index)  set the frameworks up; -> framework info
  ("overheads",)                               dispatch floors and sync costs
  ("ceilings",)                                memory bandwidth and peak FLOP/s
  ("check_apis", instances)                    -> problems (list of messages)
  ("run", instance)                            check, calibrate, first share of rounds
  ("extend", instance, record, pass_index)     another share at the record's loop count
  ("close",)
"""
from __future__ import annotations

import os
import signal
import socket
import sys
import traceback
from multiprocessing.connection import Connection
from typing import Any, Callable

from opbench.runner.side_server import SIDE_REQUESTS, SideServer

__all__ = ["serve", "main"]

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


def serve(conn: Any, session_factory: SessionFactory = default_session_factory) -> int:
    """Answer requests until "close" or the parent goes away. Never raises for a request's
    failure: it is sent back with its traceback."""
    session = None
    side: SideServer | None = None
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return 0
        op, args = request[0], request[1:]
        try:
            if op in SIDE_REQUESTS and side is not None:
                value: Any = side.answer(op, args)
            elif op == "open_side":
                config, name, process_index = args
                session = session_factory(config, process_index=process_index, sides=(name,))
                session.open()
                side = SideServer(session, name)
                value = side.answer("side_info", ())
            elif op == "open":
                config, watch_pids, process_index = args
                session = session_factory(config, watch_pids=watch_pids,
                                          process_index=process_index)
                session.open()
                value = session.framework_info()
            elif op == "overheads":
                value = session.measure_overheads()
            elif op == "ceilings":
                value = session.measure_ceilings()
            elif op == "check_apis":
                value = session.check_apis(args[0])
            elif op == "run":
                value = session.run_instance(args[0])
            elif op == "extend":
                instance, record, pass_index = args
                value = session.extend_instance(instance, record, pass_index)
            elif op == "close":
                conn.send(("ok", None))
                return 0
            else:
                raise ValueError(f"unknown request {op!r}")
        except Exception as exc:  # reported to the parent, which records it
            reply: tuple = ("error", f"{type(exc).__name__}: {exc}",
                            traceback.format_exc(limit=8))
        else:
            reply = ("ok", value)
        try:
            conn.send(reply)
        except OSError:       # the parent has gone (closed the pool, or died): stop
            return 0
        ignore_interrupts()   # MindSpore installs a SIGINT handler at its first operator


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    ignore_interrupts()
    fd = int(args[0])
    sock = socket.socket(fileno=fd)
    conn = Connection(os.dup(sock.fileno()))
    sock.close()
    try:
        return serve(conn)
    except KeyboardInterrupt:
        # The parent handles Ctrl-C (it reaches the whole process group); the worker
        # just stops.
        return 130


if __name__ == "__main__":
    sys.exit(main())

"""SIGINT and SIGTERM as an exception that carries the signal, so a run saves what it
measured, marks it interrupted and exits 130 (SIGINT) or 143 (SIGTERM).

Why not Python's default: SIGTERM has no Python handler, so the process died without
saving. And once a MindSpore operator has run, MindSpore's own SIGINT handler (installed
in C, over Python's) answers Ctrl-C by sending SIGTERM to the process (seen with strace):
a Ctrl-C ended with exit 143, no `interrupted: true` and no message. `reclaim()` puts
these handlers back after MindSpore has installed its own.
"""
from __future__ import annotations

import signal
from typing import Any

__all__ = ["Interrupted", "install", "reclaim", "exit_status", "signal_name"]

HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM)
# The shell's convention for a process ended by a signal: 128 + the signal's number.
SIGNAL_EXIT_BASE = 128


class Interrupted(KeyboardInterrupt):
    """A SIGINT or SIGTERM, raised in the main thread where the signal arrived."""

    def __init__(self, signum: int):
        super().__init__(signal_name(signum))
        self.signum = signum


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _raise(signum: int, frame: Any) -> None:
    raise Interrupted(signum)


def install() -> None:
    """Handle SIGINT and SIGTERM from now on (main thread only; elsewhere a no-op)."""
    for signum in HANDLED_SIGNALS:
        try:
            signal.signal(signum, _raise)
        except ValueError:   # not the main thread: signals are the main thread's business
            return


def reclaim() -> None:
    """Install again, over a handler a framework put in place since (MindSpore's)."""
    install()


def exit_status(exc: BaseException) -> int:
    """130 for Ctrl-C (a plain KeyboardInterrupt too), 143 for SIGTERM."""
    signum = getattr(exc, "signum", signal.SIGINT)
    return SIGNAL_EXIT_BASE + int(signum)

"""How a worker process ended, in the words a reader needs: `was killed by SIGSEGV (signal
11)`, `exited with status 3`.

Why not the bare return code: `exit -11` makes the reader know that Popen reports a death by
signal N as -N and look 11 up; the signal's name says "the operator crashed" (SIGSEGV,
SIGBUS, SIGABRT) or "something killed it" (SIGKILL: often the kernel's out-of-memory killer)
at once. A process started through a shell wrapper reports a signal the shell's way, as
128 + N; that status is named as well. `SideLost` is what a measurement raises when a side's
process ended so (kept here, below both the session that raises it through and the worker
handle that subclasses it).
"""
from __future__ import annotations

import signal

__all__ = ["describe_exit", "signal_text", "SideLost"]

class SideLost(RuntimeError):
    """A side's worker process died, hung or could not be reached in the middle of an
    instance: not the instance's failure but the process's, so it is raised through to the
    pool (workers.py), which records it against the instance and starts a fresh process."""


# The shell's convention for a child ended by signal N: exit status 128 + N.
SHELL_SIGNAL_BASE = 128


def signal_text(number: int, aside: str = "") -> str:
    """`SIGSEGV (signal 11)`, or `signal 99` for a number this platform has no name for;
    `aside` goes into the parentheses."""
    try:
        name = signal.Signals(number).name
    except ValueError:
        return f"signal {number}{f' ({aside})' if aside else ''}"
    return f"{name} (signal {number}{f', {aside}' if aside else ''})"


def _is_signal(number: int) -> bool:
    try:
        signal.Signals(number)
    except ValueError:
        return False
    return True


def describe_exit(returncode: int | None) -> str:
    """A predicate for "worker process 1 ...": how a process with this Popen returncode
    ended (None: its status could not be read)."""
    if returncode is None:
        return "died (its exit status is unknown)"
    if returncode < 0:
        return f"was killed by {signal_text(-returncode)}"
    shell_signal = returncode - SHELL_SIGNAL_BASE
    if shell_signal > 0 and _is_signal(shell_signal):
        aside = f"reported by a shell as exit status {returncode}"
        return f"was killed by {signal_text(shell_signal, aside)}"
    return f"exited with status {returncode}"

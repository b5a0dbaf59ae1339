"""The program `opbench trace -- ...` runs: parsed from its command words, run in-process.

In-process (runpy) is what lets the tracer see the program's calls: `python` as the first word
is accepted for readability and dropped; `-m module` runs a module as `python -m` would.
A first word that is a path to another interpreter (`envs/ms29/bin/python`) names where the
program must run: `opbench trace` then runs itself there (cli/trace.py, named_interpreter),
as `opbench model` runs its capture, instead of silently tracing in this interpreter.
"""
from __future__ import annotations

import os
import re
import runpy
import sys
from dataclasses import dataclass
from typing import Sequence

_PYTHON = re.compile(r"^python(\d+(\.\d+)*)?(\.exe)?$")


class TargetError(Exception):
    """The command words do not name something to run. Message is user-facing."""


@dataclass(frozen=True)
class Target:
    kind: str                   # "script" | "module"
    name: str                   # script path or module name
    args: tuple[str, ...]       # the program's own arguments (sys.argv[1:])

    def describe(self) -> str:
        shown = self.name if self.kind == "script" else f"-m {self.name}"
        return " ".join([shown, *self.args])


def _is_python(word: str) -> bool:
    return bool(_PYTHON.match(os.path.basename(word))) or (
        bool(sys.executable) and os.path.abspath(word) == os.path.abspath(sys.executable))


def parse_target(words: Sequence[str]) -> Target:
    rest = list(words)
    if rest and _is_python(rest[0]):
        rest = rest[1:]
    if not rest:
        raise TargetError("nothing to run: give a script (python train.py ARGS) or a module "
                          "(python -m package.module ARGS) after --")
    first = rest[0]
    if first == "-m":
        if len(rest) < 2:
            raise TargetError("-m needs a module name")
        return Target("module", rest[1], tuple(rest[2:]))
    if first.startswith("-m") and len(first) > 2:          # python -mpkg.mod
        return Target("module", first[2:], tuple(rest[1:]))
    if first.startswith("-"):
        raise TargetError(f"python option {first!r} is not supported: the program runs inside "
                          f"this process (only -m MODULE is); set it via the environment "
                          f"instead (e.g. PYTHONUNBUFFERED=1)")
    if not os.path.exists(first):
        raise TargetError(f"no such script: {first}")
    return Target("script", first, tuple(rest[1:]))


def named_interpreter(words: Sequence[str]) -> str | None:
    """The absolute path of the interpreter the command's first word names, when it is a
    path (holds a separator) to a `python...` other than this one (the same path as
    sys.executable is this one); None otherwise: a bare `python` keeps meaning this
    interpreter, as it always did here."""
    if not words or os.sep not in words[0] or not _PYTHON.match(os.path.basename(words[0])):
        return None
    path = os.path.abspath(words[0])
    if sys.executable and path == os.path.abspath(sys.executable):
        return None
    return path


@dataclass(frozen=True)
class Outcome:
    status: int                 # the exit status `python` would have had
    message: str | None = None  # sys.exit("text") prints text to stderr: the caller does


def run_target(target: Target) -> Outcome:
    """Run the program as `python` would (sys.argv, sys.path[0], __name__ == "__main__").
    Exceptions other than SystemExit propagate."""
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    try:
        if target.kind == "script":
            sys.argv = [target.name, *target.args]
            sys.path.insert(0, os.path.dirname(os.path.abspath(target.name)))
            runpy.run_path(target.name, run_name="__main__")
        else:
            sys.argv = [target.name, *target.args]   # runpy puts the module's path in argv[0]
            sys.path.insert(0, os.getcwd())
            runpy.run_module(target.name, run_name="__main__", alter_sys=True)
        return Outcome(0)
    except SystemExit as exit_:
        return exit_outcome(exit_.code)
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path


def exit_outcome(code: object) -> Outcome:
    """What the interpreter does for SystemExit(code): None is 0, an int is itself, anything
    else is printed to stderr and exits 1."""
    if code is None:
        return Outcome(0)
    if isinstance(code, int):
        return Outcome(code)
    return Outcome(1, str(code))

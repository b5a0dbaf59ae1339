"""The processes `opbench model` starts, all through the runner's process layer: the script
under capture, in the interpreter the command names (runner/spawn.py), and the replay
processes, one framework each (a runner worker whose server is model/replay/main.py,
answering ipc.ReplayStep with ipc.ReplayResult), in that interpreter too: it is where the
user's frameworks are installed.

Everything a user can get wrong about the interpreter is said before anything runs: it
does not exist, it is not Python, it cannot import this opbench, or it lacks a framework
(the runner's one interpreter check, runner/interpreters.py, one probe for both).

Why the capture's result stays a file: the capture process runs the user's script with its
stdin, stdout and stderr (the user's terminal), and imports as little as it can beside it
(model/capture: the tracer and the program's data model). It answers once, at its end, so a
socket and a dispatcher would add the runner's IPC imports to the user's process for one
message; the program's JSON, written atomically, is that message.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from opbench.config.sides import Side
from opbench.runner import ipc
from opbench.runner.interpreters import InterpreterError
from opbench.runner.interpreters import check_interpreter
from opbench.runner.spawn import QUIET_MINDSPORE, spawn_child
from opbench.runner.worker_handle import Worker, WorkerError, spawn_worker

__all__ = ["ModelError", "Interpreter", "side_interpreter", "split_command",
           "interpreter_version", "run_capture", "ReplayFailed", "ReplayProcess", "start_replay",
           "run_replay", "CAPTURE_MODULE", "REPLAY_MODULE"]

CAPTURE_MODULE = "opbench.model.capture.main"
REPLAY_MODULE = "opbench.model.replay.main"
_PYTHON_NAME = re.compile(r"^python(\d+(\.\d+)*)?(\.exe)?$")
# A capture or replay process that says nothing for this long is taken for hung.
PROCESS_TIMEOUT_S = 3600.0


class ModelError(Exception):
    """A user-facing problem: the message says what and how to fix it."""


@dataclass(frozen=True)
class Interpreter:
    path: str
    named: bool            # the command named it (else: this interpreter)


def side_interpreter(side: Side, script: Interpreter) -> Interpreter:
    """Where a side's replay processes run: its own interpreter, else the script's."""
    return Interpreter(os.path.abspath(side.python), True) if side.python else script


def _looks_like_python(word: str) -> bool:
    return bool(_PYTHON_NAME.match(os.path.basename(word)))


def split_command(words: Sequence[str]) -> tuple[Interpreter, list[str]]:
    """`python script.py ARGS`, `/venv/bin/python -m pkg ARGS`, or `script.py ARGS` (this
    interpreter) -> the interpreter and the words for it."""
    if not words:
        raise ModelError("nothing to run: give the script after --, e.g. "
                         "`opbench model -- python train.py`")
    first = words[0]
    if _looks_like_python(first) or (os.sep in first and not first.endswith(".py")):
        found = shutil.which(first) if os.sep not in first else (
            first if os.path.isfile(first) and os.access(first, os.X_OK) else None)
        if found is None:
            where = "on PATH" if os.sep not in first else "at that path"
            raise ModelError(f"no Python interpreter {first!r} {where}: name one that exists "
                             f"(e.g. {sys.executable})")
        return Interpreter(os.path.abspath(found), True), list(words[1:])
    return Interpreter(sys.executable, False), list(words)


def interpreter_version(interpreter: Interpreter, frameworks: Sequence[str]) -> str:
    """The interpreter's Python version; ModelError when it cannot run this opbench or lacks
    a framework the run replays (both replay in it). The runner's one check
    (runner/interpreters.py), with its install hint, before anything runs: one probe for
    every framework, with the environment the model's children get (this opbench first)."""
    try:
        facts = check_interpreter(interpreter.path, tuple(dict.fromkeys(frameworks)),
                             this_opbench=True)
    except InterpreterError as exc:
        raise ModelError(str(exc)) from None
    return facts.python


def run_capture(interpreter: Interpreter, words: Sequence[str], out: Path,
                max_calls: int, steps: int | None = None, run_on: bool = False) -> int:
    """Run the script under capture; its input and output are this terminal's. Returns its
    exit status (the program file is written whatever it was, unless the capture itself
    died). `steps`: steady steps recorded before the capture ends the script (None: no
    limit), or with `run_on` lets it run on untraced."""
    args = ["--out", str(out), "--max-calls", str(max_calls), "--steps", str(steps or 0),
            *(["--run-on"] if run_on else []), "--", *words]
    process = spawn_child(CAPTURE_MODULE, args, interpreter.path, this_opbench=True,
                          env_defaults=QUIET_MINDSPORE, stdin=None)
    try:
        return process.wait(timeout=PROCESS_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise ModelError(f"the script ran longer than {PROCESS_TIMEOUT_S:.0f} s under the "
                         f"capture: mark fewer steps or shorten it") from None
    except BaseException:          # Ctrl-C: the script gets it too; leave nothing behind
        process.kill()
        process.wait()
        raise


class ReplayFailed(Exception):
    """A replay process died, hung, or its request failed; the message says how."""


class ReplayProcess:
    """One replay process for (framework, python): a runner Worker serving
    model/replay/main.py's dispatcher. Its framework is imported and set up at its first
    request; further requests (same set-up) reuse it. Its stderr goes to a file in the
    work directory, whose last line a failure quotes (MindSpore's log, a crash's cause)."""

    def __init__(self, worker: Worker, framework: str, stderr_path: Path):
        self.worker, self.framework, self.stderr_path = worker, framework, stderr_path

    def replay(self, request: ipc.ReplayStep | ipc.ReplayPaired
               ) -> ipc.ReplayResult | ipc.PairedResult:
        if request.framework != self.framework:
            raise ValueError(f"a {self.framework} replay process was asked to replay in "
                             f"{request.framework}")
        try:
            self.worker.send(request)
            return self.worker.receive(timeout_s=PROCESS_TIMEOUT_S)
        except WorkerError as exc:
            raise ReplayFailed(f"{exc}{self._stderr_tail()}") from None

    def _stderr_tail(self) -> str:
        try:
            lines = self.stderr_path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return ""
        last = lines.splitlines()[-1:] if lines else []
        return f" ({last[0].strip()})" if last else ""

    def close(self) -> None:
        self.worker.close()
        try:
            os.unlink(self.stderr_path)
        except OSError:
            pass

    def __enter__(self) -> "ReplayProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_replay(framework: str, python: str, work: Path, index: int = 1) -> ReplayProcess:
    """A replay process for `framework` in the interpreter `python` (checked before: the
    model's interpreter_version), this opbench first on its path, as the capture's."""
    handle, stderr_name = tempfile.mkstemp(prefix=f"replay-{framework}-", suffix=".log",
                                           dir=work)
    try:
        with os.fdopen(handle, "w") as stderr:
            worker = spawn_worker(index, framework, python, module=REPLAY_MODULE,
                                  this_opbench=True, env_defaults=QUIET_MINDSPORE,
                                  stderr=stderr)
    except OSError as exc:
        os.unlink(stderr_name)
        raise ReplayFailed(f"the {framework} replay process could not start: {exc}") from None
    return ReplayProcess(worker, framework, Path(stderr_name))


def run_replay(python: str, request: ipc.ReplayStep | ipc.ReplayPaired, work: Path,
               index: int = 1) -> ipc.ReplayResult | ipc.PairedResult:
    """`request` replayed in a fresh process of its framework in `python` (the process is
    the unit of noise: each timing gets its own); ReplayFailed when it could not be."""
    with start_replay(request.framework, python, work, index) as process:
        return process.replay(request)

"""The processes `opbench model` starts: the script under capture, in the interpreter the
command names, and the replay processes, one framework each (in that interpreter too: it
is where the user's frameworks are installed).

Everything a user can get wrong about the interpreter is said before anything runs: it
does not exist, it is not Python, it cannot import this opbench, or it lacks a framework
(the runner's interpreter check, runner/interpreters.py).
"""
from __future__ import annotations

import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from opbench.runner.child_env import child_environment
from opbench.runner.interpreters import InterpreterError
from opbench.runner.interpreters import check_interpreter as runner_check

__all__ = ["ModelError", "Interpreter", "split_command", "check_interpreter", "run_capture",
           "run_replay"]

_PYTHON_NAME = re.compile(r"^python(\d+(\.\d+)*)?(\.exe)?$")
# A capture or replay process that says nothing for this long is taken for hung.
PROCESS_TIMEOUT_S = 3600.0


class ModelError(Exception):
    """A user-facing problem: the message says what and how to fix it."""


@dataclass(frozen=True)
class Interpreter:
    path: str
    named: bool            # the command named it (else: this interpreter)


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


def check_interpreter(interpreter: Interpreter, frameworks: Sequence[str]) -> str:
    """The interpreter's Python version; ModelError when it cannot run this opbench or lacks
    a framework the run replays (both replay in it). The runner's one check
    (runner/interpreters.py), with its install hint, before anything runs."""
    facts: dict[str, Any] = {}
    for framework in frameworks:
        try:
            facts = runner_check(interpreter.path, framework)
        except InterpreterError as exc:
            raise ModelError(str(exc)) from None
    return str(facts.get("python", ""))


def _env() -> dict[str, str]:
    # this opbench first, so a checkout's copy is the one a child imports, and not one in
    # the current directory (runner/child_env.py)
    env = child_environment(with_this_opbench=True)
    env.setdefault("GLOG_v", "3")      # MindSpore's glog chatter off; warnings still show
    return env


def run_capture(interpreter: Interpreter, words: Sequence[str], out: Path,
                max_calls: int, steps: int | None = None, run_on: bool = False) -> int:
    """Run the script under capture; its output goes to this terminal. Returns its exit
    status (the program file is written whatever it was, unless the capture itself died).
    `steps`: steady steps recorded before the capture ends the script (None: no limit), or
    with `run_on` lets it run on untraced."""
    command = [interpreter.path, "-m", "opbench.model.capture.main", "--out", str(out),
               "--max-calls", str(max_calls), "--steps", str(steps or 0),
               *(["--run-on"] if run_on else []), "--", *words]
    try:
        return subprocess.run(command, env=_env(), timeout=PROCESS_TIMEOUT_S).returncode
    except subprocess.TimeoutExpired:
        raise ModelError(f"the script ran longer than {PROCESS_TIMEOUT_S:.0f} s under the "
                         f"capture: mark fewer steps or shorten it") from None


def run_replay(interpreter: Interpreter, request: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """One replay process; its result (or {'error': ...} when it died)."""
    handle, request_path = tempfile.mkstemp(prefix="replay-", suffix=".pkl", dir=workdir)
    os.close(handle)
    result_path = request_path.replace(".pkl", ".result.pkl")
    with open(request_path, "wb") as f:
        pickle.dump(request, f)
    try:
        done = subprocess.run([interpreter.path, "-m", "opbench.model.replay.main",
                               request_path, result_path], env=_env(), capture_output=True,
                              text=True, timeout=PROCESS_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"error": f"the {request['framework']} replay ran past {PROCESS_TIMEOUT_S:.0f} s"}
    finally:
        os.unlink(request_path)
    if not os.path.exists(result_path):
        code = done.returncode
        how = (f"killed by signal {-code}" if code < 0 else f"exited with status {code}")
        tail = (done.stderr.strip().splitlines() or [""])[-1]
        return {"error": f"the {request['framework']} replay process {how} {tail}".strip()}
    with open(result_path, "rb") as f:
        result = pickle.load(f)
    os.unlink(result_path)
    return result

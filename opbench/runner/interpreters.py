"""Is another interpreter fit to hold a side? Checked before any worker starts, so a wrong
`--reference mindspore@PYTHON` ends the run with one message and the pip command that
fixes it, before anything is timed, and never falls back to this interpreter.

The probe runs `PYTHON -c PROBE FRAMEWORK` with this environment (as the worker will) and
only *finds* the framework (importlib.util.find_spec): importing MindSpore takes seconds.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Callable

from opbench.config import OPBENCH_VERSION
from opbench.runner.child_env import child_environment
from opbench.runner.ipc import wire_fingerprint

__all__ = ["InterpreterError", "check_interpreter", "PROBE"]

PROBE = """
import importlib.util, json, sys
try:
    import opbench
    version = opbench.__version__
except Exception as exc:
    version = None
try:
    from opbench.runner.ipc import wire_fingerprint
    wire = wire_fingerprint()
except Exception as exc:
    wire = None
print(json.dumps({"opbench": version, "wire": wire, "has_framework":
                  importlib.util.find_spec(sys.argv[1]) is not None,
                  "python": sys.version.split()[0]}))
"""
# Starting an interpreter and finding two packages: well under a second here; a cold
# disk or a network home can take seconds.
PROBE_TIMEOUT_S = 60.0


class InterpreterError(RuntimeError):
    """The interpreter cannot hold the side; the message says why and what to run."""


def _opbench_source() -> str:
    """What `pip install` should get: this checkout, when opbench runs from one, else the
    release of this version."""
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").is_file():
        return str(root)
    return f"'opbench=={OPBENCH_VERSION}'"


def check_interpreter(python: str, framework: str,
                      run: Callable[..., Any] = subprocess.run) -> dict[str, Any]:
    """The probe's facts (opbench version, python version) when `python` exists, holds
    `framework` and this very opbench version; InterpreterError otherwise."""
    who = f"the interpreter {python} (for {framework})"
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        raise InterpreterError(f"{who} does not exist or is not executable")
    try:
        done = run([python, "-c", PROBE, framework], capture_output=True, text=True,
                   timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL,
                   env=child_environment(with_this_opbench=False))
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InterpreterError(f"{who} could not be started: {exc}") from None
    try:
        facts = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        last = (done.stderr or "").strip().splitlines()[-1:] or ["no output"]
        raise InterpreterError(f"{who} did not answer the probe: {last[0]}") from None
    pip = f"{python} -m pip install"
    if facts.get("opbench") is None:
        raise InterpreterError(f"{who} cannot import opbench; install it there: "
                               f"{pip} {_opbench_source()}")
    if facts["opbench"] != OPBENCH_VERSION:
        raise InterpreterError(f"{who} has opbench {facts['opbench']}, this one is "
                               f"{OPBENCH_VERSION}; install the same there: "
                               f"{pip} {_opbench_source()}")
    if facts.get("wire") != wire_fingerprint():
        raise InterpreterError(f"{who} has opbench {facts['opbench']} with other worker "
                               f"messages than this one (another checkout or build of the "
                               f"same version); install this one there: {pip} "
                               f"{_opbench_source()}")
    if not facts.get("has_framework"):
        raise InterpreterError(f"{who} has no {framework}; install it there: {pip} "
                               f"{framework}")
    return facts

"""Is another interpreter fit to hold a side? Checked before any worker starts, so a wrong
`--reference mindspore@PYTHON` ends the run with one message and the pip command that
fixes it, before anything is timed, and never falls back to this interpreter.

The probe runs `PYTHON -c PROBE FRAMEWORK...` with the environment the child will have
(child_env.py: this opbench first only for a child started so, as the model's are) and
only *finds* the frameworks (importlib.util.find_spec): importing MindSpore takes seconds.
One probe answers for every framework the interpreter must hold (the model replays both
in the script's interpreter: one interpreter start, not one per framework).
"""
from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from opbench.config import OPBENCH_VERSION
from opbench.config.record_codec import decoded, record_from
from opbench.runner.child_env import child_environment, is_this_interpreter
from opbench.runner.ipc import wire_fingerprint

__all__ = ["InterpreterError", "InterpreterFacts", "check_interpreter", "PROBE"]

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
missing = [name for name in sys.argv[1:] if importlib.util.find_spec(name) is None]
print(json.dumps({"opbench": version, "wire": wire, "has_framework": not missing,
                  "missing": missing, "python": sys.version.split()[0]}))
"""
# Starting an interpreter and finding two packages: well under a second here; a cold
# disk or a network home can take seconds.
PROBE_TIMEOUT_S = 60.0


class InterpreterError(RuntimeError):
    """The interpreter cannot hold the side; the message says why and what to run."""


@dataclass(frozen=True)
class InterpreterFacts:
    """The probe's answer (PROBE's JSON, its keys these fields' names): the opbench version
    it imports (None: none), its worker messages' fingerprint, whether it holds every
    framework asked for and which it lacks, and its Python version."""

    opbench: str | None = None
    wire: str | None = None
    has_framework: bool = False
    missing: tuple[str, ...] = field(default=(), metadata=decoded(tuple, True))
    python: str = ""


def _opbench_source() -> str:
    """What `pip install` should get: this checkout, when opbench runs from one, else the
    release of this version."""
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").is_file():
        return str(root)
    return f"'opbench=={OPBENCH_VERSION}'"


def check_interpreter(python: str, framework: str | Sequence[str],
                      run: Callable[..., Any] = subprocess.run,
                      this_opbench: bool | None = None) -> InterpreterFacts:
    """The probe's facts (opbench version, python version) when `python` exists, holds
    `framework` (a name, or several: one probe for all) and this very opbench version;
    InterpreterError otherwise. `this_opbench`: probe with this opbench first on the path,
    as a child started with spawn_child(this_opbench=True) will import it (default: as
    spawn_child's, for this interpreter only)."""
    if this_opbench is None:
        this_opbench = is_this_interpreter(python)
    frameworks = (framework,) if isinstance(framework, str) else tuple(framework)
    who = f"the interpreter {python}" + (f" (for {' and '.join(frameworks)})"
                                         if frameworks else "")
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        raise InterpreterError(f"{who} does not exist or is not executable")
    try:
        done = run([python, "-c", PROBE, *frameworks], capture_output=True, text=True,
                   timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL,
                   env=child_environment(with_this_opbench=this_opbench))
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InterpreterError(f"{who} could not be started: {exc}") from None
    try:
        facts = record_from(InterpreterFacts, json.loads(done.stdout.strip().splitlines()[-1]))
    except (ValueError, IndexError, TypeError, AttributeError):
        last = (done.stderr or "").strip().splitlines()[-1:] or ["no output"]
        raise InterpreterError(f"{who} did not answer the probe: {last[0]}") from None
    pip = f"{python} -m pip install"
    if facts.opbench is None:
        raise InterpreterError(f"{who} cannot import opbench; install it there: "
                               f"{pip} {_opbench_source()}")
    if facts.opbench != OPBENCH_VERSION:
        raise InterpreterError(f"{who} has opbench {facts.opbench}, this one is "
                               f"{OPBENCH_VERSION}; install the same there: "
                               f"{pip} {_opbench_source()}")
    if facts.wire != wire_fingerprint():
        raise InterpreterError(f"{who} has opbench {facts.opbench} with other worker "
                               f"messages than this one (another checkout or build of the "
                               f"same version); install this one there: {pip} "
                               f"{_opbench_source()}")
    if not facts.has_framework:
        missing = facts.missing or frameworks
        raise InterpreterError(f"{who} has no {' or '.join(missing)}; install it there: "
                               f"{pip} {' '.join(missing)}")
    return facts

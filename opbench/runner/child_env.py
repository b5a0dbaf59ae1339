"""The environment of a process opbench starts as `PYTHON -m opbench...` (a worker, a side's
process, a model capture or replay).

`python -m` puts the current directory first on sys.path, so a user who runs opbench from a
directory holding another opbench checkout (or any `opbench/` folder) got workers running
that code, not the parent's. PYTHONSAFEPATH=1 (Python 3.11+; older interpreters ignore it)
leaves the current directory out. For this interpreter's children the parent's own opbench
goes first on PYTHONPATH as well, so a parent run from a source checkout without installing
still finds it; another interpreter keeps its own installed opbench, whose version the
interpreter check compares (runner/interpreters.py).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Mapping

__all__ = ["child_environment", "is_this_interpreter", "OPBENCH_ROOT"]

# The directory holding the opbench package this process runs.
OPBENCH_ROOT = Path(__file__).resolve().parents[2]


def child_environment(with_this_opbench: bool,
                      base: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` (this process's environment by default) for a `python -m opbench...` child:
    the current directory off its sys.path, and with_this_opbench: this opbench first."""
    env = dict(os.environ if base is None else base)
    env["PYTHONSAFEPATH"] = "1"
    if with_this_opbench and (OPBENCH_ROOT / "opbench").is_dir():
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(OPBENCH_ROOT), env.get("PYTHONPATH")) if p)
    return env


def is_this_interpreter(python: str | None) -> bool:
    """None, or the path of the interpreter running this process (as named: a venv's
    python is a symlink to its base interpreter, which other venvs share, so links are not
    resolved). Its children get this opbench first (child_environment)."""
    return python is None or os.path.abspath(python) == os.path.abspath(sys.executable)

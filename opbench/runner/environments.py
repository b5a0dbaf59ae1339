"""`opbench env create NAME SPEC...`: a virtual environment that can hold a side.

One framework at the version asked for (`mindspore==2.9.0`), numpy<2 (MindSpore 2.x needs
it), and this opbench, installed editable from this checkout: a side worker in the
environment then runs the very code of the parent that drives it (the side requests of
side_server.py change with the code, not with the version number the interpreter check
compares). Everything else the install pulls in is pinned by the project's constraints
file (.ci/constraints.txt) where it applies: a constraint on a package the specs name is
dropped, since choosing that version is the point. The constraints used are kept in the
environment (ENV/constraints.txt) so it can be rebuilt the same way.

`plan_environment` is pure (paths and text in, commands out); `create_environment` runs
the plan and checks the result with the same probe a run uses (interpreters.py).
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from opbench.config.vocabulary import FRAMEWORKS
from opbench.runner.interpreters import InterpreterError, InterpreterFacts, check_interpreter

__all__ = ["EnvCreateError", "EnvironmentPlan", "plan_environment", "create_environment",
           "applicable_constraints", "requirement_name"]

SIDE_FRAMEWORKS = FRAMEWORKS
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
# MindSpore 2.x is built against numpy 1.x (pyproject.toml says the same of opbench).
NUMPY_PIN = "numpy<2"
# The longest step is pip fetching MindSpore (~800 MB) and torch; a stalled mirror should
# end with a message, not hang the command.
STEP_TIMEOUT_S = 3600.0


class EnvCreateError(RuntimeError):
    """The environment could not be planned or made; the message says which step and why."""


@dataclass(frozen=True)
class EnvironmentPlan:
    name: str
    directory: Path
    framework: str                       # the side it holds: torch or mindspore
    specs: tuple[str, ...]
    constraints: tuple[str, ...]         # the constraint lines that apply
    commands: tuple[tuple[str, ...], ...]

    @property
    def python(self) -> Path:
        return self.directory / "bin" / "python"

    @property
    def constraints_file(self) -> Path:
        return self.directory / "constraints.txt"

    @property
    def side(self) -> str:
        """What --reference/--target take to run this environment's framework."""
        return f"{self.framework}@{self.python}"

    @property
    def toml_entry(self) -> str:
        """Its line for opbench.toml's [environments] table."""
        return f'{self.name} = {{framework = "{self.framework}", python = "{self.python}"}}'


def requirement_name(spec: str) -> str:
    """`MindSpore==2.9.0` -> `mindspore` (PEP 503 normalised: case, '-', '_', '.')."""
    found = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec)
    if not found:
        raise EnvCreateError(f"{spec!r} is not a requirement (e.g. 'mindspore==2.9.0')")
    return re.sub(r"[-_.]+", "-", found.group(1)).lower()


def applicable_constraints(constraints_text: str, specs: Sequence[str]) -> tuple[str, ...]:
    """The constraint lines for packages the specs do not name (comments and blanks
    dropped): `mindspore==2.10.0` must not fight a requested `mindspore==2.9.0`."""
    named = {requirement_name(s) for s in specs}
    kept = []
    for line in constraints_text.splitlines():
        text = line.split("#", 1)[0].strip()
        if text and requirement_name(text) not in named:
            kept.append(text)
    return tuple(kept)


def plan_environment(name: str, specs: Sequence[str], root: Path, checkout: Path,
                     base_python: str, constraints_text: str = "") -> EnvironmentPlan:
    """The commands that make ROOT/NAME: a venv, then one pip install of the specs, numpy<2
    and the checkout (editable) under the applicable constraints."""
    if not NAME_PATTERN.fullmatch(name):
        raise EnvCreateError(f"environment name {name!r}: use letters, digits, '.', '_' "
                                f"and '-' (it becomes a directory)")
    if not specs:
        raise EnvCreateError("no framework to install: give one, e.g. 'mindspore==2.9.0'")
    frameworks = sorted({requirement_name(s) for s in specs} & set(SIDE_FRAMEWORKS))
    if len(frameworks) != 1:
        which = " and ".join(frameworks) if frameworks else "neither"
        raise EnvCreateError(
            f"an environment holds one side's framework, {' or '.join(SIDE_FRAMEWORKS)}: "
            f"{' '.join(specs)} names {which}")
    if not (checkout / "pyproject.toml").is_file():
        raise EnvCreateError(f"{checkout} is not an opbench checkout (no pyproject.toml): "
                                f"opbench is installed into the environment from one")
    directory = (root / name).resolve()
    constraints = applicable_constraints(constraints_text, specs)
    python = str(directory / "bin" / "python")
    pip = [python, "-m", "pip", "install", "--disable-pip-version-check"]
    if constraints:
        pip += ["-c", str(directory / "constraints.txt")]
    pip += [*specs, NUMPY_PIN, "-e", str(checkout.resolve())]
    return EnvironmentPlan(name, directory, frameworks[0], tuple(specs), constraints,
                           ((base_python, "-m", "venv", str(directory)), tuple(pip)))


def _tail(text: str | None, lines: int = 8) -> str:
    return "\n".join((text or "").strip().splitlines()[-lines:])


def create_environment(plan: EnvironmentPlan, run: Callable[..., Any] = subprocess.run,
                       check: Callable[[str, str], InterpreterFacts] = check_interpreter,
                       echo: Callable[[str], None] = lambda line: None) -> InterpreterFacts:
    """Run the plan's commands, then probe the environment as a run would; returns the
    probe's facts. Refuses a directory that exists (never installs over an environment)."""
    if plan.directory.exists():
        raise EnvCreateError(f"{plan.directory} exists: remove it or choose another name")
    for index, command in enumerate(plan.commands):
        if index == 1 and plan.constraints:     # the venv exists now: keep what pins it
            plan.constraints_file.write_text("\n".join(plan.constraints) + "\n",
                                             encoding="utf-8")
        echo(" ".join(command))
        try:
            done = run(list(command), capture_output=True, text=True, timeout=STEP_TIMEOUT_S,
                       stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise EnvCreateError(f"`{' '.join(command)}` could not run: {exc}") from None
        if done.returncode != 0:
            raise EnvCreateError(f"`{' '.join(command)}` failed (exit {done.returncode}):"
                                    f"\n{_tail(done.stderr) or _tail(done.stdout)}")
    try:
        return check(str(plan.python), plan.framework)
    except InterpreterError as exc:
        raise EnvCreateError(f"the environment was made but cannot hold a side: {exc}"
                                ) from None

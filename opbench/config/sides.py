"""What `--reference` / `--target` name: a side is a framework in an interpreter.

    torch                                   this interpreter's torch
    mindspore@envs/ms29/bin/python          MindSpore in that interpreter
    ms29                                    a named environment, from the
                                            [tool.opbench.environments] table of
                                            ./pyproject.toml or the [environments]
                                            table of ./opbench.toml:
                                            ms29 = {framework = "mindspore",
                                                    python = "envs/ms29/bin/python"}
Pure parsing plus reading those two files; checking that an interpreter exists and holds
the framework and this opbench is runner/interpreters.py's (it starts processes)."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from opbench.config.vocabulary import ADAPTER_FRAMEWORKS

__all__ = ["SideSpec", "SideSpecError", "parse_side", "load_environments", "side_labels",
           "AGAIN_SUFFIX"]

# A side's framework: one opbench has an adapter for.
KNOWN_FRAMEWORKS = ADAPTER_FRAMEWORKS


class SideSpecError(ValueError):
    """A side that names no known framework or environment; the message says which."""


@dataclass(frozen=True)
class SideSpec:
    framework: str
    python: str | None = None      # None: this interpreter
    environment: str | None = None  # the named environment it came from

    @property
    def label(self) -> str:
        """What names the side when both sides share a framework: its environment's name,
        `FRAMEWORK@VENV` (the directory holding bin/python), or the framework."""
        if self.environment:
            return self.environment
        if self.python:
            path = Path(self.python)
            where = path.parent.parent.name if path.parent.name == "bin" else self.python
            return f"{self.framework}@{where}"
        return self.framework


# The target's label when both sides are one and the same (an A/A run, `--aa`).
AGAIN_SUFFIX = "#2"


def side_labels(reference: SideSpec, target: SideSpec) -> tuple[str, str]:
    """The names the two sides go by in the records: their frameworks when these differ
    (as every run before same-framework sides), else their labels (SideSpec.label), the
    target's marked AGAIN_SUFFIX when even those agree (a side against itself)."""
    if reference.framework != target.framework:
        return reference.framework, target.framework
    if reference.label != target.label:
        return reference.label, target.label
    return reference.label, reference.label + AGAIN_SUFFIX


def parse_side(text: str, environments: Mapping[str, SideSpec] | None = None) -> SideSpec:
    """`torch`, `mindspore@PYTHON` or an environment's name -> SideSpec."""
    environments = environments or {}
    if text in environments:
        spec = environments[text]
        return SideSpec(spec.framework, spec.python, text)
    framework, at, python = text.partition("@")
    if at and not python:
        raise SideSpecError(f"{text!r}: no interpreter after '@' (FRAMEWORK@PYTHON)")
    # an unknown framework name is the adapter registry's to refuse, with its suggestion
    return SideSpec(framework, python or None)


def _environments_from(table: object, source: str) -> dict[str, SideSpec]:
    if not isinstance(table, dict):
        raise SideSpecError(f"{source}: the environments table must be a table of tables")
    found = {}
    for name, entry in table.items():
        where = f"{source}: environment {name!r}"
        if not isinstance(entry, dict) or not isinstance(entry.get("framework"), str):
            raise SideSpecError(f"{where} needs framework = \"torch\" or \"mindspore\"")
        if entry["framework"] not in KNOWN_FRAMEWORKS:
            raise SideSpecError(f"{where}: unknown framework {entry['framework']!r}")
        python = entry.get("python")
        if python is not None and not isinstance(python, str):
            raise SideSpecError(f"{where}: python must be a path")
        found[name] = SideSpec(entry["framework"], python)
    return found


def load_environments(directory: Path) -> dict[str, SideSpec]:
    """The named environments of `directory`'s opbench.toml ([environments]) and
    pyproject.toml ([tool.opbench.environments]); opbench.toml wins a name both define.
    A relative python path is relative to the file's directory."""
    found: dict[str, SideSpec] = {}
    for file, path_in_file in (("pyproject.toml", ("tool", "opbench", "environments")),
                               ("opbench.toml", ("environments",))):
        source = directory / file
        if not source.is_file():
            continue
        try:
            table: object = tomllib.loads(source.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise SideSpecError(f"{source}: {exc}") from None
        for key in path_in_file:
            table = table.get(key, {}) if isinstance(table, dict) else {}
        for name, spec in _environments_from(table, str(source)).items():
            python = spec.python
            if python is not None and not Path(python).is_absolute() and "/" in python:
                python = str(directory / python)
            found[name] = SideSpec(spec.framework, python)
    return found

"""What `--reference` / `--target` name: a side is a framework in an interpreter.

    torch                                   this interpreter's torch
    mindspore@envs/ms29/bin/python          MindSpore in that interpreter
    ms29                                    a named environment, from the
                                            [tool.opbench.environments] table of
                                            ./pyproject.toml or the [environments]
                                            table of ./opbench.toml:
                                            ms29 = {framework = "mindspore",
                                                    python = "envs/ms29/bin/python"}
Pure parsing, importing nothing of opbench (RunConfig holds two sides); reading those two
files is environment_table.py's; checking that an interpreter exists and holds the
framework and this opbench is runner/interpreters.py's (it starts processes)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

__all__ = ["Side", "SideSpecError", "parse_side", "side_labels", "AGAIN_SUFFIX"]


class SideSpecError(ValueError):
    """A side that names no known framework or environment; the message says which."""


def _place(python: str) -> str:
    """Where an interpreter lives, as a reader knows it: the environment's directory (the
    one holding bin/python, as its path was given: `envs/ms29`), else the path itself."""
    path = Path(python)
    if path.parent.name == "bin" and path.parent.parent.name:
        return str(path.parent.parent)
    return python


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a framework in an interpreter, and the name it goes by.

    framework: the framework its processes import (torch, mindspore, numpy)
    python:    the interpreter they run in; None is this one (for `opbench model`: the
               script's, where the user's frameworks are installed)
    label:     its name when both sides share a framework (in records and views): a named
               environment's name, else `FRAMEWORK@VENV` (the directory holding bin/python),
               else the framework; filled in when not given.
    """

    framework: str
    python: str | None = None
    label: str = ""

    def __post_init__(self) -> None:
        if not self.label:
            label = self.framework
            if self.python:
                path = Path(self.python)
                where = path.parent.parent.name if path.parent.name == "bin" else self.python
                label = f"{self.framework}@{where}"
            object.__setattr__(self, "label", label)

    def described(self, version: str | None) -> str:
        """The side for a reader, with the build it ran: `mindspore 2.9.0 (envs/ms29)`,
        `torch 2.13.0` (this interpreter); without a version, its label."""
        if not version:
            return self.label
        where = f" ({_place(self.python)})" if self.python else ""
        return f"{self.framework} {version}{where}"


# The target's label when both sides are one and the same (an A/A run, `--aa`).
AGAIN_SUFFIX = "#2"


def side_labels(reference: Side, target: Side) -> tuple[str, str]:
    """The names the two sides go by in the records: their frameworks when these differ
    (as every run before same-framework sides), else their labels (Side.label), the
    target's marked AGAIN_SUFFIX when even those agree (a side against itself)."""
    if reference.framework != target.framework:
        return reference.framework, target.framework
    if reference.label != target.label:
        return reference.label, target.label
    return reference.label, reference.label + AGAIN_SUFFIX


def parse_side(text: str, environments: Mapping[str, Side] | None = None) -> Side:
    """`torch`, `mindspore@PYTHON` or an environment's name -> Side."""
    environments = environments or {}
    if text in environments:
        spec = environments[text]
        return Side(spec.framework, spec.python, text)
    framework, at, python = text.partition("@")
    if at and not python:
        raise SideSpecError(f"{text!r}: no interpreter after '@' (FRAMEWORK@PYTHON)")
    # an unknown framework name is the adapter registry's to refuse, with its suggestion
    return Side(framework, python or None)

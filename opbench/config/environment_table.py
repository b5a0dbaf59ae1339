"""Named environments: the [environments] table of ./opbench.toml and the
[tool.opbench.environments] table of ./pyproject.toml, each name a side (config/sides.py)
that `--reference` / `--target` may give by name:

    ms29 = {framework = "mindspore", python = "envs/ms29/bin/python"}
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opbench.config.record_codec import record_from
from opbench.config.sides import Side, SideSpecError
from opbench.config.vocabulary import ADAPTER_FRAMEWORKS

__all__ = ["load_environments"]

# A side's framework: one opbench has an adapter for.
KNOWN_FRAMEWORKS = ADAPTER_FRAMEWORKS


@dataclass(frozen=True)
class _EnvironmentEntry:
    """One environment's table (`ms29 = {framework = "mindspore", python = "..."}`), read
    before it is checked."""

    framework: Any = None
    python: Any = None


def _environments_from(table: object, source: str) -> dict[str, Side]:
    if not isinstance(table, dict):
        raise SideSpecError(f"{source}: the environments table must be a table of tables")
    found = {}
    for name, item in table.items():
        where = f"{source}: environment {name!r}"
        entry = record_from(_EnvironmentEntry, item) if isinstance(item, dict) else None
        if entry is None or not isinstance(entry.framework, str):
            raise SideSpecError(f"{where} needs framework = \"torch\" or \"mindspore\"")
        if entry.framework not in KNOWN_FRAMEWORKS:
            raise SideSpecError(f"{where}: unknown framework {entry.framework!r}")
        python = entry.python
        if python is not None and not isinstance(python, str):
            raise SideSpecError(f"{where}: python must be a path")
        found[name] = Side(entry.framework, python, name)
    return found


def load_environments(directory: Path) -> dict[str, Side]:
    """The named environments of `directory`'s opbench.toml ([environments]) and
    pyproject.toml ([tool.opbench.environments]); opbench.toml wins a name both define.
    A relative python path is relative to the file's directory."""
    found: dict[str, Side] = {}
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
            found[name] = Side(spec.framework, python, name)
    return found

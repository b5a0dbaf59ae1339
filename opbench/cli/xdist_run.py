"""`opbench run --workers N`: the run measured by pytest-xdist's workers.

No pool of opbench's own: the command runs `pytest --benchmark -n N` in a subprocess on the
selected instances (their node ids), so the isolation rule, the placement of each worker on
its cores or device, the distribution of cases and the merge of the workers' records are
exactly the pytest front door's (pytest_plugin/xdist_isolation.py). The run options are
handed over as their `--opbench-` flags from the one list (options.OPTIONS); the command
then reads the one record the controller wrote and shows it like any run.

Pure here: the argument list. cli.py runs it.
"""
from __future__ import annotations

import importlib.metadata
import os
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from opbench.config.options import OPTIONS

__all__ = ["PLUGIN_MODULE", "pytest_command", "plugin_autoloaded"]

PLUGIN_MODULE = "opbench.pytest_plugin.plugin"


def plugin_autoloaded(environ: Mapping[str, str] = os.environ) -> bool:
    """An installed opbench's pytest11 entry point loads the plugin; naming it again with
    -p would register it twice."""
    if environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        return False
    return any(ep.value == PLUGIN_MODULE
               for ep in importlib.metadata.entry_points(group="pytest11"))


def node_id(instance: Any) -> str:
    """The instance's pytest item, addressed by its case file's absolute path (the
    subprocess may resolve relative paths against another root)."""
    return f"{Path(instance.case.file).resolve()}::{instance.id}"


def option_flags(given: Mapping[str, Any]) -> list[str]:
    """The run options the user gave, as the pytest front door's flags."""
    flags = []
    for spec in OPTIONS:
        value = given.get(spec.field)
        if value is None or value is False:
            continue
        flags.append(f"--opbench-{spec.flag}" if spec.kind is bool
                     else f"--opbench-{spec.flag}={value}")
    return flags


def pytest_command(instances: Sequence[Any], given: Mapping[str, Any], workers: int,
                   json_path: str, shard: str | None = None,
                   autoloaded: bool | None = None) -> list[str]:
    """The pytest command line of `opbench run --workers N`. With a shard, every selected
    instance is named and the plugin takes the shard's slice itself (so the record's
    config.shard describes the whole selection, as `opbench run --shard` writes it)."""
    autoloaded = plugin_autoloaded() if autoloaded is None else autoloaded
    return [sys.executable, "-m", "pytest",
            *([] if autoloaded else ["-p", PLUGIN_MODULE]),
            # pytest-benchmark's tables and the cache are not this command's output
            "-p", "no:benchmark", "-p", "no:cacheprovider", "-q",
            "--benchmark", "-n", str(workers), f"--opbench-json={json_path}",
            *([f"--opbench-shard={shard}"] if shard else []),
            *option_flags(given),
            *[node_id(inst) for inst in instances]]

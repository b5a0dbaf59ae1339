"""Command-line options of the pytest front door and their translation into a RunConfig.

The options mean what the `opbench run` options of the same name mean (opbench/cli/main.py);
they carry an `--opbench-` prefix because pytest-benchmark owns `--benchmark-*` and other
plugins own short names like `--device`. `--benchmark` itself is free: pytest-benchmark has
only `--benchmark-<something>` options, and pytest turns off argparse's prefix matching, so
`--benchmark` is never read as an abbreviation of one of them.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import pytest

from opbench.config import RunConfig

GROUP = "opbench"
# pytest-xdist sets this in every worker process; the controller has `-n`/`--dist` instead.
XDIST_WORKER_ENV = "PYTEST_XDIST_WORKER"


@dataclass(frozen=True)
class PluginOptions:
    """What the command line asked of the plugin."""

    benchmark: bool              # --benchmark: time and judge ratios, not only correctness
    run_config: RunConfig
    json_path: str | None        # --opbench-json: the opbench results record of the run
    shard: Any = None            # --opbench-shard: a shard.Shard, or None (every case)


def _add_option(group: Any, spec: Any) -> None:
    """An argparse option from an options.OptionSpec (same flag, type and help as click's)."""
    kwargs: dict[str, Any] = {"dest": f"opbench_{spec.field}", "default": spec.default,
                              "help": spec.help.replace("%", "%%")}
    if spec.kind is bool:
        kwargs.update(action="store_true", default=None)
    elif isinstance(spec.kind, tuple):
        kwargs["choices"] = spec.kind
    else:
        kwargs["type"] = spec.kind
    if spec.metavar:
        kwargs["metavar"] = spec.metavar
    group.addoption(f"--opbench-{spec.flag}", **kwargs)


def add_options(parser: pytest.Parser) -> None:
    from opbench.config.options import LIMIT_OPTIONS, OPTIONS, SHARD_OPTION

    group = parser.getgroup(GROUP, "opbench: YAML operator cases as tests")
    group.addoption(
        "--benchmark", action="store_true", dest="opbench_benchmark", default=False,
        help="Time the case instances (opbench's interleaved protocol) and judge each ratio: "
             "SLOW and MISMATCH fail, INCONCLUSIVE is reported but does not fail. Without "
             "it, case items only check that both frameworks' outputs agree.")
    # The run options of `opbench run`, from the one definition (opbench/config/options.py).
    for spec in OPTIONS:
        _add_option(group, spec)
    group.addoption(f"--opbench-{SHARD_OPTION.flag}", dest="opbench_shard", default=None,
                    metavar="K/N", help=SHARD_OPTION.help + " Only case items are sharded.")
    # Limits on what one case may ask of the machine (opbench/config/limits.py), applied when
    # case files are collected.
    for spec in LIMIT_OPTIONS:
        _add_option(group, spec)
    group.addoption(
        "--opbench-json", default=None, dest="opbench_json", metavar="PATH",
        help="Also write the opbench results record (what `opbench run --json` writes; "
             "`opbench report` reads it).")


def plugin_options(config: pytest.Config) -> PluginOptions:
    """Read and validate the options; a bad value is a usage error, before anything runs."""
    from opbench.config.options import OPTIONS, OptionError, RunOptions, parse_shard_option

    benchmark = bool(config.getoption("opbench_benchmark"))
    given = {spec.field: config.getoption(f"opbench_{spec.field}") for spec in OPTIONS}
    try:
        run_config = RunOptions.from_mapping(given).to_config(timing=benchmark)
        shard = parse_shard_option(config.getoption("opbench_shard"))
        if run_config.reference.framework == run_config.target.framework:
            # a pytest test holds its sides in its own process: one framework twice would
            # be one framework set up twice there (`opbench run` gives each its process)
            raise OptionError("--reference and target must be different frameworks under "
                              "pytest; one framework on both sides runs with `opbench run`")
    except OptionError as exc:
        # name the option as pytest spells it
        raise pytest.UsageError(f"opbench: {str(exc).replace('--', '--opbench-', 1)}") \
            from None
    return PluginOptions(benchmark=benchmark, run_config=run_config,
                         json_path=config.getoption("opbench_json"), shard=shard)


def xdist_active(config: pytest.Config) -> bool:
    """True in a pytest-xdist controller started with -n/--dist, and in its workers."""
    if os.environ.get(XDIST_WORKER_ENV):
        return True
    # Read as attributes: the options exist only when pytest-xdist is installed.
    dist = getattr(config.option, "dist", "no")
    processes = getattr(config.option, "numprocesses", None)
    return dist not in (None, "no") or bool(processes)

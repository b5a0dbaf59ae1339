"""Command-line options of the pytest front door and their translation into a RunConfig.

The options mean what the `opbench run` options of the same name mean (opbench/cli.py);
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

from ..measure import ASYNC, SERIAL
from ..runner import RunConfig, default_threads
from ..verdict import DEFAULT_THRESHOLD

BOTH_MODES = "both"
MODE_CHOICES = (SERIAL, ASYNC, BOTH_MODES)
GROUP = "opbench"
# pytest-xdist sets this in every worker process; the controller has `-n`/`--dist` instead.
XDIST_WORKER_ENV = "PYTEST_XDIST_WORKER"


@dataclass(frozen=True)
class PluginOptions:
    """What the command line asked of the plugin."""

    benchmark: bool              # --benchmark: time and judge ratios, not only correctness
    run_config: RunConfig
    json_path: str | None        # --opbench-json: the opbench results record of the run


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup(GROUP, "opbench: YAML operator cases as tests")
    group.addoption(
        "--benchmark", action="store_true", dest="opbench_benchmark", default=False,
        help="Time the case instances (opbench's interleaved protocol) and judge each ratio: "
             "SLOW and MISMATCH fail, INCONCLUSIVE is reported but does not fail. Without "
             "it, case items only check that both frameworks' outputs agree.")
    group.addoption(
        "--opbench-mode", choices=MODE_CHOICES, default=SERIAL, dest="opbench_mode",
        help="serial: sync after every call (latency); async: one sync per sample "
             "(throughput); both: each, side by side. Default: serial.")
    group.addoption(
        "--opbench-threshold", type=float, default=None, dest="opbench_threshold",
        help=f"Ratio threshold for cases that set none (default {DEFAULT_THRESHOLD}).")
    group.addoption(
        "--opbench-device", default="cpu", dest="opbench_device",
        help="cpu, cuda[:N] or ascend[:N]. Default: cpu.")
    group.addoption(
        "--opbench-threads", type=int, default=None, dest="opbench_threads",
        help="Intra-op threads, set equal in both frameworks (default: the core count).")
    group.addoption(
        "--opbench-reference", default="torch", dest="opbench_reference",
        help="The baseline framework. Default: torch.")
    group.addoption(
        "--opbench-target", default="mindspore", dest="opbench_target",
        help="The framework under test. Default: mindspore.")
    group.addoption(
        "--opbench-rounds", type=int, default=None, dest="opbench_rounds",
        help="Interleaved rounds per instance (default 15; >= 6 for a 95%% interval).")
    group.addoption(
        "--opbench-min-sample-time", type=float, default=None, dest="opbench_min_sample_time_s",
        help="Seconds each timed sample lasts at least (default 0.02).")
    group.addoption(
        "--opbench-max-time", type=float, default=None, dest="opbench_max_time_s",
        help="Budget per measurement for the timed rounds, seconds (default 2).")
    group.addoption(
        "--opbench-no-backward", action="store_true", default=False, dest="opbench_no_backward",
        help="Skip forward+backward timing of cases marked backward.")
    # Limits on what one case may ask of the machine (opbench/limits.py), applied when case
    # files are collected.
    group.addoption(
        "--opbench-max-instances", type=int, default=None, dest="opbench_max_instances",
        help="Most instances one case's sweep may make (default 100,000).")
    group.addoption(
        "--opbench-input-budget", default=None, dest="opbench_input_budget", metavar="SIZE",
        help="Most memory one instance's inputs may take, e.g. 8GiB (default: a quarter of "
             "the machine's memory).")
    group.addoption(
        "--opbench-json", default=None, dest="opbench_json", metavar="PATH",
        help="Also write the opbench results record (what `opbench run --json` writes; "
             "`opbench report` reads it).")


def plugin_options(config: pytest.Config) -> PluginOptions:
    """Read and validate the options; a bad value is a usage error, before anything runs."""
    benchmark = bool(config.getoption("opbench_benchmark"))
    mode = config.getoption("opbench_mode")
    settings_kw: dict[str, Any] = {}
    for option, key in (("opbench_rounds", "rounds"),
                        ("opbench_min_sample_time_s", "min_sample_time_s"),
                        ("opbench_max_time_s", "max_time_s")):
        value = config.getoption(option)
        if value is not None:
            settings_kw[key] = value
    threshold = config.getoption("opbench_threshold")
    threads = config.getoption("opbench_threads")
    try:
        if threshold is not None and not threshold > 0:
            raise ValueError(f"--opbench-threshold must be a positive ratio, not {threshold}")
        if threads is not None and threads < 1:
            raise ValueError(f"--opbench-threads must be a positive integer, not {threads}")
        from ..measure import MeasureSettings

        run_config = RunConfig(
            reference=config.getoption("opbench_reference"),
            target=config.getoption("opbench_target"),
            device=config.getoption("opbench_device"),
            threads=threads or default_threads(),
            modes=(SERIAL, ASYNC) if mode == BOTH_MODES else (mode,),
            threshold=DEFAULT_THRESHOLD if threshold is None else threshold,
            backward=not config.getoption("opbench_no_backward"),
            timing=benchmark,
            settings=MeasureSettings(**settings_kw))
    except ValueError as exc:
        raise pytest.UsageError(f"opbench: {exc}") from None
    return PluginOptions(benchmark=benchmark, run_config=run_config,
                         json_path=config.getoption("opbench_json"))


def xdist_active(config: pytest.Config) -> bool:
    """True in a pytest-xdist controller started with -n/--dist, and in its workers."""
    if os.environ.get(XDIST_WORKER_ENV):
        return True
    # Read as attributes: the options exist only when pytest-xdist is installed.
    dist = getattr(config.option, "dist", "no")
    processes = getattr(config.option, "numprocesses", None)
    return dist not in (None, "no") or bool(processes)


XDIST_REFUSAL = (
    "--benchmark cannot run under pytest-xdist (-n/--dist): workers sharing the machine's "
    "cores would time each other's work and corrupt every ratio. Run the timing without -n "
    "(correctness runs, without --benchmark, can use -n).")

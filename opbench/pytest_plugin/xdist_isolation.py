"""`pytest --benchmark -n N`: timing with pytest-xdist, allowed only when every worker is
isolated (opbench/placement.py has the rule and why), and the controller's one record.

  controller  checks that a placement exists for N workers (else a usage error saying why),
              keeps a case's instances on one worker (case_scheduling.py), collects each worker's results record when the
              worker finishes (its `workeroutput`), joins them with opbench/merge.py into
              the one --opbench-json file, and feeds pytest-benchmark (which disables itself
              under xdist) the entries for its one --benchmark-json / --benchmark-save file.
  worker      computes its own placement from the same facts (its id and the worker count
              xdist puts in its environment, the CPUs and devices it inherited), pins itself
              to its cores and its device before any framework is imported, and measures
              with threads = its cores.

Correctness runs (no --benchmark) under -n are not placed: they time nothing.
"""
from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

import pytest

from opbench.config import Placement, RunConfig
from opbench.pytest_plugin.options import XDIST_WORKER_ENV
from opbench.runner.placement import (
    PlacementError,
    machine_cpus,
    plan,
    smt_siblings,
    visible_devices,
    worker_index,
)

WORKER_COUNT_ENV = "PYTEST_XDIST_WORKER_COUNT"
# workeroutput key of a worker's results record
WORKER_RECORD_KEY = "opbench_record"
# Modes that send each test to one worker; the controller schedules them by case
# (case_scheduling.py). `each` would run every case on every worker, and `worksteal` moves
# pending tests between workers, splitting a case.
CASE_SCHEDULED_DIST = ("load", "loadgroup", "loadfile", "loadscope")
REFUSAL_PREFIX = "--benchmark under pytest-xdist: "


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput") or bool(os.environ.get(XDIST_WORKER_ENV))


def machine_plan(workers: int, device: str) -> list[Placement]:
    """The placement of `workers` workers on this machine (PlacementError when none)."""
    kind = device.split(":", 1)[0]
    return plan(workers, device, machine_cpus(), smt_siblings, visible_devices(kind))


def _worker_count(config: pytest.Config) -> int:
    if is_worker(config):
        count = os.environ.get(WORKER_COUNT_ENV)
        if not (count or "").isdigit():
            raise PlacementError(f"this pytest-xdist worker does not know how many workers "
                                 f"there are (${WORKER_COUNT_ENV} is {count!r}), so it cannot "
                                 f"tell which cores are its own")
        return int(count)
    count = getattr(config.option, "numprocesses", None)
    if not isinstance(count, int) or count < 1:
        raise PlacementError("give the number of workers with -n N (cores are shared out "
                             "between a known number of workers)")
    return count


def _check_controller(config: pytest.Config) -> None:
    specs = getattr(config.option, "tx", None) or []
    remote = [s for s in specs if not str(s).startswith("popen")]
    if remote:
        raise PlacementError(f"--tx {remote[0]} runs workers on other machines, whose cores "
                             f"this machine cannot share out; use -n N (local workers), or "
                             f"`opbench run --shard K/N` per machine and `opbench merge`")
    dist = getattr(config.option, "dist", "no")
    if dist not in CASE_SCHEDULED_DIST:
        raise PlacementError(f"--dist {dist} does not keep a case on one worker; leave "
                             f"--dist out (opbench schedules the workers by case)")


def placed_config(config: pytest.Config, run_config: RunConfig) -> tuple[RunConfig,
                                                                          Placement | None]:
    """Under xdist with --benchmark: the run config every worker measures with (device,
    threads = its cores) and, in a worker, its own Placement, applied to this process.
    Raises pytest.UsageError with the reason when the workers cannot be isolated."""
    try:
        workers = _worker_count(config)
        if not is_worker(config):
            _check_controller(config)
        placements = machine_plan(workers, run_config.device)
        given_threads = config.getoption("opbench_threads")
        cores = placements[0].threads
        if given_threads is not None and cores is not None and given_threads > cores:
            raise PlacementError(f"--opbench-threads {given_threads} but each of the "
                                 f"{workers} workers owns {cores} core(s): its threads "
                                 f"would share them")
        threads = given_threads or cores or run_config.threads
        shared = replace(run_config, device=placements[0].device, threads=threads)
        if not is_worker(config):
            return shared, None
        mine = placements[worker_index(os.environ.get(XDIST_WORKER_ENV, ""))]
    except PlacementError as exc:
        raise pytest.UsageError(REFUSAL_PREFIX + str(exc)) from None
    apply_placement(mine)
    return replace(shared, worker=mine), mine


def apply_placement(placement: Placement) -> None:
    """Pin this process (and the worker processes it will start, which inherit both) to
    its cores and its device. Before the first framework import: the frameworks read the
    visible-devices variables once, at start-up."""
    if placement.cpus:
        os.sched_setaffinity(0, placement.cpus)
        if set(os.sched_getaffinity(0)) != set(placement.cpus):   # never time unpinned
            raise pytest.UsageError(f"{REFUSAL_PREFIX}worker {placement.worker} could not be "
                                    f"pinned to cpus {list(placement.cpus)}")
    os.environ.update(placement.env)


def enable_controller_benchmarks(pluginmanager: Any) -> Any | None:
    """pytest-benchmark's session in the controller, switched back on: it turned itself off
    because xdist is active (its own timer would be unreliable), but the entries it gets
    here are opbench's, measured by isolated workers. Returns it (None when absent)."""
    session = pluginmanager.get_plugin("pytest-benchmark")
    if session is None or not getattr(session, "xdist_warning", False):
        return None
    session.disabled = False
    session.xdist_warning = False
    return session


def silence_worker_benchmark_warning(pluginmanager: Any) -> None:
    """In a worker, pytest-benchmark's "benchmarks are disabled under xdist" would be false:
    the controller writes them."""
    session = pluginmanager.get_plugin("pytest-benchmark")
    if session is not None:
        session.xdist_warning = False

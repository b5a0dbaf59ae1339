"""`pytest --benchmark -n N` end to end on fake frameworks: real pytest-xdist workers
(subprocesses), each pinned to its own core, a case's instances on one worker, and the
controller writing one opbench record (the workers' records merged) and one
pytest-benchmark file. Refusals are in test_pytest_plugin_fake.py and test_placement.py."""
from __future__ import annotations

import json
import os

import pytest
from test_pytest_plugin_fake import QUICK, project, run  # noqa: F401 - project: a fixture

from opbench.results.io import validate_record

pytest_plugins = ["pytester"]
pytest.importorskip("xdist")

needs_two_cores = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2,
                                     reason="two workers need two cores of their own")


@needs_two_cores
def test_two_isolated_workers_write_one_record_and_one_benchmark_file(project):
    result = run(project, "--benchmark", *QUICK, "-n", "2", "--opbench-json=run.json",
                 "--benchmark-json=bench.json", "-v")
    result.assert_outcomes(passed=3)
    record = json.loads((project.path / "run.json").read_text())
    validate_record(record)
    assert sorted(i["id"] for i in record["instances"]) == ["add[n=16]", "add[n=4]", "neg"]
    assert record["complete"] and record["frameworks"]["torch"]["version"] == "0.0+fake"
    # threads = the one core each worker owns, the same for both (one configuration)
    assert record["config"]["threads"] == 1 and "worker" not in record["config"]
    parts = record["merged_from"]
    cpus = [tuple(p["worker"]["cpus"]) for p in parts]
    assert len(set(cpus)) == len(cpus) and all(len(c) == 1 for c in cpus)   # disjoint
    # add's two sizes ran on one worker (xdist_group per case, --dist loadgroup)
    workers_of = {}
    for line in result.stdout.lines:
        if "PASSED" in line and line.startswith("[gw"):
            workers_of.setdefault(line.split("::")[-1].split("@")[0].split("[")[0].strip(),
                                  set()).add(line[1:4])
    assert set(workers_of) == {"add", "neg"} and len(workers_of["add"]) == 1
    assert sorted(p["instances"] for p in parts) in ([1, 2], [3])
    # each worker's own set-up and measuring time, which the report shows per worker
    assert all(p["setup_s"] > 0 and p["measuring_s"] > 0 for p in parts if p["instances"])
    result.stdout.fnmatch_lines(["*pytest-xdist worker gw* (cores *): * instances measured "
                                 "in * s after a * s set-up*"])
    bench = json.loads((project.path / "bench.json").read_text())
    names = sorted(b["name"] for b in bench["benchmarks"])
    assert len(names) == 6 and names[0] == "add[n=16]::mindspore:serial"
    result.stdout.fnmatch_lines(["*= opbench =*", "3 instances: 3 PASS"])
    assert "automatically disabled" not in result.stdout.str() + result.stderr.str()


def test_more_workers_than_cores_is_refused_before_any_worker_starts(project):
    cores = len(os.sched_getaffinity(0))
    result = run(project, "--benchmark", "-n", str(cores + 1))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{cores + 1} workers but {cores} CPU cores: workers would "
                                 f"share cores*"])


def test_a_dist_mode_that_splits_cases_is_refused(project):
    result = run(project, "--benchmark", "-n", "1", "--dist", "worksteal")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--dist worksteal does not keep a case on one worker*"])


def test_correctness_runs_under_xdist_are_not_placed(project):
    cores = len(os.sched_getaffinity(0))
    result = run(project, "-n", str(cores + 1), "--opbench-json=run.json")
    result.assert_outcomes(passed=3)
    record = json.loads((project.path / "run.json").read_text())
    validate_record(record)
    assert len(record["instances"]) == 3 and "worker" not in record["config"]

"""`pytest --benchmark -n 2` on the real frameworks in a fresh process: two pytest-xdist
workers, each pinned to a core of its own, one merged results record and one
pytest-benchmark file. Small shape instances: a wiring check, never a speed."""
from __future__ import annotations

import json
import os

import pytest
from test_pytest_plugin import QUICK_TIMING, REPO, env, plugin_args  # noqa: F401 - env: fixture

from opbench.results.io import validate_record

pytestmark = pytest.mark.integration
pytest_plugins = ["pytester"]
pytest.importorskip("xdist")

SHAPE_CASES = REPO / "cases" / "shape.yaml"
SMALL = "8x16 and float32"


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_two_pinned_workers_time_the_shipped_cases(pytester: pytest.Pytester, env):
    result = pytester.runpytest_subprocess(
        *plugin_args(), str(SHAPE_CASES), "--benchmark", "-n", "2", "-k", SMALL,
        *QUICK_TIMING, "--opbench-processes", "1", "--opbench-json=run.json",
        "--benchmark-json=bench.json", "-p", "no:cacheprovider", timeout=600)
    record = json.loads((pytester.path / "run.json").read_text())
    validate_record(record)
    ids = [i["id"] for i in record["instances"]]
    assert len(ids) == len(set(ids)) >= 2
    assert all(i["verdict"] != "ERROR" for i in record["instances"]), record["instances"]
    assert record["frameworks"]["mindspore"]["threads"] == 1
    workers = [p["worker"] for p in record["merged_from"]]
    cpus = [c for w in workers for c in w["cpus"]]
    assert len(cpus) == len(set(cpus)) == len(workers)      # one core each, disjoint
    bench = json.loads((pytester.path / "bench.json").read_text())
    assert len(bench["benchmarks"]) == 2 * len(ids)
    result.stdout.fnmatch_lines(["*= opbench =*", f"{len(ids)} instances: *"])

"""`pytest cases/` and `pytest --benchmark cases/` on the real frameworks and the shipped
cases, each in a fresh process (MindSpore takes its thread count once per process), and the
stock `pytest-benchmark compare` command reading what a run saved. Only small reshape
instances: these check the wiring, never a speed (the machine is shared)."""
from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]
SHAPE_CASES = REPO / "cases" / "shape.yaml"
PLUGIN_MODULE = "opbench.pytest_plugin.plugin"
SMALL_RESHAPE = "reshape and 8x16 and float32 and not heads"
# Enough rounds for an interval, short samples and budget: a wiring check, not a benchmark.
QUICK_TIMING = ["--opbench-rounds", "6", "--opbench-min-sample-time", "0.002",
                "--opbench-max-time", "5"]


def plugin_args() -> list[str]:
    autoload = not os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    installed = any(ep.value == PLUGIN_MODULE
                    for ep in importlib.metadata.entry_points(group="pytest11"))
    return [] if (installed and autoload) else ["-p", PLUGIN_MODULE]


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("GLOG_v", "3")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    return dict(os.environ)


def test_shipped_cases_pass_the_correctness_run(pytester: pytest.Pytester, env):
    result = pytester.runpytest_subprocess(*plugin_args(), str(SHAPE_CASES), "-k", "reshape",
                                           "-p", "no:cacheprovider", timeout=600)
    # as many items as the library has reshape instances (the library grows; count it)
    from opbench.cases.case_files import expand, load_cases, select

    expected = len(select([i for c in load_cases([SHAPE_CASES]) for i in expand(c)],
                          keyword="reshape"))
    assert expected > 0
    result.assert_outcomes(passed=expected)
    result.stdout.fnmatch_lines(["*= opbench =*", f"{expected} instances: {expected} PASS"])


def test_benchmark_run_saves_what_pytest_benchmark_compare_reads(pytester: pytest.Pytester, env):
    storage = pytester.path / "bench"
    result = pytester.runpytest_subprocess(
        *plugin_args(), str(SHAPE_CASES), "--benchmark", "-k", SMALL_RESHAPE, *QUICK_TIMING,
        f"--benchmark-storage={storage}", "--benchmark-save=wiring", "-p", "no:cacheprovider",
        timeout=600)
    # SLOW fails the item, PASS and INCONCLUSIVE do not: any of them is a working run
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()
    result.stdout.fnmatch_lines([
        "instance*mode*torch median*mindspore median*ratio [[]95% CI[]]*thr*verdict",
        # two times in whatever unit their size takes (a loaded CI runner once measured
        # mindspore at 1.03 ms here, so no unit is assumed), then the interval and threshold
        "reshape[[]shape=8x16,dtype=float32[]]*serial* *s * *s *[[]*, *[]]*0.8*",
        "1 instance: 1 *"])
    saved = list(storage.rglob("0001_wiring.json"))
    assert len(saved) == 1

    listing = subprocess.run([sys.executable, "-m", "pytest_benchmark", "--storage",
                              str(storage), "compare", "--group-by=name"],
                             capture_output=True, text=True, timeout=120, env=env)
    assert listing.returncode == 0, listing.stderr
    assert "reshape[shape=8x16,dtype=float32]::torch:serial" in listing.stdout
    assert "reshape[shape=8x16,dtype=float32]::mindspore:serial" in listing.stdout

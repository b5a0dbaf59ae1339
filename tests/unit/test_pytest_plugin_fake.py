"""The pytest plugin end to end with pytester, on fake frameworks and a fake clock.

Every run is in-process and imports no real framework: `plugin_fakes` supplies the Session
through the plugin's `pytest_opbench_make_session` hook, charging a fixed fake cost per
call, so SLOW, PASS and INCONCLUSIVE are deterministic. The real frameworks are exercised
by tests/integration/test_pytest_plugin.py.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
from pathlib import Path

import plugin_fakes
import pytest

from opbench.results.io import validate_record

pytest_plugins = ["pytester"]

HELPERS_DIR = Path(plugin_fakes.__file__).parent
PLUGIN_MODULE = "opbench.pytest_plugin.plugin"
_real_find_spec = importlib.util.find_spec

CASES = """\
cases:
  - name: add
    op: add
    tags: [elementwise, binary]
    params:
      n: [4, 16]
    inputs:
      x: {shape: [$n]}
      y: {shape: [$n]}
    torch: {api: torch.add, args: [$x, $y]}
    mindspore: {api: mindspore.mint.add, args: [$x, $y]}

  - name: neg
    op: negative
    tags: [unary, skip]
    inputs:
      x: {shape: [8]}
    torch: {api: torch.negative, args: [$x]}
    mindspore: {api: mindspore.mint.negative, args: [$x]}
"""

# A case whose two sides compute different things: a real mismatch, not a fake one.
MISMATCH_CASE = """\
cases:
  - name: plus_or_minus
    inputs:
      x: {shape: [2, 3]}
      y: {shape: [2, 3]}
    torch: {api: torch.add, args: [$x, $y]}
    mindspore: {api: mindspore.mint.subtract, args: [$x, $y]}
"""

CONFTEST = f"""\
import sys
from pathlib import Path

sys.path.insert(0, {str(HELPERS_DIR)!r})
import plugin_fakes


def pytest_opbench_make_session(config, run_config):
    return plugin_fakes.session_from_costs_file(Path(__file__).parent, run_config)
"""

# Fake seconds per call. The fake clock makes ratios exact: 1e-4 / 5e-4 = 0.2.
FAST_S = 1e-4
SLOW_S = 5e-4
# Log-scale spread of each fake call's cost: per-round ratios scatter by tens of percent.
NOISE_SD = 0.5
# A target exactly at the default threshold (ratio 1e-4 / 1.25e-4 = 0.8): with noise, the
# interval must reach both sides of it.
AT_THRESHOLD_S = 1.25e-4
# Short fake samples keep the number of Python calls per measurement small.
QUICK = ["--opbench-min-sample-time", "0.001"]


def plugin_args() -> list[str]:
    """An installed opbench loads the plugin through its pytest11 entry point; naming the
    module as well would register it twice."""
    autoload = not os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    installed = any(ep.value == PLUGIN_MODULE
                    for ep in importlib.metadata.entry_points(group="pytest11"))
    return [] if (installed and autoload) else ["-p", PLUGIN_MODULE]


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", cases=CASES)
    set_costs(pytester, FAST_S, FAST_S)
    return pytester


def set_costs(pytester: pytest.Pytester, torch_s: float, mindspore_s: float,
              noise_sd: float = 0.0) -> None:
    (pytester.path / plugin_fakes.COSTS_FILE).write_text(json.dumps(
        {"costs_s": {"torch": torch_s, "mindspore": mindspore_s}, "noise_sd": noise_sd}))


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(*plugin_args(), "-p", "no:cacheprovider", *args)


# -- collection ----------------------------------------------------------------------------

def test_each_instance_is_an_item_with_the_instance_id(project):
    project.mkdir(".github")
    (project.path / ".github" / "ci.yaml").write_text("jobs:\n  test: {runs-on: x}\n")
    (project.path / "settings.yml").write_text("not: [a case file\n")
    result = run(project, "--collect-only", "-q")
    result.stdout.fnmatch_lines(["cases.yaml::add[[]n=4[]]", "cases.yaml::add[[]n=16[]]",
                                 "cases.yaml::neg", "3 tests collected*"])
    assert result.ret == pytest.ExitCode.OK   # the unrelated YAML was not touched


def test_keyword_selects_by_id_and_op(project):
    result = run(project, "-k", "16 or negative")
    result.assert_outcomes(passed=2, deselected=1)


def test_case_tags_are_registered_markers(project):
    result = run(project, "--strict-markers", "-m", "binary", "-v")
    result.assert_outcomes(passed=2, deselected=1)
    # a tag named like one of pytest's own markers stays a keyword: `neg` still runs
    result = run(project, "--strict-markers", "-k", "skip")
    result.assert_outcomes(passed=1, deselected=2)


def test_malformed_yaml_is_one_collection_error_and_the_rest_runs(project):
    project.makefile(".yaml", broken="cases:\n  - name: x\n    inputs: {x: [1, 2\n")
    result = run(project)
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(["*ERROR collecting broken.yaml*",
                                 "broken.yaml:*: invalid YAML: *"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "Traceback" not in result.stdout.str()


def test_an_invalid_case_names_file_line_and_key(project):
    project.makefile(".yaml", typo=CASES.replace("name: add", "name: add2").replace(
        "name: neg", "name: neg2").replace("shape: [8]", "shpe: [8]"))
    result = run(project)
    result.stdout.fnmatch_lines(["typo.yaml:*case 'neg2': *unknown key*shpe*"])
    result.assert_outcomes(passed=3, errors=1)


# -- correctness ---------------------------------------------------------------------------

def test_correct_cases_pass_and_the_summary_counts_them(project):
    result = run(project)
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*= opbench =*", "correctness: *", "3 instances: 3 PASS"])


def test_a_mismatch_fails_with_the_errors_and_no_framework_internals(project):
    project.makefile(".yaml", wrong=MISMATCH_CASE)
    result = run(project, "-k", "plus_or_minus")
    result.assert_outcomes(failed=1, deselected=3)
    result.stdout.fnmatch_lines([
        "MISMATCH: torch and mindspore outputs differ",
        "  instance  plus_or_minus  (wrong.yaml:2)",
        "  inputs    x:2x3 float32, y:2x3 float32",
        "  outputs differ: max abs err *, max rel err * (rtol 0.0001, atol 1e-05)",
        "    * of 6 values differ; worst at *",
    ])
    out = result.stdout.str()
    assert "Traceback" not in out and "runner.py" not in out
    result.stdout.fnmatch_lines(["MISMATCH plus_or_minus: * of 6 values differ*",
                                 "1 instance: 1 MISMATCH"])


# -- timing --------------------------------------------------------------------------------

def test_a_slow_target_fails_with_medians_ratio_interval_and_threshold(project):
    set_costs(project, FAST_S, SLOW_S)
    result = run(project, "--benchmark", *QUICK, "-k", "neg")
    result.assert_outcomes(failed=1, deselected=2)
    result.stdout.fnmatch_lines([
        "SLOW: mindspore is slower than torch beyond the threshold",
        "  instance  neg  (cases.yaml:13)",
        "  [[]serial[]] torch 100 us, mindspore 500 us per call (medians of 15 rounds x * calls)",
        "    ratio 0.2 [[]0.2, 0.2[]] (95% interval): whole interval below threshold 0.8 -> SLOW",
    ])
    assert "Traceback" not in result.stdout.str()
    # the summary: a ratio row and the counts
    result.stdout.fnmatch_lines(["instance*mode*torch median*mindspore median*ratio*thr*verdict",
                                 "neg*serial*100 us*500 us*0.2 [[]0.2, 0.2[]]*0.8*SLOW",
                                 "1 instance: 1 SLOW"])


def test_threshold_mode_and_summary_order(project):
    set_costs(project, FAST_S, SLOW_S)
    result = run(project, "--benchmark", *QUICK, "--opbench-threshold", "0.1",
                 "--opbench-mode", "both")
    result.assert_outcomes(passed=3)
    out = result.stdout.str()
    assert out.count("0.2 [0.2, 0.2]") == 6          # 3 instances x (serial, async)
    assert "3 instances: 3 PASS" in out


def test_worst_ratio_comes_first(project):
    project.makefile(".yaml", more=CASES.replace("name: add", "name: add2").replace(
        "name: neg", "name: neg2").replace("threshold", "x"))
    set_costs(project, FAST_S, SLOW_S)
    result = run(project, "--benchmark", *QUICK, "-k", "neg",
                 "--opbench-threshold", "0.1")
    lines = [ln for ln in result.stdout.lines if " serial " in ln]
    assert [ln.split()[0] for ln in lines] == ["neg", "neg2"]   # equal ratios: stable order


def test_inconclusive_is_reported_not_failed(project):
    set_costs(project, FAST_S, AT_THRESHOLD_S, noise_sd=NOISE_SD)
    result = run(project, "--benchmark", *QUICK, "-k", "neg", "-v")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*cases.yaml::neg INCONCLUSIVE*",
                                 "neg*serial*INCONCLUSIVE",
                                 "INCONCLUSIVE neg [[]serial[]]: ratio * [[]*, *[]] (95% interval): "
                                 "interval straddles threshold 0.8 -> INCONCLUSIVE",
                                 "1 instance: 1 INCONCLUSIVE",
                                 "*2 deselected, 1 inconclusive*"])


def test_too_few_rounds_is_inconclusive(project):
    set_costs(project, FAST_S, SLOW_S)
    result = run(project, "--benchmark", *QUICK, "--opbench-rounds", "3", "-k", "neg")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["INCONCLUSIVE neg [[]serial[]]: * too few rounds (3) *",
                                 "*2 deselected, 1 inconclusive*"])


@pytest.mark.filterwarnings("ignore:Not saving anything")
def test_a_correctness_run_does_not_time(project):
    set_costs(project, FAST_S, SLOW_S)
    result = run(project, "--benchmark-json=out.json")
    result.assert_outcomes(passed=3)
    assert not (project.path / "out.json").exists()   # nothing was timed, nothing saved


# -- pytest-benchmark's machinery -----------------------------------------------------------

def test_each_framework_is_a_benchmark_entry_with_the_comparison_in_extra_info(project):
    set_costs(project, FAST_S, SLOW_S)
    result = run(project, "--benchmark", *QUICK, "-k", "add", "--benchmark-json=out.json",
                 "--opbench-threshold", "0.1")
    result.assert_outcomes(passed=2, deselected=1)
    saved = json.loads((project.path / "out.json").read_text())
    by_name = {b["name"]: b for b in saved["benchmarks"]}
    assert sorted(by_name) == ["add[n=16]::mindspore:serial", "add[n=16]::torch:serial",
                               "add[n=4]::mindspore:serial", "add[n=4]::torch:serial"]
    entry = by_name["add[n=4]::mindspore:serial"]
    assert entry["fullname"] == "cases.yaml::add[n=4]::mindspore:serial"
    assert entry["group"] == "add[n=4] (serial)"
    assert entry["stats"]["median"] == pytest.approx(SLOW_S, rel=1e-3)
    assert entry["stats"]["rounds"] == 15 == len(entry["stats"]["data"])
    assert entry["stats"]["iterations"] == entry["options"]["loops"] > 1
    info = entry["extra_info"]
    assert info["ratio"] == pytest.approx(0.2, rel=1e-3)
    assert info["ci_low"] <= info["ratio"] <= info["ci_high"]
    assert (info["threshold"], info["verdict"], info["framework"], info["role"]) == (
        0.1, "PASS", "mindspore", "target")
    assert info["params"] == {"n": 4}
    torch_entry = by_name["add[n=4]::torch:serial"]
    assert torch_entry["stats"]["median"] == pytest.approx(FAST_S, rel=1e-3)
    assert torch_entry["extra_info"]["ratio"] == info["ratio"]


def test_compare_fail_trips_on_a_saved_baseline(project, capsys):
    storage = f"--benchmark-storage={project.path / 'bench'}"
    baseline = run(project, "--benchmark", *QUICK, storage, "--benchmark-save=base")
    baseline.assert_outcomes(passed=3)
    saved = list((project.path / "bench").rglob("0001_base.json"))
    assert len(saved) == 1

    same = run(project, "--benchmark", *QUICK, storage, "--benchmark-compare=0001",
               "--benchmark-compare-fail=median:10%")
    assert same.ret == pytest.ExitCode.OK

    set_costs(project, FAST_S, 2 * FAST_S)         # the target got twice as slow
    slower = run(project, "--benchmark", *QUICK, storage, "--benchmark-compare=0001",
                 "--benchmark-compare-fail=median:10%", "--opbench-threshold", "0.1")
    # pytest-benchmark's own way to fail the run: PerformanceRegression, after its report
    assert slower.ret != pytest.ExitCode.OK
    # its logger writes the details to the process's stderr, past pytester's capture
    output = slower.stdout.str() + slower.stderr.str() + capsys.readouterr().err
    assert "Performance has regressed" in output
    assert "add[n=4]::mindspore:serial (0001_base) - Field 'median' has failed" in output
    assert "torch:serial - Field" not in output          # the reference did not change


def test_pytest_benchmark_compare_groups_each_instance_and_its_csv_shows_the_ratio(project):
    """Issue #16 point 5: the stock `pytest-benchmark compare` puts each instance's two
    sides in one table of their own, and its CSV export carries the ratio and verdict."""
    import subprocess
    import sys

    set_costs(project, FAST_S, SLOW_S)
    storage = project.path / "bench"
    run(project, "--benchmark", *QUICK, "-k", "add", f"--benchmark-storage={storage}",
        "--benchmark-save=base", "--opbench-threshold", "0.1").assert_outcomes(passed=2)
    shown = subprocess.run(
        [sys.executable, "-c", "from pytest_benchmark.cli import main; main()",
         "--storage", str(storage), "compare", f"--csv={project.path / 'cmp'}"],
        cwd=project.path, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    tables = shown.stdout.split("benchmark '")[1:]
    assert [t.split("'")[0] for t in tables] == ["add[n=16] (serial)", "add[n=4] (serial)"]
    for table in tables:
        rows = [ln.split()[0] for ln in table.splitlines() if "::" in ln]
        assert sorted(r.split("::")[1].split(" ")[0] for r in rows) == [
            "mindspore:serial", "torch:serial"]
    (csv_file,) = project.path.glob("cmp*.csv")
    header, *rows = csv_file.read_text().splitlines()
    assert "param:ratio" in header and "param:verdict" in header
    assert all(",0.2," in row or ",0.2" in row for row in rows), rows


def test_benchmark_histogram_without_pygal_is_a_usage_error(project, monkeypatch):
    monkeypatch.setattr("importlib.util.find_spec",
                        lambda name, *a: None if name == "pygal" else _real_find_spec(name, *a))
    result = run(project, "--benchmark", *QUICK, "--benchmark-histogram=h")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert "pip install 'opbench[histogram]'" in result.stderr.str()


def test_benchmark_histogram_draws_opbench_entries(project):
    # Looked up, not imported, and drawn in a subprocess: importing pygal into this
    # process left importlib.metadata unable to find pluggy for every in-process pytest
    # run after it (seen in CI, where pygal is installed).
    for name in ("pygal", "pygaljs"):
        if _real_find_spec(name) is None:
            pytest.skip(f"could not find {name!r}")
    result = project.runpytest_subprocess(
        *plugin_args(), "-p", "no:cacheprovider", "--benchmark", *QUICK, "-k", "add",
        "--opbench-threshold", "0.1", f"--benchmark-histogram={project.path / 'hist'}")
    assert "INTERNALERROR" not in result.stdout.str()
    result.assert_outcomes(passed=2)
    assert sorted(p.name for p in project.path.glob("hist*.svg"))


def test_case_tags_appear_in_pytest_markers(project):
    result = run(project, "--markers", "cases.yaml")
    assert result.ret == pytest.ExitCode.OK
    text = result.stdout.str()
    assert "@pytest.mark.elementwise: opbench case tag" in text
    assert "@pytest.mark.unary: opbench case tag" in text
    assert "@pytest.mark.skip: opbench case tag" not in text      # pytest's own


def test_case_items_are_benchmarks_for_benchmark_only_and_skip(project):
    project.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = run(project, "--benchmark", *QUICK, "--benchmark-only", "--opbench-threshold",
                 "0.1")
    result.assert_outcomes(passed=3, skipped=1)          # the plain test is skipped
    result = run(project, "--benchmark", "--benchmark-skip")
    result.assert_outcomes(passed=1, skipped=3)


def test_timing_works_without_pytest_benchmark(project):
    result = run(project, "-p", "no:benchmark", "--benchmark", *QUICK,
                 "--opbench-threshold", "0.1")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["3 instances: 3 PASS"])


def test_opbench_json_is_a_results_record(project):
    set_costs(project, FAST_S, SLOW_S)
    result = run(project, "--benchmark", *QUICK, "--opbench-json=run.json")
    result.assert_outcomes(failed=3)
    record = json.loads((project.path / "run.json").read_text())
    validate_record(record)
    assert [i["id"] for i in record["instances"]] == ["add[n=4]", "add[n=16]", "neg"]
    assert record["complete"] and record["frameworks"]["mindspore"]["version"] == "0.0+fake"


def test_timing_is_refused_under_xdist_when_workers_would_share_cores(project, monkeypatch):
    cores = len(os.sched_getaffinity(0))
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", str(cores + 1))
    result = run(project, "--benchmark")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--benchmark under pytest-xdist: {cores + 1} workers but "
                                 f"{cores} CPU cores: workers would share cores*"])
    assert run(project).ret == pytest.ExitCode.OK   # correctness may run in parallel


def test_bad_option_values_are_usage_errors(project):
    result = run(project, "--benchmark", "--opbench-threshold", "0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--opbench-threshold must be a positive finite number*"])
    result = run(project, "--opbench-target", "torch")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*reference and target must be different*"])


def test_a_framework_that_cannot_start_fails_each_item_with_the_reason(project):
    project.makeconftest("""
def pytest_opbench_make_session(config, run_config):
    from opbench.runner.session import Session
    from opbench.frameworks import FrameworkUnavailable

    class Broken(Session):
        def open(self):
            raise FrameworkUnavailable("mindspore is not installed: pip install mindspore")
    return Broken(run_config)
""")
    result = run(project)
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines([
        "  error     cannot set up torch and mindspore on cpu: mindspore is not installed: "
        "pip install mindspore"])


def test_a_crashed_worker_process_fails_its_item_naming_the_signal_in_junit(project):
    """Measured in two worker processes (fake: threads serving the real worker loop); worker
    1 dies, as a segfaulting operator would, on the first instance it runs."""
    project.makeconftest(f"""
import sys
from dataclasses import replace

sys.path.insert(0, {str(HELPERS_DIR)!r})
from runner_fakes import fake_session_class
from worker_fakes import Spawner


def pytest_opbench_make_session(config, run_config):
    from opbench.runner.workers import WorkerPool

    spawn = Spawner(fake_session_class(), die_on_run_in={{1}}, exit_code=-11)
    return WorkerPool(replace(run_config, processes=2), spawn=spawn)
""")
    # runner_fakes' frameworks: plain torch.add / mindspore.add
    project.makefile(".yaml", cases=CASES.replace("mindspore.mint.", "mindspore.")
                     .replace("negative", "neg"))
    result = run(project, "--junitxml=junit.xml")
    result.assert_outcomes(passed=2, failed=1)
    crash = "worker process 1 was killed by SIGSEGV (signal 11) while running add[n=4]"
    result.stdout.fnmatch_lines([f"  error     {crash}"])
    import xml.etree.ElementTree as ET

    failures = [c.find("failure") for c in ET.parse(project.path / "junit.xml").iter("testcase")
                if c.find("failure") is not None]
    assert len(failures) == 1
    assert f"error     {crash}" in failures[0].get("message")

"""The `opbench` command on the real frameworks, each run in its own process (MindSpore's
device and thread count are process-global, and a user runs it that way).

Verdicts are not asserted: on this CPU MindSpore's per-call dispatch costs 10x-1000x
torch's, so SLOW (exit 1) is an honest outcome, and INCONCLUSIVE (3) a possible one on a
shared machine.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from opbench.results.records import load_results

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 300
FAST = ["--rounds", "6", "--min-sample-time", "0.002", "--max-time", "1", "--threads", "2"]

RESHAPE_CASE = """
cases:
  - name: reshape
    params:
      shape: [[8, 16]]
    inputs:
      x: {shape: $shape}
    torch: {api: torch.reshape, args: [$x, [-1]]}
    mindspore: {api: mindspore.mint.reshape, args: [$x, [-1]]}
"""


def opbench(*args: str, cwd: Path, cases: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "GLOG_v": "3", "PYTHONPATH": str(REPO)}
    if cases is not None:       # these cases instead of the shipped library
        env["OPBENCH_CASES"] = str(cases)
    return subprocess.run([sys.executable, "-m", "opbench.cli.main", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=RUN_TIMEOUT_S)


@pytest.fixture
def reshape_file(tmp_path):
    path = tmp_path / "reshape.yaml"
    path.write_text(RESHAPE_CASE)
    return path


def test_compare_times_the_case_and_saves_a_valid_record(reshape_file, tmp_path):
    out = tmp_path / "out.json"
    result = opbench("compare", "reshape", *FAST, "--json", str(out), cwd=tmp_path,
                     cases=reshape_file)
    assert result.returncode in (0, 1, 3), result.stderr
    assert "Traceback" not in result.stderr
    record = load_results(out)   # validates against the results schema
    (inst,) = record.instances
    assert inst.id == "reshape[shape=8x16]"
    assert inst.check.ok is True
    assert inst.verdict in ("PASS", "SLOW", "INCONCLUSIVE")
    assert record.complete is True
    expected_code = {"PASS": 0, "SLOW": 1, "INCONCLUSIVE": 3}[inst.verdict]
    assert result.returncode == expected_code
    # the table's short id (the JSON keeps the full one); one mode: it is in the caption
    row = next(line for line in result.stdout.splitlines() if line.startswith("reshape[8x16]"))
    assert inst.verdict in row and "mode serial" in result.stdout
    assert "1 instances:" in result.stdout


def test_check_passes_on_agreeing_frameworks(reshape_file, tmp_path):
    out = tmp_path / "check.json"
    result = opbench("check", str(reshape_file), "--threads", "2", "--json", str(out),
                     cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    (inst,) = load_results(out).instances
    assert inst.verdict == "PASS" and not inst.has("measurements")


def test_a_misspelt_api_exits_2_naming_file_and_line(tmp_path):
    path = tmp_path / "typo.yaml"
    path.write_text(RESHAPE_CASE.replace("api: torch.reshape", "api: torch.reshap"))
    api_line = next(n for n, line in enumerate(path.read_text().splitlines(), start=1)
                    if "torch.reshap," in line)
    result = opbench("check", str(path), "--threads", "2", "--json",
                     str(tmp_path / "never.json"), cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert f"{path}:{api_line} case 'reshape': key 'torch.api'" in result.stderr
    assert "torch.reshap" in result.stderr


def test_blocking_launches_and_passes_on_the_real_frameworks(reshape_file, tmp_path):
    """--launch blocking reaches both frameworks (recorded per framework); --processes 2
    --passes 3 adds rounds in three passes over the selection in each of two worker
    processes, all in one valid record that says where each round came from."""
    out = tmp_path / "blocking.json"
    result = opbench("run", str(reshape_file), "--launch", "blocking", "--processes", "2",
                     "--passes", "3", "--rounds", "12", "--min-sample-time", "0.002",
                     "--max-time", "1", "--threads", "1", "--mode", "both",
                     "--json", str(out), cwd=tmp_path)
    assert result.returncode in (0, 1, 3), result.stderr
    assert "Traceback" not in result.stderr
    assert "blocking launches, 2 worker processes, 3 passes" in result.stderr
    record = load_results(out)
    assert record.config.launch == "blocking" and record.config.passes == 3
    assert record.config.processes == 2
    assert {fw.launch for fw in record.frameworks.values()} == {"blocking"}
    (inst,) = record.instances
    for m in inst.measurements.values():
        assert m.passes == 3 and sorted(set(m.pass_of_round)) == [1, 2, 3]
        assert sorted(set(m.process_of_round)) == [1, 2] and m.n_processes == 2
        assert m.rounds == len(m.samples_s["torch"]) == 6 * m.rounds_per_pass

"""The affinity pairs (examples/affinity/) run as users run them: every naive.py and fixed.py
takes 2 steps in its own interpreter and both print the same checksum (within the tolerance
tools/affinity_pairs.py uses); and the ground-truth tool itself measures a pair of each
framework end to end (one process, a fraction of a second: the figures are docs/model.md's
run, not this test's)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import affinity_pairs  # noqa: E402  (tools/ is not a package)

pytestmark = pytest.mark.integration

PAIRS = affinity_pairs.load_manifest()
CHECKSUM = re.compile(r"^checksum (\S+) abs (\S+)$", re.MULTILINE)


def _checksum(script: Path, cwd: Path) -> tuple[float, float]:
    done = subprocess.run([sys.executable, str(script), "--steps", "2"], cwd=cwd,
                          env={**os.environ, "GLOG_v": "3"}, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, f"{script} exited {done.returncode}:\n{done.stderr[-3000:]}"
    found = CHECKSUM.findall(done.stdout)
    assert len(found) == 1, f"{script} printed no checksum line:\n{done.stdout}"
    return float(found[0][0]), float(found[0][1])


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p.name)
def test_naive_and_fixed_run_two_steps_to_equal_checksums(pair, tmp_path):
    naive = _checksum(pair.script("naive"), tmp_path)
    fixed = _checksum(pair.script("fixed"), tmp_path)
    assert naive[1] > 0, f"{pair.name}: an all-zero output checks nothing"
    assert affinity_pairs.checksums_close(naive, fixed), f"{pair.name}: {naive} vs {fixed}"


@pytest.mark.parametrize("name", ["torch/silu_formula", "mindspore/silu_formula"])
def test_the_tool_measures_a_pair_with_outputs_equal(name, tmp_path):
    done = subprocess.run(
        [sys.executable, str(REPO / "tools" / "affinity_pairs.py"), "--processes", "1",
         "--seconds", "0.05", "--out", str(tmp_path), name],
        cwd=REPO, env={**os.environ, "GLOG_v": "3"}, capture_output=True, text=True,
        timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads((tmp_path / "affinity_pairs.json").read_text())
    (row,) = record["pairs"]
    assert row["pair"] == name and row["outputs_equal"] is True
    assert row["rounds_per_process"][0] >= affinity_pairs.MIN_ROUNDS
    d = row["difference"]
    assert d["processes"] == 1 and d["naive_median_s"] > 0 and d["fixed_median_s"] > 0
    assert f"`{name}`" in (tmp_path / "affinity_pairs.md").read_text()

"""Ctrl-C and SIGTERM on a real run, after MindSpore operators have run (issue #15 item 6):
MindSpore's own SIGINT handler used to answer Ctrl-C with SIGTERM (exit 143, nothing
marked interrupted)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.integration

CASES = """cases:
  - name: add
    params: {n: [1, 2, 3, 4, 5, 6]}
    inputs: {x: {shape: [64, $n]}, y: {shape: [64, $n]}}
    torch: {api: torch.add, args: [$x, $y]}
    mindspore: {api: mindspore.ops.add, args: [$x, $y]}
"""
# Generous: importing both frameworks and measuring one instance on a shared 2-core machine
STARTUP_TIMEOUT_S = 180


@pytest.mark.parametrize("signum, code, name", [(signal.SIGINT, 130, "SIGINT"),
                                                (signal.SIGTERM, 143, "SIGTERM")])
def test_a_signal_after_mindspore_ran_saves_marks_and_exits(tmp_path, signum, code, name):
    pytest.importorskip("torch")
    pytest.importorskip("mindspore")
    cases = tmp_path / "cases.yaml"
    cases.write_text(CASES)
    out = tmp_path / "run.json"
    env = {**os.environ, "GLOG_v": "3"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "opbench.cli.main", "run", str(cases), "--json", str(out),
         "--rounds", "30", "--max-time", "3", "--threads", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            try:
                if json.loads(out.read_text())["instances"]:
                    break       # an instance finished: both frameworks' operators have run
            except (OSError, ValueError, KeyError):
                pass
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, stderr
    assert f"interrupted ({name})" in stderr
    assert "Traceback" not in stderr
    saved = json.loads(out.read_text())
    assert saved["interrupted"] is True and saved["instances"]

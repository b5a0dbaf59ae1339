"""Both frameworks in one traced program, imported only after tracing started (a fresh
process, so neither is imported beforehand: the post-import hook must catch both)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("mindspore")

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys
assert "torch" not in sys.modules and "mindspore" not in sys.modules
import numpy as np
import torch
import mindspore
from mindspore import mint
a = torch.ones(2, 3)
b = a + a
m = mindspore.Tensor(np.ones((2, 3), np.float32))
n = mint.add(m, m) * 2
print("done", tuple(b.shape), n.shape)
"""

RUN_TRACE = "from opbench.cli.trace import trace_command; trace_command()"


def test_frameworks_imported_after_tracing_started_are_traced(tmp_path):
    script = tmp_path / "both.py"
    script.write_text(SCRIPT)
    out = tmp_path / "out"
    env = {**os.environ, "GLOG_v": "3",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-c", RUN_TRACE, "--framework", "both", "-o", str(out), "--",
         "python", str(script)], capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "done (2, 3) (2, 3)" in result.stdout
    record = json.loads((out / "trace_record.json").read_text())
    assert record["frameworks"]["torch"]["status"] == "traced"
    assert record["frameworks"]["mindspore"]["status"] == "traced"
    calls = {(row["framework"], row["api"]): row["calls"] for row in record["summary"]}
    assert calls[("torch", "torch.Tensor.__add__")] == 1
    assert calls[("torch", "torch.ones")] == 1
    assert calls[("mindspore", "mindspore.mint.add")] == 1
    assert calls[("mindspore", "mindspore.Tensor.__mul__")] == 1
    tracks = json.loads((out / "trace.json").read_text())["traceEvents"]
    processes = {e["args"]["name"] for e in tracks if e["name"] == "process_name"}
    assert processes == {"torch (serial timing)", "mindspore (serial timing)"}

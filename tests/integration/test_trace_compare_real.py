"""`opbench trace compare` on a real pair: examples/transformer's torch encoder and its
MindSpore port, each traced by `opbench trace` in its own process, then joined API by API."""
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
PAIR = REPO / "examples" / "transformer"


def _opbench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "GLOG_v": "3",
           "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH"))
                                         if p)}
    return subprocess.run([sys.executable, "-m", "opbench.cli", *args], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600)


def test_the_transformer_pair_joins_with_equal_call_counts(tmp_path):
    for name, script in (("torch", "run_torch.py"), ("mindspore", "run_mindspore.py")):
        done = _opbench(tmp_path, "trace", "-q", "-o", str(tmp_path / name), "--",
                        sys.executable, str(PAIR / script), "--steps", "2")
        assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "compare.json"
    done = _opbench(tmp_path, "trace", "compare", str(tmp_path / "torch"),
                    str(tmp_path / "mindspore"), "--json", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    found = json.loads(out.read_text())
    rows = {row["operation"]: row for row in found["rows"]}
    # the APIs the encoder is made of, joined through the mapping or by operation
    for operation in ("torch.nn.Linear", "torch.matmul", "torch.softmax",
                      "torch.nn.functional.gelu", "torch.Tensor.__add__", "layernorm",
                      "permute", "transpose"):
        assert operation in rows, sorted(rows)
    assert found["calls_differ"] == []
    assert all(row["a"]["calls"] == row["b"]["calls"] for row in rows.values())
    # the forward pass: 4 Linear per layer, 2 layers, 2 warm-up + 2 steps
    assert rows["torch.nn.Linear"]["a"]["calls"] == 4 * 2 * 4
    sides = {u["side"] for u in found["unmatched"]}
    assert sides == {"a", "b"}       # set-up calls, and embedding vs gather, are listed
    assert "call counts: equal for every joined API" in done.stdout

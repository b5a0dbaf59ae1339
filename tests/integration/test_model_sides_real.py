"""`opbench model` with one framework on both sides, real torch: a tiny script captured and
replayed in two replay processes of one framework (here the same interpreter twice, an A/A
comparison; two builds are two interpreters, docs/model.md), every call replayed in both
as the script made it, both sides named in the terminal, Markdown, JSON and `opbench
report` views. Structure only: the figures are docs/model.md's."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jsonschema
import pytest

pytest.importorskip("torch")

from opbench.model.impact.record import model_schema  # noqa: E402

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import torch
torch.manual_seed(0)
torch.set_num_threads(1)
w = torch.randn(32, 32)
x = torch.randn(8, 32)
for _ in range(6):
    y = torch.relu(x @ w)
    x = torch.tanh(y)
print(float(x.sum()))
"""


def _opbench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "GLOG_v": "3",
           "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH"))
                                         if p)}
    return subprocess.run([sys.executable, "-m", "opbench.cli", *args], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=900)


def test_one_framework_on_both_sides_replays_every_call_in_both_and_names_them(tmp_path):
    script = tmp_path / "tiny.py"
    script.write_text(textwrap.dedent(SCRIPT), encoding="utf-8")
    out, markdown = tmp_path / "model.json", tmp_path / "model.md"
    done = _opbench(tmp_path, "model", "-q", "-o", str(tmp_path / "work"),
                    "--reference", "torch", "--target", f"torch@{sys.executable}",
                    "--processes", "1", "--budget", "0", "--json", str(out),
                    "--markdown", str(markdown), "--", sys.executable, str(script))
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(out.read_text())
    jsonschema.validate(data, model_schema())
    model = data["model"]
    import torch

    reference, target = model["reference"], model["target"]
    assert reference == "torch" and target.startswith("torch@")
    assert model["sides"][reference]["version"] == torch.__version__
    assert model["sides"][target]["python"] == sys.executable
    # every call replayed in both, as the script made it (no route translation)
    assert model["coverage"] == pytest.approx(1.0)
    assert model["apis"] and all(a["api"] == a["mapped_api"] for a in model["apis"])
    assert all(a["ratio_ci"][0] is not None for a in model["apis"])
    sides_line = f"sides: reference {reference} = torch {torch.__version__}; target {target}"
    assert sides_line in _words(done.stdout) and sides_line in _words(markdown.read_text())
    shown = _opbench(tmp_path, "report", str(out))
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert sides_line in _words(shown.stdout)


def _words(text: str) -> str:
    """The text with its line breaks as spaces: a terminal view wraps long lines."""
    return " ".join(text.split())

"""`opbench model` on the scripts issue 32 reproduced with, on real torch and MindSpore: the
arguments a script writes without thinking replay (F.cross_entropy's deprecated defaults,
F.softmax's _stacklevel, device=, a cache concatenated with an empty tensor), a script that
fails is said at once with exit 2, calls of a dtype no replay makes are not-covered rows,
a long loop ends once its steps are recorded, and `opbench report` shows the saved
record. Each run: one replay process per framework, no alone measurements, tiny shapes."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("mindspore")

from test_model_real import _model, _projected, _script  # noqa: E402

pytestmark = pytest.mark.integration

FUNCTIONAL_CNN = """
import torch
import torch.nn.functional as F
torch.manual_seed(0)
torch.set_num_threads(1)
w1 = (torch.randn(8, 3, 3, 3) * 0.1).requires_grad_()
b1 = torch.zeros(8).requires_grad_()
w2 = (torch.randn(10, 8 * 8 * 8) * 0.05).requires_grad_()
b2 = torch.zeros(10).requires_grad_()
params = [w1, b1, w2, b2]
x, y = torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))
for step in range(8):
    h = F.max_pool2d(F.relu(F.conv2d(x, w1, b1, padding=1)), 2)
    logits = F.linear(h.flatten(1), w2, b2)
    loss = F.cross_entropy(logits, y)
    loss.backward()
    with torch.no_grad():
        for p in params:
            p -= 0.05 * p.grad
            p.grad = None
print(float(loss))
"""

ATTENTION_BLOCK = """
import math
import torch
import torch.nn.functional as F
torch.manual_seed(0)
torch.set_num_threads(1)
d, heads, n = 32, 4, 8
wq, wk, wv, wo = (torch.randn(d, d) / math.sqrt(d) for _ in range(4))
g, b = torch.ones(d), torch.zeros(d)
x = torch.randn(2, n, d)
cache = torch.tensor([])
for step in range(8):
    h = F.layer_norm(x, (d,), g, b)
    q = (h @ wq).view(2, n, heads, d // heads).transpose(1, 2)
    k = (h @ wk).view(2, n, heads, d // heads).transpose(1, 2)
    v = (h @ wv).view(2, n, heads, d // heads).transpose(1, 2)
    k = torch.cat([cache, k.reshape(-1)], dim=0).view(2, heads, n, d // heads)
    pos = torch.arange(n, device=x.device)
    scale = torch.tensor(1.0 / math.sqrt(d // heads), device=x.device, dtype=torch.float32)
    att = F.softmax((q @ k.transpose(-2, -1)) * scale + pos.float() * 0.0, dim=-1)
    y = x + (att @ v).transpose(1, 2).reshape(2, n, d) @ wo
print(tuple(y.shape))
"""

FAILS_AFTER_FIVE_STEPS = """
import torch
torch.set_num_threads(1)
x, w = torch.randn(8, 32), torch.randn(32, 32)
for step in range(100):
    x = torch.relu(x @ w) / 10
    if step == 5:
        raise ValueError(f"bad batch at step {step}")
"""

LONG_LOOP = """
import torch
torch.set_num_threads(1)
x, w = torch.randn(8, 32), torch.randn(32, 32)
for step in range(3000):
    h = torch.relu(x @ w)
    y = torch.softmax(h, dim=-1).sum()
print("ran", step + 1)
"""

COMPLEX_AND_FREXP = """
import torch
torch.set_num_threads(1)
x = torch.randn(8, 16)
for step in range(6):
    s = torch.fft.rfft2(x)
    m = s.abs()
    mant, exp = torch.frexp(x)
    y = torch.relu(x) + mant
print(float(y.sum()))
"""


def _not_covered(model: dict) -> dict[str, str]:
    return {row["api"]: row["reason"] for row in model["not_covered"]}


def test_a_functional_training_step_replays_cross_entropy_as_the_script_wrote_it(tmp_path):
    """F.cross_entropy(logits, y) reached MindSpore with size_average= ("unexpected keyword
    argument 'size_average'") and was left out of both frameworks."""
    model, done = _projected(tmp_path, _script(tmp_path, "cnn.py", FUNCTIONAL_CNN))
    missing = _not_covered(model)
    assert "torch.nn.functional.cross_entropy" not in missing, missing
    assert not any("size_average" in reason for reason in missing.values())
    rows = {row["api"]: row for row in model["apis"]}
    for api in ("torch.nn.functional.cross_entropy", "torch.nn.functional.conv2d",
                "torch.nn.functional.linear", "torch.nn.functional.max_pool2d"):
        assert rows[api]["target_s"] > 0, api


def test_an_attention_block_replays_softmax_device_and_an_empty_cache(tmp_path):
    """F.softmax(x, dim=-1) failed in MindSpore on _stacklevel; torch.arange(n,
    device=...), torch.tensor(v, device=..., dtype=...) and torch.cat with an empty tensor
    ("element rank must be same") replay too: every call is covered and agrees."""
    model, done = _projected(tmp_path, _script(tmp_path, "block.py", ATTENTION_BLOCK))
    assert model["coverage"] == pytest.approx(1.0), model["not_covered"]
    assert model["mismatches"] == [] and model["errors"] == []
    mapped = {row["api"]: row["mapped_api"] for row in model["apis"]}
    assert mapped["torch.nn.functional.softmax"].startswith("mindspore.")
    assert "1-D empty tensors skipped" in mapped["torch.cat"]
    assert {"torch.arange", "torch.tensor"} <= set(mapped)


def test_a_script_that_fails_is_said_at_once_with_exit_2(tmp_path):
    """A script raising after five steps was still replaying two minutes later."""
    script = _script(tmp_path, "fails.py", FAILS_AFTER_FIVE_STEPS)
    started = time.perf_counter()
    done = _model(tmp_path, "--processes", "1", "--budget", "0", "--", sys.executable,
                  str(script))
    elapsed = time.perf_counter() - started
    assert done.returncode == 2, done.stdout + done.stderr
    assert ("the script exited with status 1 (ValueError: bad batch at step 5) after "
            in done.stderr)
    assert "nothing was replayed" in done.stderr and "--keep-going" in done.stderr
    assert "probing" not in done.stderr and elapsed < 30


def test_keep_going_replays_what_ran_before_the_failure_and_says_so(tmp_path):
    script = _script(tmp_path, "fails.py", FAILS_AFTER_FIVE_STEPS)
    model, done = _projected(tmp_path, script, status=3, extra=("--keep-going",))
    assert model["script"]["status"] == 1
    assert model["script"]["error"] == "ValueError: bad batch at step 5"
    assert model["coverage"] == pytest.approx(1.0)
    assert "the script exited with status 1: ValueError: bad batch at step 5 (what it ran " \
           "before is measured)" in done.stdout


def test_complex_calls_replay_and_an_api_mindspore_lacks_is_a_not_covered_row(tmp_path):
    """torch.fft.rfft2's complex64 ended the run ("the mindspore replay could not start:
    KeyError: 'complex64'"), then was a not-covered row; complex tensors now replay in both
    frameworks (the cplx branch), and torch.frexp, which MindSpore 2.10 lacks, is a
    not-covered row with its reason, never a crash."""
    model, done = _projected(tmp_path, _script(tmp_path, "fft.py", COMPLEX_AND_FREXP))
    missing = _not_covered(model)
    assert missing["torch.frexp"] == "no entry in the API mapping for torch.frexp"
    replayed = {row["api"] for row in model["apis"]}
    assert {"torch.fft.rfft2", "torch.Tensor.abs", "torch.relu"} <= replayed
    assert not model["mismatches"]


def test_a_long_loop_ends_once_its_steps_are_recorded(tmp_path):
    """A 3,000-step loop was captured whole. Ended by the automatic rule, the script does not
    reach its print; the record says why the capture ended."""
    script = _script(tmp_path, "long.py", LONG_LOOP)
    model, done = _projected(tmp_path, script, extra=("--capture-steps", "20"))
    assert "ran 3000" not in done.stdout
    assert model["script"]["status"] == 0
    assert 20 <= model["region"]["steps"] < 2999
    assert model["script"]["captured_calls"] < 4 * 1000
    assert "the capture ended the script once 20 steady steps were recorded" \
        in model["region"]["note"]


def test_with_run_on_the_long_loop_finishes_untraced(tmp_path):
    script = _script(tmp_path, "long.py", LONG_LOOP)
    model, done = _projected(tmp_path, script, extra=("--capture-steps", "20", "--run-on"))
    assert "ran 3000" in done.stdout
    assert model["script"]["captured_calls"] < 4 * 1000
    assert "the script ran on untraced" in model["region"]["note"]


def test_marked_steps_end_the_script_after_the_steps_wanted(tmp_path):
    script = _script(tmp_path, "marked.py", LONG_LOOP.replace(
        "for step in range(3000):\n", "import opbench.model\nfor step in range(3000):\n"
                                      "    opbench.model.step()\n"))
    model, done = _projected(tmp_path, script, extra=("--capture-steps", "5"))
    assert model["region"]["rule"] == "markers" and model["region"]["steps"] == 5
    assert model["script"]["captured_calls"] == 2 + 6 * 4     # two randn, 6 steps of 4


def test_report_shows_the_saved_model_record(tmp_path):
    model, done = _projected(tmp_path, _script(tmp_path, "block.py", ATTENTION_BLOCK))
    shown = subprocess.run([sys.executable, "-m", "opbench.cli", "report",
                            str(tmp_path / "model.json")], capture_output=True, text=True,
                           cwd=Path(__file__).resolve().parents[2], timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert "torch.nn.functional.softmax -> mindspore." in shown.stdout
    assert json.loads((tmp_path / "model.json").read_text())["model"]["coverage"] > 0.99

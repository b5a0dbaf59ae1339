"""`opbench suggest` / `opbench model --suggest` on real torch and MindSpore scripts with
planted patterns (and the optimizer-loop pairs' naive.py, MindSpore's and torch's): each is
found at the right lines, every swap's outputs are equal (the replay checked them), and the
JSON and CSV hold the rows. Whether a swap is faster is a measurement (docs/model.md,
Suggestions), not asserted here."""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("mindspore")

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]

TORCH = """
import math
import torch
torch.manual_seed(0)
torch.set_num_threads(1)
x = torch.randn(32, 64)
w = torch.randn(48, 64)
b = torch.randn(48)
mask = torch.rand(32, 48) > 0.5
for _ in range(12):
    h = x @ w.t() + b                                              # LINE linear
    s = h * torch.sigmoid(h)                                       # LINE silu
    e = torch.exp(s * 0.01)                                        # LINE softmax_exp
    p = e / e.sum(dim=-1, keepdim=True)                            # LINE softmax
    q = torch.where(mask,                                          # LINE where
                    torch.zeros_like(p), p)
    value = q.mean().item()                                        # LINE item
"""

MINDSPORE = """
import numpy as np
import mindspore as ms
from mindspore import ops
rng = np.random.default_rng(0)
x = ms.Tensor(rng.standard_normal((32, 64)).astype(np.float32))
w = ms.Tensor(rng.standard_normal((64, 48)).astype(np.float32))
b = ms.Tensor(rng.standard_normal((48,)).astype(np.float32))
for _ in range(12):
    h = ops.matmul(x, w) + b                                       # LINE linear
    s = h * ops.sigmoid(h)                                         # LINE silu
    sp = ops.log(1 + ops.exp(s * 0.01))                            # LINE softplus
    r = ops.relu(sp)                                               # LINE relu
    value = r.mean().asnumpy()                                     # LINE asnumpy
"""


def _lines(source: str) -> dict[str, int]:
    return {line.split("# LINE ")[1].strip(): n
            for n, line in enumerate(source.splitlines(), 1) if "# LINE " in line}


def _suggest(tmp_path: Path, name: str, source: str) -> tuple[list[dict], list[dict]]:
    script = tmp_path / name
    script.write_text(textwrap.dedent(source))
    out, table = tmp_path / "s.json", tmp_path / "s.csv"
    env = {**os.environ, "GLOG_v": "3", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "opbench.cli", "suggest", "--processes",
                           "2", "-o", str(tmp_path / "work"), "--json", str(out), "--csv",
                           str(table), "--", sys.executable, str(script)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    with open(table, newline="") as handle:
        rows_csv = list(csv.DictReader(handle))
    return json.loads(out.read_text())["suggestions"], rows_csv


def _check(rows: list[dict], rows_csv: list[dict], expected: dict[str, int], file: str):
    by_line = {(r["family"], r["start_line"]): r for r in rows}
    for family, line in expected.items():
        row = by_line.get((family, line))
        assert row is not None, (family, line, sorted(by_line))
        assert row["file"].endswith(file)
        assert row["outputs_equal"] is True, row
        assert row["saving_s"] is not None and row["verdict"] in (
            "faster", "slower", "no measurable gain here")
    assert len(rows_csv) == len(rows)
    assert list(rows_csv[0])[:6] == ["File", "Start Line", "End Line", "Api Type",
                                     "Api Call Name", "Affinity Api Name"]


def test_a_torch_script_s_planted_patterns_are_found_at_their_lines_with_equal_outputs(
        tmp_path):
    rows, rows_csv = _suggest(tmp_path, "planted.py", TORCH)
    lines = _lines(textwrap.dedent(TORCH))
    _check(rows, rows_csv, {"torch.linear_composed": lines["linear"],
                            "torch.silu_formula": lines["silu"],
                            "torch.softmax_composed": lines["softmax_exp"],
                            "torch.masked_write_where": lines["where"],
                            "torch.host_sync_in_loop": lines["item"]}, "planted.py")
    where = next(r for r in rows if r["family"] == "torch.masked_write_where")
    assert where["end_line"] == where["start_line"] + 1      # the call spans two lines
    # a suggestion spans every call it replaces: the softmax's exp, then its sum and divide
    softmax = next(r for r in rows if r["family"] == "torch.softmax_composed")
    assert softmax["end_line"] == lines["softmax"]


def test_a_mindspore_script_s_planted_patterns_are_found_at_their_lines_with_equal_outputs(
        tmp_path):
    rows, rows_csv = _suggest(tmp_path, "planted_ms.py", MINDSPORE)
    lines = _lines(textwrap.dedent(MINDSPORE))
    _check(rows, rows_csv, {"mindspore.linear_composed": lines["linear"],
                            "mindspore.silu_formula": lines["silu"],
                            "mindspore.softplus_formula": lines["softplus"],
                            "mindspore.route": lines["relu"],
                            "mindspore.host_sync_in_loop": lines["asnumpy"]},
           "planted_ms.py")


TORCH_PROPERTY_T = """
import torch
torch.manual_seed(0)
torch.set_num_threads(1)
x = torch.randn(32, 64)
w = torch.randn(48, 64)
b = torch.randn(48)
with torch.no_grad():
    for _ in range(12):
        h = torch.relu(x @ w.T + b)                                # LINE linear
"""


def test_a_linear_written_with_the_T_property_is_swapped_for_linear_of_the_weight(tmp_path):
    # the capture sees `w.T` (a property read, torch.Tensor.T): the swap replaces the three
    # calls with F.linear(x, w, b), the fixed script's call, not F.linear(x, w.T.t(), b)
    rows, rows_csv = _suggest(tmp_path, "planted_t.py", TORCH_PROPERTY_T)
    lines = _lines(textwrap.dedent(TORCH_PROPERTY_T))
    _check(rows, rows_csv, {"torch.linear_composed": lines["linear"]}, "planted_t.py")
    linear = next(r for r in rows if r["family"] == "torch.linear_composed")
    assert linear["api"].split(" + ") == ["torch.Tensor.T", "torch.Tensor.__matmul__",
                                          "torch.Tensor.__add__"]
    assert linear["calls"] == 3


MINDSPORE_ASSIGN_SUB = """
import numpy as np
import mindspore as ms
from mindspore import mint, ops
ms.set_context(mode=ms.PYNATIVE_MODE)
rng = np.random.default_rng(0)
x = ms.Tensor(rng.standard_normal((32, 64)).astype(np.float32))
y = ms.Tensor(rng.standard_normal((32, 48)).astype(np.float32))
params = [ms.Parameter(ms.Tensor(rng.standard_normal((48, 64)).astype(np.float32) * 0.1),
                       name="w"),
          ms.Parameter(ms.Tensor(np.zeros(48, np.float32)), name="b")]
loss_of = lambda x, y: ((mint.nn.functional.linear(x, *params) - y) ** 2).mean()
grad_fn = ms.value_and_grad(loss_of, None, params)
assign_sub = ops.AssignSub()
for _ in range(12):
    loss, grads = grad_fn(x, y)
    for p, g in zip(params, grads):
        assign_sub(p, g * 0.05)                                    # LINE update
    value = loss.asnumpy()
"""


def _optimizer_row(rows: list[dict], framework: str, affinity_api: str) -> dict:
    """The one optimizer-loop row: checked on every weight (the optimizer's whole result
    against each write-back or in-place update), then timed."""
    (row,) = [r for r in rows if r["family"] == f"{framework}.optimizer_loop"]
    assert row["affinity_api"] == affinity_api
    assert row["outputs_equal"] is True and row["saving_s"] is not None, row
    return row


def _suggest_pair(tmp_path: Path, pair: str) -> list[dict]:
    """`opbench suggest` on examples/affinity/PAIR/naive.py (one replay process)."""
    out = tmp_path / "s.json"
    done = subprocess.run([sys.executable, "-m", "opbench.cli", "suggest", "--processes",
                           "1", "-o", str(tmp_path / "work"), "--json", str(out), "--",
                           sys.executable,
                           str(REPO / "examples" / "affinity" / pair / "naive.py"),
                           "--steps", "10"],
                          cwd=REPO, env={**os.environ, "GLOG_v": "3", "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(out.read_text())["suggestions"]


def test_the_mindspore_optimizer_loop_pair_s_assign_loop_is_swapped_for_nn_sgd(tmp_path):
    # examples/affinity/mindspore/optimizer_loop/naive.py: `for p, g in zip(params, grads):
    # ops.assign(p, p - LR * g)` over 16 weights (manifest.yaml: planted lines 62-63)
    row = _optimizer_row(_suggest_pair(tmp_path, "mindspore/optimizer_loop"), "mindspore",
                         "mindspore.nn.SGD")
    assert row["file"].endswith("naive.py")
    assert 62 <= row["start_line"] <= row["end_line"] <= 63
    assert row["calls"] == 48          # (mul, sub, assign) x 16 weights
    assert "learning_rate=0.01" in row["replacement"]


def test_an_assign_sub_primitive_loop_is_swapped_for_nn_sgd(tmp_path):
    rows, _ = _suggest(tmp_path, "train_assign_sub.py", MINDSPORE_ASSIGN_SUB)
    row = _optimizer_row(rows, "mindspore", "mindspore.nn.SGD")
    line = _lines(textwrap.dedent(MINDSPORE_ASSIGN_SUB))["update"]
    assert (row["start_line"], row["end_line"], row["calls"]) == (line, line, 4)
    assert row["api"] == "mindspore.Tensor.__mul__ + mindspore.ops.AssignSub"


TORCH_ADD_ALPHA = """
import torch
torch.manual_seed(0)
torch.set_num_threads(1)
x, y = torch.randn(32, 64), torch.randn(32, 48)
params = [(torch.randn(48, 64) * 0.1).requires_grad_(), torch.zeros(48, requires_grad=True)]
for _ in range(12):
    loss = ((torch.nn.functional.linear(x, *params) - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        for p in params:
            p.add_(p.grad, alpha=-0.05)                            # LINE update
            p.grad = None
    value = loss.item()
"""


def test_the_torch_optimizer_loop_pair_s_update_loop_is_swapped_for_foreach_sgd(tmp_path):
    # examples/affinity/torch/optimizer_loop/naive.py: `for p in params: p -= LR * p.grad;
    # p.grad = None` under no_grad over 16 weights (manifest.yaml: planted lines 53-56)
    row = _optimizer_row(_suggest_pair(tmp_path, "torch/optimizer_loop"), "torch",
                         "torch.optim.SGD")
    assert row["file"].endswith("naive.py")
    assert 53 <= row["start_line"] <= row["end_line"] <= 56
    assert row["calls"] == 32          # (__rmul__, __isub__) x 16 weights
    assert row["api"] == "torch.Tensor.__rmul__ + torch.Tensor.__isub__"
    assert "lr=0.01, foreach=True" in row["replacement"]


def test_a_torch_add_alpha_loop_is_swapped_for_foreach_sgd(tmp_path):
    rows, _ = _suggest(tmp_path, "train_add_alpha.py", TORCH_ADD_ALPHA)
    row = _optimizer_row(rows, "torch", "torch.optim.SGD")
    line = _lines(textwrap.dedent(TORCH_ADD_ALPHA))["update"]
    assert (row["start_line"], row["end_line"], row["calls"]) == (line, line, 2)
    assert row["api"] == "torch.Tensor.add_" and "lr=0.05" in row["replacement"]


TORCH_ATTENTION = """
import math
import torch
import torch.nn.functional as F
torch.manual_seed(0)
torch.set_num_threads(1)
q, k, v = (torch.randn(2, 4, 16, 8) for _ in range(3))
causal = torch.tril(torch.ones(16, 16, dtype=torch.bool))
pad = torch.zeros(2, 1, 1, 16)
pad[1, ..., 12:] = float("-inf")
with torch.no_grad():
    for _ in range(12):
        s = (q @ k.transpose(-2, -1)) / math.sqrt(8)               # LINE causal
        s = s.masked_fill(~causal, float("-inf"))
        a = F.softmax(s, dim=-1) @ v
        w = torch.matmul(a, k.transpose(2, 3)) * 0.3 + pad         # LINE additive
        p = F.dropout(F.softmax(w, dim=-1, dtype=torch.float32).to(a.dtype), p=0.1,
                      training=False)
        out = torch.relu(torch.matmul(p, v))
"""


def test_composed_attention_is_one_sdpa_call_with_equal_outputs(tmp_path):
    """The functional corpus script's form (a causal masked_fill of an inverted keep mask,
    divided by sqrt(d)) and transformers' eager form (matmul * scaling + an additive mask,
    softmax in float32, cast back, eval dropout): each one F.scaled_dot_product_attention
    whose outputs the replay found equal."""
    rows, rows_csv = _suggest(tmp_path, "attention.py", TORCH_ATTENTION)
    lines = _lines(textwrap.dedent(TORCH_ATTENTION))
    found = sorted((r["start_line"], r["end_line"]) for r in rows
                   if r["family"] == "torch.attention_composed")
    assert found == [(lines["causal"], lines["causal"] + 2),
                     (lines["additive"], lines["additive"] + 3)], rows
    for row in rows:
        if row["family"] == "torch.attention_composed":
            assert row["outputs_equal"] is True, row
            assert row["affinity_api"] == "torch.nn.functional.scaled_dot_product_attention"
    assert len(rows_csv) == len(rows)


TORCH_OPTIM_SGD = """
import torch
torch.manual_seed(0)
torch.set_num_threads(1)
x, y = torch.randn(32, 64), torch.randn(32, 48)
model = torch.nn.Linear(64, 48)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for _ in range(12):
    optimizer.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    optimizer.step()                                               # LINE update
"""


def test_a_script_stepping_torch_optim_sgd_is_told_to_pass_foreach(tmp_path):
    # SGD without foreach on CPU steps weight by weight: the loop is its optimizer.step()
    rows, _ = _suggest(tmp_path, "train_sgd.py", TORCH_OPTIM_SGD)
    row = _optimizer_row(rows, "torch", "torch.optim.SGD")
    line = _lines(textwrap.dedent(TORCH_OPTIM_SGD))["update"]
    assert (row["start_line"], row["end_line"]) == (line, line)
    assert row["replacement"].startswith("pass foreach=True to the script's torch.optim.SGD")


@pytest.mark.parametrize("pair, family, lines", [
    ("torch/masked_write_index", "torch.masked_write_index", (49, 49)),
    ("mindspore/masked_write_index", "mindspore.masked_write_index", (52, 52)),
    ("torch/tensor_creation_in_loop", "torch.tensor_creation_in_loop", (51, 51)),
    ("mindspore/tensor_creation_in_loop", "mindspore.tensor_creation_in_loop", (54, 54)),
])
def test_the_new_families_pairs_are_found_at_their_lines_with_outputs_equal(
        tmp_path, pair, family, lines):
    # examples/affinity/manifest.yaml's planted lines; 8 layers: 8 calls a step
    (row,) = [r for r in _suggest_pair(tmp_path, pair) if r["family"] == family]
    assert (row["start_line"], row["end_line"]) == lines and row["file"].endswith("naive.py")
    assert row["outputs_equal"] is True and row["saving_s"] is not None, row
    assert row["calls"] == 8

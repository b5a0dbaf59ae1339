"""`opbench model` on real torch and MindSpore: small scripts captured, replayed in both
frameworks, projected; the record validates against its schema. Structure and coverage are
checked here; accuracy is a benchmark (docs/model.md), not a timed test."""
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
pytest.importorskip("mindspore")

from opbench.model.impact.record import model_schema  # noqa: E402

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]

INFERENCE = """
import torch, torch.nn as nn
torch.manual_seed(0)
torch.set_num_threads(1)

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 32)
        self.ln = nn.LayerNorm(32)
        self.fc = nn.Linear(32, 64)
        self.drop = nn.Dropout(0.1)
        self.out = nn.Linear(64, 32)

    def forward(self, ids):
        x = self.emb(ids)
        h = torch.nn.functional.gelu(self.fc(self.ln(x)))
        y = self.out(self.drop(h)) + x
        return torch.softmax(y[:, 0], dim=-1)

model = Block().eval()
ids = torch.randint(0, 100, (2, 8))
with torch.no_grad():
    for _ in range(STEPS):
        out = model(ids)
print(tuple(out.shape))
"""

TRAINING = """
import torch, torch.nn as nn
torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
loss_fn = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
for _ in range(5):
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
print(float(loss))
"""


# The start of a MindSpore script: one kernel thread, PyNative, a seed, a network's __init__.
MINDSPORE_PROLOGUE = """
import numpy as np
import mindspore as ms
from mindspore import mint, nn, ops
ms.device_context.cpu.op_tuning.threads_num(1)
ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_seed(0)

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
"""

# A MindSpore script in the style of a port: layers (mint.nn.Linear, nn.LayerNorm, nn.Conv2d,
# nn.BatchNorm2d, nn.MaxPool2d, nn.Embedding) and primitives built by the script, in eval mode.
MINDSPORE_INFERENCE = MINDSPORE_PROLOGUE + """\
        self.emb = nn.Embedding(100, 16)
        self.ln = nn.LayerNorm((16,))
        self.fc = mint.nn.Linear(16, 16)
        self.conv = nn.Conv2d(1, 4, 3, pad_mode="pad", padding=1, has_bias=True)
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2, 2)
        self.act = nn.GELU(approximate=False)
        self.norm = ops.LayerNorm(begin_norm_axis=-1, begin_params_axis=-1, epsilon=1e-5)
        self.gamma = ms.Tensor(np.ones(16, np.float32))
        self.beta = ms.Tensor(np.zeros(16, np.float32))

    def construct(self, ids):
        x = self.act(self.fc(self.ln(self.emb(ids))))
        x = self.norm(x, self.gamma, self.beta)[0]
        image = x.reshape(2, 1, 8, 16)
        return self.pool(mint.nn.functional.relu(self.bn(self.conv(image))))

net = Net()
net.set_train(False)
ids = ms.Tensor(np.arange(16, dtype=np.int32).reshape(2, 8))
for _ in range(STEPS):
    out = net(ids)
print(out.shape)
"""


MINDSPORE_TRAINING = MINDSPORE_PROLOGUE + """\
        # no bias before the BatchNorm: its gradient is 0 up to rounding, and Adam's first
        # step moves a weight by the learning rate whatever its gradient's size, so the two
        # frameworks' rounding would move that bias in opposite directions
        self.conv = nn.Conv2d(1, 4, 3, pad_mode="pad", padding=1, has_bias=False)
        self.bn = nn.BatchNorm2d(4)
        self.fc = mint.nn.Linear(4 * 8 * 8, 10)

    def construct(self, x):
        x = mint.nn.functional.relu(self.bn(self.conv(x)))
        return self.fc(x.reshape(x.shape[0], -1))

net = Net()
net.set_train(True)
loss_fn = nn.CrossEntropyLoss()
optimizer = OPTIMIZER
images = ms.Tensor(np.random.default_rng(0).standard_normal((4, 1, 8, 8)).astype(np.float32))
labels = ms.Tensor(np.array([1, 2, 3, 4], np.int32))

def forward(x, y):
    return loss_fn(net(x), y)

grad_fn = ms.value_and_grad(forward, None, optimizer.parameters)
for _ in range(5):
    loss, grads = grad_fn(images, labels)
    optimizer(grads)
    print(float(loss.asnumpy()))
"""


def _script(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _captured(tmp_path: Path, name: str, text: str):
    """The program the capture alone (`python -m opbench.model.capture.main`) records of a
    script of this text."""
    from opbench.model.program import Program
    script = _script(tmp_path, name, text)
    out = tmp_path / "program.json"
    env = {**os.environ, "GLOG_v": "3", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "opbench.model.capture.main", "--out",
                           str(out), "--", sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return Program.from_json(json.loads(out.read_text()))


def _model(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "GLOG_v": "3",
           "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH"))
                                         if p)}
    return subprocess.run([sys.executable, "-m", "opbench.cli", "model", "-q",
                           "-o", str(tmp_path / "work"), *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=1200)


def _projected(tmp_path: Path, script: Path, budget: str = "0", status: int = 0,
               extra: tuple[str, ...] = ()) -> tuple[dict, subprocess.CompletedProcess]:
    """`opbench model --json` on a script in one replay process per framework: the record's
    model object (checked against the schema) and the finished command."""
    out = tmp_path / "model.json"
    done = _model(tmp_path, "--processes", "1", "--budget", budget, "--json", str(out),
                  *extra, "--", sys.executable, str(script))
    assert done.returncode == status, done.stdout + done.stderr
    record = json.loads(out.read_text())
    jsonschema.validate(record, model_schema())
    return record["model"], done


def test_an_inference_script_is_projected_with_every_call_covered(tmp_path):
    script = _script(tmp_path, "infer.py", INFERENCE.replace("STEPS", "5"))
    model, done = _projected(tmp_path, script)
    assert model["traced_framework"] == "torch"
    assert model["region"]["rule"] == "automatic" and model["region"]["steps"] == 4
    assert model["coverage"] == pytest.approx(1.0)
    assert model["mismatches"] == [] and model["errors"] == []
    apis = {row["api"]: row for row in model["apis"]}
    assert {"torch.nn.Linear", "torch.nn.LayerNorm", "torch.nn.Embedding",
            "torch.nn.functional.gelu", "torch.softmax"} <= set(apis)
    linear = apis["torch.nn.Linear"]
    assert linear["calls"] == 8 and linear["mapped_api"].startswith("mindspore.")
    assert linear["lost_s"] == pytest.approx(
        linear["calls"] * (linear["target_s"] - linear["reference_s"]), rel=1e-9)
    for fw in ("torch", "mindspore"):
        p = model["projected_s"][fw]
        assert 0 < p["ci_low"] <= p["estimate"] <= p["ci_high"]
    assert "self-check" in done.stdout and "coverage: 100%" in done.stdout


def test_a_mindspore_script_replays_in_torch_with_every_layer_and_primitive_covered(tmp_path):
    script = _script(tmp_path, "infer_ms.py", MINDSPORE_INFERENCE.replace("STEPS", "5"))
    model, done = _projected(tmp_path, script)
    assert model["traced_framework"] == "mindspore"
    assert model["coverage"] == pytest.approx(1.0), model["not_covered"]
    assert model["mismatches"] == [] and model["errors"] == []
    mapped = {row["api"]: row["mapped_api"] for row in model["apis"]}
    assert mapped["mindspore.nn.LayerNorm"].startswith("torch.native_layer_norm")
    assert mapped["mindspore.ops.LayerNorm"].startswith("torch.native_layer_norm")
    assert mapped["mindspore.nn.Conv2d"].startswith("torch.nn.functional.conv2d")
    assert mapped["mindspore.nn.MaxPool2d"].startswith("torch.nn.functional.max_pool2d")
    assert mapped["mindspore.nn.Embedding"].startswith("torch.nn.functional.embedding")


def test_a_training_step_is_differentiated_in_both_frameworks(tmp_path):
    script = _script(tmp_path, "train.py", TRAINING)
    model, done = _projected(tmp_path, script)
    assert model["training"]["covered"] is True
    assert model["coverage"] > 0.9, model["not_covered"]
    backward = [r for r in model["apis"] if r["api"] == "torch.Tensor.backward"]
    assert backward and backward[0]["target_s"] > 0 and backward[0]["reference_s"] > 0


def test_sgd_with_momentum_replays_in_mindspore_as_its_fused_update(tmp_path):
    """Each weight's mul_, add_, add_ becomes one ApplyMomentum (nn.Momentum's fused update),
    and the updated weights agree with torch's (the probe compares the outputs)."""
    script = _script(tmp_path, "train_momentum.py",
                     TRAINING.replace("lr=0.1)", "lr=0.1, momentum=0.9)"))
    model, done = _projected(tmp_path, script)
    assert model["mismatches"] == [] and model["errors"] == []
    assert model["coverage"] > 0.9, model["not_covered"]
    mapped = {(row["api"], row["mapped_api"]) for row in model["signatures"]}
    assert ("torch.Tensor.add_", "mindspore.ops.ApplyMomentum (as nn.SGD's update)") in mapped
    assert ("torch.Tensor.mul_", "(folded into the optimizer update after it)") in mapped


@pytest.mark.parametrize("optimizer", ["Adam(model.parameters(), lr=1e-3)",
                                       "AdamW(model.parameters(), lr=1e-3)"])
def test_adam_replays_in_mindspore_as_its_fused_update(tmp_path, optimizer):
    """Each weight's lerp_, mul_, addcmul_, sqrt, div, add_, addcdiv_ becomes one ops.Adam;
    the updated weights agree with torch's (without the fold lerp_, addcmul_ and addcdiv_
    have no MindSpore mapping: the weights stayed as they were and the forward mismatched)."""
    script = _script(tmp_path, "train_adam.py",
                     TRAINING.replace("SGD(model.parameters(), lr=0.1)", optimizer))
    model, done = _projected(tmp_path, script)
    assert model["mismatches"] == [] and model["errors"] == []
    assert model["coverage"] > 0.95, model["not_covered"]
    mapped = {(row["api"], row["mapped_api"]) for row in model["signatures"]}
    fused = ("mindspore.ops.AdamWeightDecay (as nn.AdamWeightDecay's update)"
             if optimizer.startswith("AdamW") else "mindspore.ops.Adam (as nn.Adam's update)")
    assert ("torch.Tensor.addcdiv_", fused) in mapped
    assert ("torch.Tensor.lerp_", "(folded into the optimizer update after it)") in mapped


@pytest.mark.parametrize("optimizer, torch_step", [
    ("nn.SGD(net.trainable_params(), learning_rate=0.05, momentum=0.9)", "torch.optim.SGD.step"),
    ("nn.Adam(net.trainable_params(), learning_rate=0.01)", "torch.optim.Adam.step")])
def test_a_mindspore_training_step_replays_its_backward_and_optimizer_in_torch(
        tmp_path, optimizer, torch_step):
    """value_and_grad's backward becomes a call of the program (its gradients feed the
    optimizer's call) and the optimizer Cell replays as itself and as torch.optim; the two
    updated weights agree (the probe compares them), and the backward is timed apart from
    the optimizer (before, its kernels surfaced inside the optimizer's traced call)."""
    script = _script(tmp_path, "train_ms.py",
                     MINDSPORE_TRAINING.replace("OPTIMIZER", optimizer))
    model, done = _projected(tmp_path, script)
    assert model["traced_framework"] == "mindspore"
    assert model["coverage"] == pytest.approx(1.0), model["not_covered"]
    assert model["mismatches"] == [] and model["errors"] == []
    assert model["training"]["covered"] is True
    rows = {row["api"]: row for row in model["apis"]}
    backward = rows["mindspore.value_and_grad"]
    assert backward["mapped_api"] == "torch.Tensor.backward"
    assert backward["reference_s"] > 0 and backward["target_s"] > 0
    step = rows[optimizer.split("(")[0].replace("nn.", "mindspore.nn.")]
    assert step["mapped_api"] == torch_step
    assert step["target_s"] < backward["target_s"]


def test_the_heaviest_signatures_are_measured_alone(tmp_path):
    script = _script(tmp_path, "infer.py", INFERENCE.replace("STEPS", "4"))
    model, done = _projected(tmp_path, script, budget="60s")
    measured = [s for s in model["signatures"] if s.get("isolated_ratio") is not None]
    assert measured, model["signatures"]
    for s in measured:
        assert s["verdict"] in ("PASS", "SLOW", "INCONCLUSIVE")
        assert s["context_factor"]["mindspore"] > 0
    assert model["isolated"]["share"] > 0


def test_a_script_calling_only_unmapped_apis_says_so(tmp_path):
    """(torch.nanmedian(x, dim=0) was the example; it replays since keywords are renamed by
    the mapping's signature notes: dim -> axis.)"""
    script = _script(tmp_path, "odd.py", """
        import torch
        x = torch.randn(64, 64)
        for _ in range(5):
            y = torch.nn.functional.pairwise_distance(x, x)
        """)
    done = _model(tmp_path, "--processes", "1", "--budget", "0", "--", sys.executable,
                  str(script))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "replays in both" in done.stderr and "pairwise_distance" in done.stderr


def test_a_script_that_fails_after_its_steps_keeps_what_was_measured_with_keep_going(
        tmp_path):
    script = _script(tmp_path, "fails.py", INFERENCE.replace("STEPS", "4")
                     + "\nraise RuntimeError('after the loop')\n")
    model, done = _projected(tmp_path, script, status=3, extra=("--keep-going",))
    assert model["script"]["status"] == 1 and "after the loop" in model["script"]["error"]
    assert model["coverage"] == pytest.approx(1.0)
    assert "exited with status 1" in done.stdout


def test_capture_reads_the_range_of_a_mindspore_bool_tensor_without_a_failing_kernel():
    """The capture reads an integer or bool tensor's range (a replay draws values from it).
    On a MindSpore Bool tensor `min()` queues a Reduce the CPU has no kernel for, and the
    error surfaced at the script's next sync (CI: a has_aux script crashed under the capture
    on `(pred == y).astype(float32).mean()`)."""
    import mindspore as ms

    from opbench.frameworks.mindspore_adapter import find_pynative_executor
    from opbench.model.capture.observer import _Tensors

    mask = ms.Tensor(ms.numpy.arange(6) > 2)
    assert _Tensors.value_range(mask) == (0.0, 1.0)
    assert _Tensors.value_range(ms.Tensor([3, 7, 5], ms.int32)) == (3.0, 7.0)
    executor, _ = find_pynative_executor()
    executor.sync()         # raised "Reduce does not support this kernel data type" before
    assert float((mask.astype(ms.float32)).mean().asnumpy()) == 0.5


def test_mindspore_ops_zeros_like_and_ones_like_are_mapped_to_torch():
    """`ops.zeros_like` (the CPU route beside mint's) had no mapping entry, so its calls were
    never covered; coverage swung with its traced time (0.4% here, 15% in one CI run)."""
    from opbench.frameworks.apimap import load_mapping

    mapping = load_mapping()
    for name in ("zeros_like", "ones_like"):
        entry = mapping.lookup("mindspore", f"mindspore.ops.{name}")
        assert entry is not None and entry.torch == f"torch.{name}"

"""nn.TrainOneStepCell's backward (ops.GradOperation) and optimizer (nn.AdamWeightDecay, its
construct @jit) captured and replayed in both frameworks, with real torch and MindSpore
(opbench/model/capture/ms_grad_operation.py, replay/adam_weight_decay_route.py): torch's
AdamW with each step's settings updates the weights as MindSpore's cell does, and a
TrainOneStepCell step and a functional GradOperation step are covered whole, their outputs
agreeing call by call."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
ms = pytest.importorskip("mindspore")

from test_model_real import _projected, _script  # noqa: E402

from opbench.model.program import Call, Ext, Program, Ref, Seq  # noqa: E402
from opbench.model.replay.adam_weight_decay_route import adam_weight_decay_route  # noqa: E402

pytestmark = pytest.mark.integration

ADAMW = "mindspore.nn.AdamWeightDecay"
GRAD_OPERATION = "mindspore.ops.GradOperation"


def _adamw_call(decays) -> Call:
    return Call(index=1, framework="mindspore", api=ADAMW, kind="module", replay_api=ADAMW,
                args=(Seq("list", (Ext(0), Ext(1))), Ref(0, (1,))), kwargs=(), outputs=None,
                duration_ns=1, start_ns=0,
                init=(("learning_rate", 1e-2), ("beta1", 0.9), ("beta2", 0.999), ("eps", 1e-6),
                      ("weight_decays", decays)))


def test_torch_adamw_with_each_steps_settings_updates_as_mindspores_adam_weight_decay():
    rng = np.random.default_rng(3)
    weights = [rng.standard_normal((6, 4)).astype(np.float32),
               rng.standard_normal(4).astype(np.float32)]
    grads = [[rng.standard_normal(w.shape).astype(np.float32) for w in weights]
             for _ in range(5)]
    call = _adamw_call((0.1, 0.0))
    ms.set_device("CPU")
    ms_weights = [ms.Parameter(ms.Tensor(w.copy()), name=f"w{i}")
                  for i, w in enumerate(weights)]
    ms_update = adam_weight_decay_route(call, "mindspore").make(
        lambda name: getattr(ms.nn, name.rsplit(".", 1)[-1]))
    torch_weights = [torch.tensor(w.copy(), requires_grad=True) for w in weights]
    torch_update = adam_weight_decay_route(call, "torch").make(lambda name: torch.optim.AdamW)
    for step in grads:
        ms_update(ms_weights, [ms.Tensor(g) for g in step])
        torch_update(torch_weights, [torch.from_numpy(g) for g in step])
    for mine, theirs, start in zip(ms_weights, torch_weights, weights):
        moved = np.abs(mine.asnumpy() - start).max()
        assert moved > 1e-2                                  # five steps of lr 1e-2 moved it
        np.testing.assert_allclose(theirs.detach().numpy(), mine.asnumpy(), rtol=1e-5,
                                   atol=1e-6)


TRAIN_ONE_STEP = """
import mindspore as ms
import numpy as np
from mindspore import Tensor, nn

ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")
ms.set_seed(0)
np.random.seed(0)

net = nn.SequentialCell(nn.Dense(16, 32), nn.LayerNorm((32,)), nn.GELU(), nn.Dense(32, 4))
loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
optimizer = nn.AdamWeightDecay(net.trainable_params(), learning_rate=1e-3, weight_decay=0.01)
train_step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), optimizer)
train_step.set_train()
x = Tensor(np.random.randn(16, 16).astype(np.float32))
y = Tensor(np.random.randint(0, 4, (16,)).astype(np.int32))
for _ in range(8):
    print(float(train_step(x, y).asnumpy()))
"""


def test_a_train_one_step_cells_backward_and_optimizer_are_replayed_in_both(tmp_path):
    model, _ = _projected(tmp_path, _script(tmp_path, "one_step.py", TRAIN_ONE_STEP))
    assert model["traced_framework"] == "mindspore"
    assert model["errors"] == [] and model["mismatches"] == [], model
    # nothing left out: no alias window holds an uncaptured backward or optimizer any more
    assert model["not_covered"] == [], model["not_covered"]
    assert model["coverage"] == pytest.approx(1.0)
    mapped = {row["api"]: row["mapped_api"] for row in model["apis"]}
    assert mapped[GRAD_OPERATION].startswith("torch.Tensor.backward")
    assert mapped[ADAMW].startswith("torch.optim.AdamW.step")
    program = Program.from_json(json.loads((tmp_path / "work" / "program.json").read_text()))
    backward = next(c for c in program.calls if c.api == GRAD_OPERATION)
    assert backward.backward and backward.replayable
    # the loss it differentiates is the captured loss call's (found by memory: the cell ran
    # its network before GradOperation's call)
    made = program.calls[backward.args[0].call]
    assert made.api.startswith("mindspore.ops.SparseSoftmaxCrossEntropyWithLogits")
    assert dict(program.calls[[c.api for c in program.calls].index(ADAMW)].init)[
        "weight_decays"] == pytest.approx((0.01, 0.01, 0.0, 0.0, 0.01, 0.01))


def test_a_functional_grad_operation_step_is_covered_whole(tmp_path):
    script = Path(__file__).resolve().parents[1] / "conformance" / \
        "ms_grad_operation_functional.py"
    model, _ = _projected(tmp_path, script)
    assert model["errors"] == [] and model["mismatches"] == [], model
    assert model["not_covered"] == [] and model["coverage"] == pytest.approx(1.0)
    assert {row["api"] for row in model["apis"]} >= {GRAD_OPERATION, "mindspore.ops.assign"}

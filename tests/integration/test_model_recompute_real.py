"""Activation checkpointing in `opbench model`, with real torch and MindSpore
(model/recompute.py): the capture marks the calls made inside torch.utils.checkpoint, both
replays run them once more in the backward's window, and the reentrant checkpoint (whose
block ran under no_grad) replays with its gradient chain whole."""
from __future__ import annotations


import pytest

pytest.importorskip("torch")
pytest.importorskip("mindspore")

from test_model_real import _captured, _projected, _script  # noqa: E402

from opbench.frameworks import get_adapter  # noqa: E402
from opbench.frameworks.apimap import load_mapping  # noqa: E402
from opbench.model.replay.executor import Replayer  # noqa: E402
from opbench.model.steady import find_region, step_program  # noqa: E402

pytestmark = pytest.mark.integration

SCRIPT = """
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint
torch.manual_seed(0)
torch.set_num_threads(1)
fc1, fc2, head = nn.Linear(16, 32), nn.Linear(32, 32), nn.Linear(32, 4)
optimizer = torch.optim.SGD([*fc1.parameters(), *fc2.parameters(), *head.parameters()],
                            lr=0.05)


def block(h):
    return F.relu(fc2(F.relu(fc1(h))))


x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
for _ in range(6):
    optimizer.zero_grad()
    loss = F.cross_entropy(head(checkpoint(block, x, use_reentrant=REENTRANT)), y)
    loss.backward()
    optimizer.step()
print(float(loss))
"""


def _source(reentrant: bool) -> str:
    return SCRIPT.replace("REENTRANT", str(reentrant))




@pytest.mark.parametrize("reentrant", [False, True])
@pytest.mark.parametrize("framework", ["torch", "mindspore"])
def test_both_replays_recompute_the_block_and_train_the_layer_inside(tmp_path, reentrant,
                                                                      framework):
    program = _captured(tmp_path, "checkpointed.py", _source(reentrant))
    step = step_program(program, find_region(program))
    marked = [c for c in step.calls if c.recompute]
    # fc1, relu, fc2, relu: the block's four calls, with grad (the reentrant one ran
    # under no_grad, and its recompute runs with grad)
    assert len(marked) == 4 and all(c.grad_enabled for c in marked), marked
    (backward,) = [c for c in step.calls if c.backward]
    adapter = get_adapter(framework)
    adapter.setup("cpu", 1)
    player = Replayer(step, framework, adapter, load_mapping())
    player.probe(fingerprints=False)
    assert all(s.ok and not s.stand_in for s in player.status), player.status
    assert player._recomputed == {backward.index: tuple(c.index for c in marked)}
    player._run()
    player.time_calls(1)
    if framework == "torch":
        first_layer = [e.id for e in step.externals if e.role == "parameter"
                       and tuple(e.shape) == (32, 16)]
        grads = [player._externals[i].grad for i in first_layer]
        assert grads and all(g is not None and float(g.abs().sum()) > 0 for g in grads)


def test_opbench_model_says_the_backward_recomputes(tmp_path):
    model, _ = _projected(tmp_path, _script(tmp_path, "checkpointed.py", _source(False)))
    assert model["errors"] == [] and model["mismatches"] == [], model
    assert model["stand_in_share"] == {"torch": 0.0, "mindspore": 0.0}
    assert "activation checkpointing: 4 call(s) recomputed in 1 backward(s)" \
        in model["region"]["note"]

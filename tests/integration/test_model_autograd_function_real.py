"""A custom torch.autograd.Function in `opbench model`, with real torch and MindSpore
(model/autograd_function.py): the capture records the call standing for its output, and
both replays give the layers before it a gradient through the straight-through stand-in
(before, its forward's calls replayed under no_grad and cut the chain: the first layer got
no gradient in either framework)."""
from __future__ import annotations


import pytest

pytest.importorskip("torch")
pytest.importorskip("mindspore")

from test_model_real import _captured, _projected, _script  # noqa: E402

from opbench.frameworks import get_adapter  # noqa: E402
from opbench.frameworks.apimap import load_mapping  # noqa: E402
from opbench.model.autograd_function import FUNCTION_APPLY, STRAIGHT_THROUGH_RULE  # noqa: E402
from opbench.model.replay.executor import Replayer  # noqa: E402
from opbench.model.steady import find_region, step_program  # noqa: E402

pytestmark = pytest.mark.integration

SCRIPT = """
import torch
import torch.nn.functional as F
from torch import nn
torch.manual_seed(0)
torch.set_num_threads(1)


class Round(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        return torch.round(x * scale) / scale

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out, None


fc1, fc2 = nn.Linear(16, 32), nn.Linear(32, 4)
optimizer = torch.optim.SGD([*fc1.parameters(), *fc2.parameters()], lr=0.05)
x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
for _ in range(6):
    optimizer.zero_grad()
    loss = F.cross_entropy(fc2(Round.apply(F.relu(fc1(x)), 8.0)), y)
    loss.backward()
    optimizer.step()
print(float(loss))
"""




def test_the_torch_replay_gives_the_layer_before_the_function_a_gradient(tmp_path):
    program = _captured(tmp_path, "round.py", SCRIPT)
    step = step_program(program, find_region(program))
    (function,) = [c for c in step.calls if c.function is not None]
    assert function.api == FUNCTION_APPLY and function.function.name == "Round"
    assert function.function.calls == 3              # x * scale, round, / scale
    assert not any(c.grad_enabled for c in step.calls[function.index - 3:function.index])
    # the light pass still timed the script's own calls (the added call has no time)
    assert program.light_ns and program.light_note is None
    adapter = get_adapter("torch")
    adapter.setup("cpu", 1)
    player = Replayer(step, "torch", adapter, load_mapping())
    player.probe(fingerprints=False)
    assert all(s.ok and not s.stand_in for s in player.status), player.status
    assert player.status[function.index].api.startswith(STRAIGHT_THROUGH_RULE)
    first_layer = [e.id for e in step.externals if e.role == "parameter"
                   and tuple(e.shape) == (32, 16)]
    grads = [player._externals[i].grad for i in first_layer]
    assert grads and all(g is not None and float(g.abs().sum()) > 0 for g in grads)


def test_opbench_model_replays_the_function_in_both_frameworks_and_says_how(tmp_path):
    model, _ = _projected(tmp_path, _script(tmp_path, "round.py", SCRIPT))
    assert model["errors"] == [] and model["mismatches"] == [], model
    assert model["stand_in_share"] == {"torch": 0.0, "mindspore": 0.0}
    assert model["training"]["covered"] is True
    assert "custom autograd.Function Round: its backward is the script's Python; " \
           "replayed as straight-through" in model["region"]["note"]
    (row,) = [r for r in model["apis"] if r["api"] == FUNCTION_APPLY]
    assert row["mapped_api"].startswith(STRAIGHT_THROUGH_RULE)

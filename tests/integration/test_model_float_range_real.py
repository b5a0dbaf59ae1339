"""A float external's observed range with real torch and MindSpore (capture/float_range.py,
replay/float_draw.py): a binary cross-entropy whose target is data made by torch.rand before
the step (in [0, 1]) replays in both frameworks. Before the range, the replay drew the
target in [-1, 1] and torch refused it ("all elements of target should be between 0 and 1"):
the BCE, 13% of tests/conformance/vae_mlp_bce_adam.py's region, replayed in neither."""
from __future__ import annotations


import numpy as np
import pytest

torch = pytest.importorskip("torch")
ms = pytest.importorskip("mindspore")

from test_model_real import _captured  # noqa: E402

from opbench.frameworks import get_adapter  # noqa: E402
from opbench.frameworks.apimap import load_mapping  # noqa: E402
from opbench.model.capture.float_range import float_range  # noqa: E402
from opbench.model.replay.executor import Replayer  # noqa: E402
from opbench.model.steady import find_region, step_program  # noqa: E402

pytestmark = pytest.mark.integration

BCE = "torch.nn.functional.binary_cross_entropy"
SCRIPT = """
import torch
import torch.nn.functional as F
from torch import nn
torch.manual_seed(0)
torch.set_num_threads(1)
fc = nn.Linear(24, 16)
optimizer = torch.optim.Adam(fc.parameters(), lr=1e-3)
data, target = torch.randn(32, 24), torch.rand(32, 16)
for _ in range(6):
    optimizer.zero_grad()
    loss = F.binary_cross_entropy(torch.sigmoid(fc(data)), target, reduction="sum")
    loss.backward()
    optimizer.step()
print(float(loss))
"""


def test_real_tensors_ranges_are_read_in_both_frameworks():
    values = np.linspace(0.0, 1.0, 3 * 1024 * 4, dtype=np.float32).reshape(3, 1024, 4)
    assert float_range(torch.from_numpy(values), values.shape) == (0.0, 1.0)
    assert float_range(ms.Tensor(values), values.shape) == (0.0, 1.0)
    big = torch.rand(8, 512, 768, requires_grad=True)        # sampled, detached
    low, high = float_range(big, tuple(big.shape))
    assert 0.0 <= low < 0.01 and 0.99 < high <= 1.0
    assert float_range(torch.tensor([0.0, float("-inf")]), (2,)) == (None, 0.0)




def test_a_bce_over_a_target_made_before_the_step_replays_in_both_frameworks(tmp_path):
    program = _captured(tmp_path, "bce.py", SCRIPT)
    step = step_program(program, find_region(program))
    (bce,) = [c for c in step.calls if c.api == BCE]
    target = step.externals[bce.args[1].id]
    assert target.name == "from torch.rand"
    assert 0.0 <= target.low < 0.05 and 0.95 < target.high <= 1.0
    for framework in ("torch", "mindspore"):
        adapter = get_adapter(framework)
        adapter.setup("cpu", 1)
        player = Replayer(step, framework, adapter, load_mapping())
        player.probe(fingerprints=False)
        status = player.status[bce.index]
        assert status.ok and not status.stand_in, (framework, status)

"""A float read back by `.item()` and passed to a later call, with real torch and MindSpore
(capture/synced_float.py): the division `h / peak` reads the `.item()` call's result, not a
literal, replays in both frameworks (torch's step projected onto MindSpore), and the
host-sync suggestion divides by the tensor instead, outputs equal
(examples/affinity/torch/host_sync_in_loop/ as a script)."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
ms = pytest.importorskip("mindspore")

from test_model_real import _captured  # noqa: E402

from opbench.frameworks import get_adapter  # noqa: E402
from opbench.frameworks.apimap import load_mapping  # noqa: E402
from opbench.model.affinity.measure import outputs_check  # noqa: E402
from opbench.model.affinity.run import candidates_of  # noqa: E402
from opbench.model.affinity.swap import swapped_step  # noqa: E402
from opbench.model.program import Lit, Ref  # noqa: E402
from opbench.model.replay.executor import Replayer  # noqa: E402
from opbench.model.steady import find_region, step_program  # noqa: E402

pytestmark = pytest.mark.integration

ITEM, DIV = "torch.Tensor.item", "torch.Tensor.__truediv__"
SCRIPT = """
import torch
torch.manual_seed(0)
torch.set_num_threads(1)
w = torch.randn(16, 16)
x = torch.randn(8, 16)
with torch.no_grad():
    for _ in range(6):
        h = x
        for _ in range(3):
            h = torch.relu(h @ w)
            peak = h.abs().max().item()
            h = h / peak
            scale = 0.5                     # a literal: stays one
            h = h * scale
print(float(h.sum()))
"""


def test_a_read_back_float_is_the_sync_s_result_and_the_swap_divides_by_the_tensor(tmp_path):
    program = _captured(tmp_path, "normalize.py", SCRIPT)
    step = step_program(program, find_region(program))
    items = [c.index for c in step.calls if c.api == ITEM]
    divisions = [c for c in step.calls if c.api == DIV]
    assert items and len(divisions) == len(items)
    assert all(d.args[1] == Ref(i) for d, i in zip(divisions, items))
    muls = [c for c in step.calls if c.api == "torch.Tensor.__mul__"]
    assert muls and all(m.args[1] == Lit(0.5) for m in muls)
    mapping = load_mapping()
    for framework in ("torch", "mindspore"):
        adapter = get_adapter(framework)
        adapter.setup("cpu", 1)
        player = Replayer(step, framework, adapter, mapping)
        player.probe(fingerprints=False)
        for d in divisions:
            status = player.status[d.index]
            assert status.ok and not status.stand_in, (framework, status)
    (sync,) = [c for c in candidates_of(step) if c.family == "torch.host_sync_in_loop"]
    swapped = swapped_step(step, sync)
    assert ITEM not in [c.api for c in swapped.step.calls]
    adapter = get_adapter("torch")
    original = Replayer(step, "torch", adapter, mapping).probe()
    after = Replayer(swapped.step, "torch", adapter, mapping).probe()
    equal, differs = outputs_check(step, swapped, original, after)
    assert equal, differs

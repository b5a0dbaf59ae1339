"""A framework layer with no function form is traced THROUGH (model/capture/lowering.py
traced_through, trace/recorder.py traces_through): with real torch, the calls its forward
makes are captured in its place, and the layer itself is not a call of the program."""
from __future__ import annotations

import json
import sys
import textwrap

import pytest

pytest.importorskip("torch")

from opbench.model.impact.processes import Interpreter, run_capture  # noqa: E402
from opbench.model.program import Lit, Program  # noqa: E402

pytestmark = pytest.mark.integration

LAYERS = """
import torch
from torch import nn
torch.manual_seed(0)
torch.set_num_threads(1)
encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64, batch_first=True), 2)
gru = nn.GRU(16, 32, batch_first=True)
norm = nn.GroupNorm(4, 16)
smooth, l1, huber = nn.SmoothL1Loss(), nn.L1Loss(), nn.HuberLoss(delta=0.5)
x, s, image = torch.randn(2, 5, 32), torch.randn(2, 5, 16), torch.randn(2, 16, 8)
for _ in range(3):
    y = encoder(x)
    out, h = gru(s)
    g = norm(image)
    target = torch.zeros_like(g)
    loss = smooth(g, target) + l1(g, target) + huber(g, target)
encoder.eval()
with torch.no_grad():       # torch's fast path, were it taken: _transformer_encoder_layer_fwd
    encoder(x)
"""


def _capture(tmp_path, source: str) -> Program:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(source), encoding="utf-8")
    out = tmp_path / "program.json"
    status = run_capture(Interpreter(sys.executable, False), [str(script)], out,
                         max_calls=10_000, steps=None)
    assert status == 0
    return Program.from_json(json.loads(out.read_text(encoding="utf-8")))


def test_layers_with_no_function_form_are_captured_as_the_calls_they_make(tmp_path):
    program = _capture(tmp_path, LAYERS)
    apis = [c.api for c in program.calls]
    for layer in ("TransformerEncoder", "TransformerEncoderLayer", "MultiheadAttention",
                  "GRU", "GroupNorm", "SmoothL1Loss", "L1Loss", "HuberLoss"):
        assert f"torch.nn.{layer}" not in apis
    assert not any("no function form" in (c.problem or "") for c in program.calls)
    # the encoder's layers that lower, its attention's function, and the leaves' functions
    # 2 layers x 4 encoder calls: 2 Linear (feed-forward) + 2 LayerNorm each
    assert apis.count("torch.nn.Linear") == 16 and apis.count("torch.nn.LayerNorm") == 16
    assert apis.count("torch.nn.functional.multi_head_attention_forward") == 8
    assert apis.count("torch.gru") == 3
    assert apis.count("torch.nn.functional.group_norm") == 3
    for loss in ("smooth_l1_loss", "l1_loss", "huber_loss"):
        assert apis.count(f"torch.nn.functional.{loss}") == 3
    huber = next(c for c in program.calls if c.api == "torch.nn.functional.huber_loss")
    assert ("delta", Lit(0.5)) in huber.kwargs          # the layer's setting, as it passed it
    # under the tracer's function mode torch takes no fast path (has_torch_function is
    # true with a mode on): the eval-mode, no-grad encoder call made the same calls
    assert not any("_transformer_encoder_layer_fwd" in a or "_native_multi_head" in a
                   for a in apis)
    assert all(c.replay_api is not None for c in program.calls
               if c.api in ("torch.gru", "torch.nn.functional.group_norm"))

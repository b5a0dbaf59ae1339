"""The timed step written out as Python (opbench/model/replay/compiled_step.py) in real
torch and MindSpore: the same results as the executor's loop, on a torch training step
(backward, an update under no_grad) and a MindSpore forward step."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from opbench.frameworks.apimap import load_mapping
from opbench.model.program import Call, Ext, ExternalTensor, Lit, Ref
from opbench.model.replay.executor import Replayer
from opbench.model.steady import StepProgram

HIDDEN = ("tensor", (4, 8), "float32")
SCALAR = ("tensor", (), "float32")
EXTERNALS = (ExternalTensor(0, (4, 16), "float32", "input"),
             ExternalTensor(1, (16, 8), "float32", "parameter", "w"),
             ExternalTensor(2, (8,), "float32", "parameter", "b"))


def _call(index, framework, api, *args, outputs=HIDDEN, kind="function", **fields):
    return Call(index=index, framework=framework, api=api, kind=kind, replay_api=api,
                args=tuple(args), kwargs=(), outputs=outputs, duration_ns=1000, start_ns=0,
                **fields)


def _step(framework, *calls):
    n = len(calls)
    return StepProgram(framework, tuple(calls), EXTERNALS, steps=3, traced_ns=(1000,) * n,
                       step_traced_ns=(1000 * n,) * 3, source_index=tuple(range(n)))


def _both(step, framework, adapter):
    """The step replayed twice by the written-out step and twice by the loop."""
    players = []
    for compiled in (True, False):
        player = Replayer(step, framework, adapter, load_mapping())
        player.probe(fingerprints=False)
        assert all(s.ok and not s.stand_in for s in player.status), player.status
        assert player._compiled is not None
        if not compiled:
            player._compiled = None
        player.time_script_steps(2)
        players.append(player)
    return players


def test_a_torch_training_step_written_out_leaves_the_loops_results_and_gradients():
    torch = pytest.importorskip("torch")
    from opbench.frameworks import get_adapter
    adapter = get_adapter("torch")
    adapter.setup("cpu", 1)
    fw = "torch"
    step = _step(fw,
                 _call(0, fw, "torch.matmul", Ext(0), Ext(1)),
                 _call(1, fw, "torch.Tensor.__add__", Ref(0), Ext(2), kind="tensor_method"),
                 _call(2, fw, "torch.relu", Ref(1)),
                 _call(3, fw, "torch.Tensor.sum", Ref(2), outputs=SCALAR,
                       kind="tensor_method"),
                 _call(4, fw, "torch.Tensor.backward", Ref(3), outputs=("none",),
                       kind="tensor_method", backward=True),
                 _call(5, fw, "torch.Tensor.__mul__", Ref(2), Lit(0.5), kind="tensor_method",
                       grad_enabled=False))
    written, loop = _both(step, fw, adapter)
    assert "set_grad(False)" in written._compiled.source
    assert torch.is_grad_enabled()                  # back on after the step
    np.testing.assert_array_equal(written._results[5].numpy(), loop._results[5].numpy())
    assert not written._results[5].requires_grad    # made with grad mode off
    for e in (1, 2):
        np.testing.assert_allclose(written._externals[e].grad.numpy(),
                                   loop._externals[e].grad.numpy(), rtol=1e-6)
    assert [r is None for r in written._results] == [r is None for r in loop._results]


def test_a_mindspore_forward_step_written_out_leaves_the_loops_results():
    pytest.importorskip("mindspore")
    from opbench.frameworks import get_adapter
    adapter = get_adapter("mindspore")
    adapter.setup("cpu", 1)
    fw = "mindspore"
    inputs = tuple(replace(e, role="input") for e in EXTERNALS)
    step = replace(_step(fw,
                         _call(0, fw, "mindspore.mint.matmul", Ext(0), Ext(1)),
                         _call(1, fw, "mindspore.mint.add", Ref(0), Ext(2)),
                         _call(2, fw, "mindspore.mint.nn.functional.relu", Ref(1)),
                         _call(3, fw, "mindspore.mint.mul", Ref(2), Ref(0))),
                   externals=inputs)
    written, loop = _both(step, fw, adapter)
    np.testing.assert_array_equal(written._results[3].asnumpy(), loop._results[3].asnumpy())
    x, w, b = (written._externals[e].asnumpy() for e in (0, 1, 2))
    h = x @ w
    np.testing.assert_allclose(written._results[3].asnumpy(), np.maximum(h + b, 0) * h,
                               rtol=1e-5, atol=1e-6)

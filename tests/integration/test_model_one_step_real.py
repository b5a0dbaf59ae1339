"""What nn.TrainOneStepCell's step calls besides its network, with real torch and MindSpore:
ops.SparseSoftmaxCrossEntropyWithLogits replayed in torch (opbench/model/replay/
mindspore_to_torch.py) gives MindSpore's values, and the grad reducer's Identity on the
gradients' tuple and ops.depend(loss, optimizer(grads)) are aliases (opbench/model/capture/
observer.py, lowering.py PASS_THROUGH) in both frameworks' replays: a value_and_grad step
written with them is covered whole, its outputs agreeing call by call."""
from __future__ import annotations

import importlib
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
ms = pytest.importorskip("mindspore")

from test_model_real import _projected, _script  # noqa: E402

from opbench.frameworks.apimap import ApiMapping  # noqa: E402
from opbench.model.program import Call, Ext, Program, Seq  # noqa: E402
from opbench.model.replay.routes import route_for  # noqa: E402

pytestmark = pytest.mark.integration

SPARSE_CE = "mindspore.ops.SparseSoftmaxCrossEntropyWithLogits"


def _torch_resolve(name: str):
    module, _, attribute = name.rpartition(".")
    return getattr(importlib.import_module(module), attribute)


@pytest.mark.parametrize("batch, classes", [(2, 5), (64, 10), (7, 1000)])
def test_the_sparse_cross_entropy_primitive_in_torch_equals_mindspores(batch, classes):
    rng = np.random.default_rng(batch * classes)
    logits = (rng.standard_normal((batch, classes)) * 4).astype(np.float32)
    labels = rng.integers(0, classes, batch).astype(np.int32)
    ms.set_device("CPU")
    expected = ms.ops.SparseSoftmaxCrossEntropyWithLogits()(ms.Tensor(logits),
                                                             ms.Tensor(labels)).asnumpy()
    call = Call(index=0, framework="mindspore", api=SPARSE_CE, kind="primitive",
                replay_api=SPARSE_CE, args=(Ext(0), Ext(1)), kwargs=(),
                outputs=("tensor", (), "float32"), duration_ns=1, start_ns=0,
                init=(("is_grad", False),))
    route = route_for(call, "torch", ApiMapping([]))
    got = route.make(_torch_resolve)(torch.from_numpy(logits), torch.from_numpy(labels))
    assert got.shape == expected.shape == ()
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-6)


ONE_STEP_PARTS = """
import mindspore as ms
import numpy as np
from mindspore import Tensor, mint, nn, ops

ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")
ms.set_seed(0)
np.random.seed(0)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(16, 8)
        self.loss = ops.SparseSoftmaxCrossEntropyWithLogits()

    def construct(self, x, y):
        return self.loss(self.fc(x), y)


net = Net()
optimizer = nn.SGD(net.trainable_params(), learning_rate=0.1)
grad_reducer = mint.nn.Identity()          # what TrainOneStepCell's reducer is on one device
grad_fn = ms.value_and_grad(net, None, optimizer.parameters)
x = Tensor(np.random.randn(32, 16).astype(np.float32))
y = Tensor(np.random.randint(0, 8, (32,)).astype(np.int32))
for _ in range(8):
    loss, grads = grad_fn(x, y)
    grads = grad_reducer(grads)
    loss = ops.depend(loss, optimizer(grads))
    print(float(loss.asnumpy()))
"""


def test_a_step_with_a_reducers_identity_and_depend_is_covered_whole_in_both(tmp_path):
    model, _ = _projected(tmp_path, _script(tmp_path, "one_step_parts.py", ONE_STEP_PARTS))
    assert model["traced_framework"] == "mindspore"
    assert model["errors"] == [] and model["mismatches"] == [], model
    assert model["not_covered"] == [], model["not_covered"]
    assert model["coverage"] == pytest.approx(1.0)
    assert model["stand_in_share"] == {"torch": 0.0, "mindspore": 0.0}
    mapped = {row["api"]: row["mapped_api"] for row in model["apis"]}
    assert mapped[SPARSE_CE].startswith("torch.nn.functional.cross_entropy")
    # the aliases are no rows of their own: they compute nothing in either framework
    assert not {"mindspore.mint.nn.Identity", "mindspore.ops.Depend",
                "mindspore.ops.depend"} & set(mapped)
    # ... and they were captured as aliases: the Identity of the gradients' tuple, the depend
    # of the loss
    program = Program.from_json(json.loads((tmp_path / "work" / "program.json").read_text()))
    aliases = {c.api: c.alias_of for c in program.calls if c.alias_of is not None}
    assert isinstance(aliases.pop("mindspore.mint.nn.Identity"), Seq)
    assert list(aliases) in (["mindspore.ops.Depend"], ["mindspore.ops.depend"])

"""MindSpore: an nn.GRU (batch_first) sequence model whose readout is a batched matmul
(mint.bmm against the broadcast readout; ops.einsum has no CPU kernel in MindSpore 2.10:
"Unsupported op [Einsum] on CPU"), trained with mindspore.value_and_grad and nn.Adam
(PyNative, CPU)."""
import mindspore as ms
import numpy as np
from mindspore import Parameter, Tensor, mint, nn

ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")
ms.set_seed(0)
np.random.seed(0)


class GRURegressor(nn.Cell):
    def __init__(self, features=16, hidden=32):
        super().__init__()
        self.gru = nn.GRU(features, hidden, num_layers=1, batch_first=True)
        self.readout = Parameter(Tensor(np.random.randn(hidden, 4).astype(np.float32) * 0.1))

    def construct(self, x):
        outputs, _ = self.gru(x)
        readout = mint.broadcast_to(self.readout, (outputs.shape[0],) + self.readout.shape)
        return mint.bmm(outputs, readout).mean(axis=1)


model = GRURegressor()
optimizer = nn.Adam(model.trainable_params(), learning_rate=1e-3)
loss_fn = nn.MSELoss()
x = Tensor(np.random.randn(8, 20, 16).astype(np.float32))
y = Tensor(np.random.randn(8, 4).astype(np.float32))


def forward_fn(data, target):
    return loss_fn(model(data), target)


grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters)

for step in range(8):
    value, grads = grad_fn(x, y)
    optimizer(grads)
    print(f"step {step} loss {value.asnumpy():.5f}")

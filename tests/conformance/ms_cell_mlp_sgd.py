"""MindSpore, the nn.Cell style: an MLP of nn.Dense layers, a loss function,
mindspore.value_and_grad over the trainable parameters and nn.SGD with momentum, as the
MindSpore tutorials write a training step (PyNative, CPU)."""
import mindspore as ms
import numpy as np
from mindspore import Tensor, nn

ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")
ms.set_seed(0)
np.random.seed(0)


class MLP(nn.Cell):
    def __init__(self):
        super().__init__()
        self.body = nn.SequentialCell(nn.Dense(32, 64), nn.ReLU(), nn.Dense(64, 64), nn.Tanh(),
                                      nn.Dense(64, 1))

    def construct(self, x):
        return self.body(x)


model = MLP()
loss_fn = nn.MSELoss()
optimizer = nn.SGD(model.trainable_params(), learning_rate=0.01, momentum=0.9)
x = Tensor(np.random.randn(64, 32).astype(np.float32))
y = Tensor(np.random.randn(64, 1).astype(np.float32))


def forward_fn(data, target):
    return loss_fn(model(data), target)


grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters)

for step in range(8):
    loss, grads = grad_fn(x, y)
    optimizer(grads)
    print(f"step {step} loss {loss.asnumpy():.5f}")

"""MindSpore: a training step compiled with @mindspore.jit (value_and_grad and nn.Momentum
inside it), as MindSpore's docs recommend for speed; an nn.Dense MLP."""
import mindspore as ms
import numpy as np
from mindspore import Tensor, nn

ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")
ms.set_seed(0)
np.random.seed(0)

model = nn.SequentialCell(nn.Dense(32, 64), nn.ReLU(), nn.Dense(64, 10))
loss_fn = nn.CrossEntropyLoss()
optimizer = nn.Momentum(model.trainable_params(), learning_rate=0.05, momentum=0.9)
x = Tensor(np.random.randn(64, 32).astype(np.float32))
y = Tensor(np.random.randint(0, 10, (64,)).astype(np.int32))


def forward_fn(data, label):
    return loss_fn(model(data), label)


grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters)


@ms.jit
def train_step(data, label):
    loss, grads = grad_fn(data, label)
    optimizer(grads)
    return loss


for step in range(6):
    loss = train_step(x, y)
    print(f"step {step} loss {loss.asnumpy():.4f}")

"""MindSpore: value_and_grad with has_aux=True (the loss and the logits out, gradients of the
loss only) and a hand-written SGD update with ops.assign, a Cell classifier of mint.nn.Linear
layers."""
import mindspore as ms
import numpy as np
from mindspore import Tensor, mint, nn, ops

ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")
ms.set_seed(0)
np.random.seed(0)


class Classifier(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = mint.nn.Linear(20, 48)
        self.fc2 = mint.nn.Linear(48, 4)

    def construct(self, x):
        return self.fc2(mint.nn.functional.relu(self.fc1(x)))


model = Classifier()
params = model.trainable_params()
x = Tensor(np.random.randn(32, 20).astype(np.float32))
y = Tensor(np.random.randint(0, 4, (32,)).astype(np.int32))
lr = 0.1


def forward_fn(data, label):
    logits = model(data)
    loss = ops.cross_entropy(logits, label)
    return loss, logits


grad_fn = ms.value_and_grad(forward_fn, None, params, has_aux=True)

for step in range(6):
    (loss, logits), grads = grad_fn(x, y)
    for p, g in zip(params, grads):
        ops.assign(p, p - lr * g)
    accuracy = (logits.argmax(-1) == y).astype(ms.float32).mean()
    print(f"step {step} loss {loss.asnumpy():.4f} accuracy {accuracy.asnumpy():.3f}")

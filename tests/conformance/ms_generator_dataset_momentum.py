"""MindSpore, the dataset style: batches from mindspore.dataset.GeneratorDataset(...).batch()
iterated with create_tuple_iterator, an nn.Cell with nn.Dense and nn.BatchNorm1d,
nn.CrossEntropyLoss, value_and_grad and
nn.Momentum, as the MindSpore quick start writes an epoch (PyNative, CPU)."""
import mindspore as ms
import mindspore.dataset as ds
import numpy as np
from mindspore import nn

ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")
ms.set_seed(0)
rng = np.random.default_rng(0)
FEATURES = rng.standard_normal((192, 40)).astype(np.float32)
LABELS = rng.integers(0, 4, size=192).astype(np.int32)


def samples():
    for x, y in zip(FEATURES, LABELS):
        yield x, y


dataset = ds.GeneratorDataset(samples, column_names=["x", "y"], shuffle=False).batch(32)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(40, 128)
        self.bn = nn.BatchNorm1d(128)
        self.relu = nn.ReLU()
        self.fc2 = nn.Dense(128, 4)

    def construct(self, x):
        return self.fc2(self.relu(self.bn(self.fc1(x))))


model = Net()
model.set_train()
loss_fn = nn.CrossEntropyLoss()
optimizer = nn.Momentum(model.trainable_params(), learning_rate=0.05, momentum=0.9)


def forward_fn(x, y):
    return loss_fn(model(x), y)


grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters)

for step, (x, y) in enumerate(dataset.create_tuple_iterator()):
    loss, grads = grad_fn(x, y)
    optimizer(grads)
    print(f"step {step} loss {loss.asnumpy():.4f}")

"""MindSpore, the nn.Cell style: a CNN (nn.Conv2d, nn.BatchNorm2d, nn.ReLU, nn.MaxPool2d,
nn.Flatten, nn.Dense) trained with nn.CrossEntropyLoss, value_and_grad and nn.Adam, as the
MindSpore image-classification quick start writes it."""
import mindspore as ms
import numpy as np
from mindspore import Tensor, nn

ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")
ms.set_seed(0)
np.random.seed(0)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.features = nn.SequentialCell(
            nn.Conv2d(3, 8, 3, pad_mode="same"), nn.BatchNorm2d(8), nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
            nn.Conv2d(8, 16, 3, pad_mode="same"), nn.BatchNorm2d(16), nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
        )
        self.flatten = nn.Flatten()
        self.classifier = nn.Dense(16 * 4 * 4, 10)

    def construct(self, x):
        return self.classifier(self.flatten(self.features(x)))


net = Net()
net.set_train(True)
loss_fn = nn.CrossEntropyLoss()
optimizer = nn.Adam(net.trainable_params(), learning_rate=1e-3)
images = Tensor(np.random.randn(8, 3, 16, 16).astype(np.float32))
labels = Tensor(np.random.randint(0, 10, (8,)).astype(np.int32))


def forward_fn(data, label):
    logits = net(data)
    return loss_fn(logits, label)


grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters)


def train_step(data, label):
    loss, grads = grad_fn(data, label)
    optimizer(grads)
    return loss


for step in range(6):
    loss = train_step(images, labels)
    print(f"step {step} loss {loss.asnumpy():.4f}")

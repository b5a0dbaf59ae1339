"""MindSpore, the wrapper-cell style of its model zoo: nn.WithLossCell(net, loss) wrapped in
nn.TrainOneStepCell(net_with_loss, nn.AdamWeightDecay(...)), called once a step (PyNative,
CPU): an MLP of Dense + LayerNorm + GELU, SoftmaxCrossEntropyWithLogits(sparse=True)."""
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
        self.fc1 = nn.Dense(64, 128)
        self.norm = nn.LayerNorm((128,))
        self.act = nn.GELU()
        self.fc2 = nn.Dense(128, 10)

    def construct(self, x):
        return self.fc2(self.act(self.norm(self.fc1(x))))


net = Net()
loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
optimizer = nn.AdamWeightDecay(net.trainable_params(), learning_rate=1e-3, weight_decay=0.01)
train_step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), optimizer)
train_step.set_train()
x = Tensor(np.random.randn(64, 64).astype(np.float32))
y = Tensor(np.random.randint(0, 10, (64,)).astype(np.int32))

for step in range(8):
    value = train_step(x, y)
    print(f"step {step} loss {value.asnumpy():.5f}")

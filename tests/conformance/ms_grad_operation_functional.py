"""MindSpore, functional with ops.GradOperation: `grad_fn = ops.GradOperation(get_by_list=True)(
net_with_loss, weights)` taken once, called each step (the network's forward runs inside it),
and a hand-written SGD update with ops.assign (PyNative, CPU): an MLP of nn.Dense and ops.relu,
ops.cross_entropy as the loss."""
import mindspore as ms
import numpy as np
from mindspore import Tensor, nn, ops

ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")
ms.set_seed(0)
np.random.seed(0)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(32, 64)
        self.fc2 = nn.Dense(64, 64)
        self.head = nn.Dense(64, 5)

    def construct(self, x):
        return self.head(ops.relu(self.fc2(ops.relu(self.fc1(x)))))


class NetWithLoss(nn.Cell):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def construct(self, x, y):
        return ops.cross_entropy(self.net(x), y)


net = Net()
net_with_loss = NetWithLoss(net)
weights = ms.ParameterTuple(net.trainable_params())
grad_fn = ops.GradOperation(get_by_list=True)(net_with_loss, weights)
x = Tensor(np.random.randn(32, 32).astype(np.float32))
y = Tensor(np.random.randint(0, 5, (32,)).astype(np.int32))
learning_rate = 0.05

for step in range(8):
    grads = grad_fn(x, y)
    for weight, grad in zip(weights, grads):
        ops.assign(weight, weight - learning_rate * grad)
print(f"loss after 8 steps {net_with_loss(x, y).asnumpy():.5f}")

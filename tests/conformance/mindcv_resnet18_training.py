"""mindcv (MindSpore's model library, 0.3.0): a resnet18 made with create_model, its loss
from create_loss and its optimizer from create_optimizer, trained on one random batch with
value_and_grad, as mindcv's own training loop (train.py) composes them; PyNative on CPU,
no pretrained weights. Runs in the pinned venv /work/envs/mindcv (mindspore 2.10.0,
numpy<2, mindcv 0.3.0)."""
import mindspore as ms
import numpy as np
from mindspore import Tensor

from mindcv.loss import create_loss
from mindcv.models import create_model
from mindcv.optim import create_optimizer

ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")
ms.set_seed(0)
np.random.seed(0)

network = create_model("resnet18", num_classes=10, pretrained=False)
network.set_train(True)
loss_fn = create_loss(name="CE", label_smoothing=0.1)
optimizer = create_optimizer(network.trainable_params(), opt="momentum", lr=0.01,
                             momentum=0.9, weight_decay=1e-4)
images = Tensor(np.random.randn(2, 3, 32, 32).astype(np.float32))
labels = Tensor(np.random.randint(0, 10, (2,)).astype(np.int32))


def forward_fn(data, label):
    return loss_fn(network(data), label)


grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters)

for step in range(5):
    loss, grads = grad_fn(images, labels)
    optimizer(grads)
    print(f"step {step} loss {loss.asnumpy():.4f}")

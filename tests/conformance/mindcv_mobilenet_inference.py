"""mindcv (MindSpore's model library, 0.3.0): mobilenet_v3_small_100 made with create_model,
classifying a batch of images in eval mode, as mindcv's validate.py runs a model; PyNative on
CPU, no pretrained weights. Runs in the pinned venv /work/envs/mindcv (mindspore 2.10.0,
numpy<2, mindcv 0.3.0)."""
import mindspore as ms
import numpy as np
from mindspore import Tensor, ops

from mindcv.models import create_model

ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")
ms.set_seed(0)
np.random.seed(0)

network = create_model("mobilenet_v3_small_100", num_classes=10, pretrained=False)
network.set_train(False)
images = Tensor(np.random.randn(2, 3, 64, 64).astype(np.float32))

for step in range(5):
    logits = network(images)
    probs = ops.softmax(logits, axis=-1)
    print(f"step {step} classes {probs.argmax(-1).asnumpy().tolist()}")

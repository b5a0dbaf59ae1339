"""MindSpore, the functional style with mint (torch-like names): an MLP mixer block written
with mint.matmul, mint.nn.functional.relu / softmax, mint.cat, mint.split, mint.mean,
mint.transpose, on bare Tensors; inference."""
import mindspore as ms
import numpy as np
from mindspore import Tensor, mint

ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")
np.random.seed(0)


def weight(*shape):
    return Tensor((np.random.randn(*shape) * 0.05).astype(np.float32))


x = Tensor(np.random.randn(4, 16, 32).astype(np.float32))
w_token, w_channel_in, w_channel_out = weight(16, 16), weight(32, 128), weight(128, 32)
bias = weight(128)

for step in range(6):
    tokens_mixed = mint.transpose(mint.matmul(w_token, x), 1, 2)        # 4x32x16
    h = mint.transpose(tokens_mixed, 1, 2) + x
    inner = mint.nn.functional.relu(mint.matmul(h, w_channel_in) + bias)
    first, second = mint.split(inner, 64, dim=-1)
    gated = first * mint.sigmoid(second)
    out = mint.matmul(mint.cat([gated, gated], dim=-1), w_channel_out) + h
    probs = mint.nn.functional.softmax(mint.mean(out, dim=1), dim=-1)
    print(f"step {step} max prob {probs.max().asnumpy():.6f}")

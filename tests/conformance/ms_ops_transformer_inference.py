"""MindSpore, the functional style with ops, as a real port of a transformer block is
written on CPU (MindSpore 2.10's CPU has no kernel for mint's embedding, layer_norm and
gelu): ops.gather for the embedding, the ops.LayerNorm primitive, ops.gelu, mint.matmul,
ops.softmax, a causal mask with ops.masked_fill; inference under _no_grad."""
import math

import mindspore as ms
import numpy as np
from mindspore import Tensor, mint, ops

ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")
np.random.seed(0)

vocab, batch, seq, dim, heads = 300, 2, 16, 64, 4
head_dim = dim // heads


def weight(*shape):
    return Tensor((np.random.randn(*shape) * 0.05).astype(np.float32))


table = weight(vocab, dim)
w_qkv, w_out, w_fc, w_proj = weight(dim, 3 * dim), weight(dim, dim), weight(dim, 4 * dim), weight(4 * dim, dim)
gamma, beta = Tensor(np.ones(dim, np.float32)), Tensor(np.zeros(dim, np.float32))
layer_norm = ops.LayerNorm(begin_norm_axis=-1, begin_params_axis=-1, epsilon=1e-5)
future = Tensor(np.triu(np.ones((seq, seq), dtype=bool), k=1))
tokens = Tensor(np.random.randint(0, vocab, (batch, seq)).astype(np.int32))


def block(x):
    h, _, _ = layer_norm(x, gamma, beta)
    qkv = mint.matmul(h, w_qkv).reshape(batch, seq, 3, heads, head_dim)
    q, k, v = mint.permute(qkv, (2, 0, 3, 1, 4))
    scores = mint.matmul(q, mint.transpose(k, -2, -1)) / math.sqrt(head_dim)
    scores = ops.masked_fill(scores, future, float("-inf"))
    attn = ops.softmax(scores, axis=-1)
    y = mint.transpose(mint.matmul(attn, v), 1, 2).reshape(batch, seq, dim)
    x = x + mint.matmul(y, w_out)
    h, _, _ = layer_norm(x, gamma, beta)
    return x + mint.matmul(ops.gelu(mint.matmul(h, w_fc)), w_proj)


with ms._no_grad():
    for step in range(6):
        out = block(ops.gather(table, tokens, 0))
        print(f"step {step} out {ops.abs(out).mean().asnumpy():.6f}")

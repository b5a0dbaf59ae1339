"""The encoder of torch_model.py ported to MindSpore (PyNative), same math, same names.

MindSpore 2.10 on CPU has no kernel for mint's embedding, layer_norm and gelu, so the port
uses what does run there: ops.gather for the embeddings, the ops.LayerNorm primitive and
ops.gelu (and ops.arange: mint.arange has no CPU kernel either). The rest is mint (matmul,
softmax, permute, transpose) and mint.nn.Linear.
Parameters are named like torch's state_dict ("layers.0.ln1.weight", not MindSpore's
gamma/beta), so both ports load one weights.make_weights() dictionary.
"""
from __future__ import annotations

import math

import mindspore as ms
import numpy as np
from mindspore import Parameter, Tensor, mint, nn, ops

from weights import EncoderConfig, check_names


class Embedding(nn.Cell):
    def __init__(self, rows: int, width: int):
        super().__init__()
        self.weight = Parameter(Tensor(np.zeros((rows, width), np.float32)), name="weight")

    def construct(self, ids: Tensor) -> Tensor:
        return ops.gather(self.weight, ids, 0)


class LayerNorm(nn.Cell):
    """torch.nn.LayerNorm over the last axis, with torch's parameter names."""

    def __init__(self, width: int, eps: float):
        super().__init__()
        self.weight = Parameter(Tensor(np.ones(width, np.float32)), name="weight")
        self.bias = Parameter(Tensor(np.zeros(width, np.float32)), name="bias")
        self.norm = ops.LayerNorm(begin_norm_axis=-1, begin_params_axis=-1, epsilon=eps)

    def construct(self, x: Tensor) -> Tensor:
        normalised, _mean, _rstd = self.norm(x, self.weight, self.bias)
        return normalised


class SelfAttention(nn.Cell):
    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.heads = config.heads
        self.head_dim = config.head_dim
        self.qkv = mint.nn.Linear(config.hidden, 3 * config.hidden)
        self.proj = mint.nn.Linear(config.hidden, config.hidden)

    def construct(self, x: Tensor) -> Tensor:
        batch, seq, hidden = x.shape
        # (batch, seq, 3, heads, head_dim) -> (3, batch, heads, seq, head_dim)
        qkv = self.qkv(x).reshape(batch, seq, 3, self.heads, self.head_dim)
        qkv = mint.permute(qkv, (2, 0, 3, 1, 4))
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = mint.matmul(q, mint.transpose(k, -2, -1)) / math.sqrt(self.head_dim)
        context = mint.matmul(mint.softmax(scores, dim=-1), v)
        return self.proj(mint.transpose(context, 1, 2).reshape(batch, seq, hidden))


class MLP(nn.Cell):
    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.fc1 = mint.nn.Linear(config.hidden, config.ffn)
        self.fc2 = mint.nn.Linear(config.ffn, config.hidden)

    def construct(self, x: Tensor) -> Tensor:
        return self.fc2(ops.gelu(self.fc1(x), approximate="none"))   # exact (erf) GELU


class Block(nn.Cell):
    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.ln1 = LayerNorm(config.hidden, config.eps)
        self.attn = SelfAttention(config)
        self.ln2 = LayerNorm(config.hidden, config.eps)
        self.mlp = MLP(config)

    def construct(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Encoder(nn.Cell):
    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.embed = Embedding(config.vocab, config.hidden)
        self.pos_embed = Embedding(config.seq, config.hidden)
        self.layers = nn.CellList([Block(config) for _ in range(config.layers)])
        self.final_norm = LayerNorm(config.hidden, config.eps)

    def construct(self, tokens: Tensor) -> Tensor:
        positions = ops.arange(0, tokens.shape[1], dtype=ms.int32)
        x = self.embed(tokens) + self.pos_embed(positions)
        for block in self.layers:
            x = block(x)
        return self.final_norm(x)


def load_weights(model: nn.Cell, weights: dict[str, np.ndarray]) -> None:
    parameters = dict(model.parameters_and_names())
    check_names(weights, set(parameters))
    for name, parameter in parameters.items():
        parameter.set_data(Tensor(weights[name]))

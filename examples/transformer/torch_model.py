"""A small pre-LN transformer encoder in torch.nn (inference).

embedding + learned positions -> N x [x + attn(ln1(x)); x + mlp(ln2(x))] -> final LayerNorm.
Attention comes in two variants with the same math: written out with matmul and softmax
("matmul"), or one F.scaled_dot_product_attention call ("sdpa").
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from weights import EncoderConfig, check_names

ATTENTION_VARIANTS = ("matmul", "sdpa")


class SelfAttention(nn.Module):
    def __init__(self, config: EncoderConfig, variant: str):
        super().__init__()
        if variant not in ATTENTION_VARIANTS:
            raise ValueError(f"attention variant {variant!r}: expected one of "
                             f"{ATTENTION_VARIANTS}")
        self.heads = config.heads
        self.head_dim = config.head_dim
        self.variant = variant
        self.qkv = nn.Linear(config.hidden, 3 * config.hidden)
        self.proj = nn.Linear(config.hidden, config.hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, hidden = x.shape
        # (batch, seq, 3, heads, head_dim) -> (3, batch, heads, seq, head_dim)
        qkv = self.qkv(x).reshape(batch, seq, 3, self.heads, self.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        if self.variant == "sdpa":
            context = F.scaled_dot_product_attention(q, k, v)
        else:
            scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
            context = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.proj(context.transpose(1, 2).reshape(batch, seq, hidden))


class MLP(nn.Module):
    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.fc1 = nn.Linear(config.hidden, config.ffn)
        self.fc2 = nn.Linear(config.ffn, config.hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x)))   # exact (erf) GELU


class Block(nn.Module):
    def __init__(self, config: EncoderConfig, variant: str):
        super().__init__()
        self.ln1 = nn.LayerNorm(config.hidden, eps=config.eps)
        self.attn = SelfAttention(config, variant)
        self.ln2 = nn.LayerNorm(config.hidden, eps=config.eps)
        self.mlp = MLP(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Encoder(nn.Module):
    def __init__(self, config: EncoderConfig, variant: str = "matmul"):
        super().__init__()
        self.embed = nn.Embedding(config.vocab, config.hidden)
        self.pos_embed = nn.Embedding(config.seq, config.hidden)
        self.layers = nn.ModuleList(Block(config, variant) for _ in range(config.layers))
        self.final_norm = nn.LayerNorm(config.hidden, eps=config.eps)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1])
        x = self.embed(tokens) + self.pos_embed(positions)
        for block in self.layers:
            x = block(x)
        return self.final_norm(x)


def load_weights(model: nn.Module, weights: dict[str, np.ndarray]) -> None:
    check_names(weights, set(model.state_dict()))
    model.load_state_dict({name: torch.from_numpy(array) for name, array in weights.items()})

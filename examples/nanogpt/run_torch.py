"""A nanoGPT-style causal transformer (the shape of Karpathy's nanoGPT model.py) written in
torch.nn, random weights: inference, eval mode, no_grad, one thread.

    python examples/nanogpt/run_torch.py --steps 10 [--attention manual]

Prints the next-token logits' checksum and the median and mean step times of the timed steps (2
warm-up steps come first and are not timed).
"""
from __future__ import annotations

import argparse
import math
import statistics
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

WARMUP_STEPS = 2
# nanoGPT's two attention paths: one causal scaled_dot_product_attention call ("sdpa", its
# "flash" path) or matmul, a -inf mask over the future and softmax written out ("manual").
ATTENTION_VARIANTS = ("sdpa", "manual")


@dataclass(frozen=True)
class GPTConfig:
    block_size: int = 128     # the longest context, and the sequence run here
    vocab_size: int = 50304   # GPT-2's 50257 rounded up to a multiple of 64, as nanoGPT does
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 256
    batch: int = 1


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig, variant: str):
        super().__init__()
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.variant = variant
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)
        causal = torch.tril(torch.ones(config.block_size, config.block_size))
        self.register_buffer("bias", causal.view(1, 1, config.block_size, config.block_size),
                             persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, channels = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        head_dim = channels // self.n_head
        q = q.view(batch, seq, self.n_head, head_dim).transpose(1, 2)
        k = k.view(batch, seq, self.n_head, head_dim).transpose(1, 2)
        v = v.view(batch, seq, self.n_head, head_dim).transpose(1, 2)
        if self.variant == "sdpa":
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(head_dim))
            att = att.masked_fill(self.bias[:, :, :seq, :seq] == 0, float("-inf"))
            y = F.softmax(att, dim=-1) @ v
        y = y.transpose(1, 2).contiguous().view(batch, seq, channels)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, config: GPTConfig, variant: str):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config, variant)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = MLP(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config: GPTConfig, variant: str):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            h=nn.ModuleList(Block(config, variant) for _ in range(config.n_layer)),
            ln_f=nn.LayerNorm(config.n_embd),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight   # weight tying, as in GPT-2
        self.apply(self._init_weights)
        # nanoGPT's scaled init of the residual projections (GPT-2 paper).
        for name, parameter in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(parameter, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        seq = idx.size(1)
        positions = torch.arange(0, seq, dtype=torch.long)
        x = self.transformer.wte(idx) + self.transformer.wpe(positions)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        # Inference: only the last position's logits (nanoGPT's forward without targets).
        return self.lm_head(x[:, [-1], :])


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text}")
    return value


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=positive_int, default=10,
                        help="timed steps after the warm-up (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="seed of weights and tokens")
    parser.add_argument("--threads", type=positive_int, default=1,
                        help="torch.set_num_threads (default 1)")
    parser.add_argument("--attention", choices=ATTENTION_VARIANTS, default="sdpa",
                        help="causal scaled_dot_product_attention or the manual mask path")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    config = GPTConfig()
    model = GPT(config, args.attention)
    model.eval()
    generator = torch.Generator().manual_seed(args.seed + 1)
    idx = torch.randint(0, config.vocab_size, (config.batch, config.block_size),
                        generator=generator)

    step_seconds = []
    with torch.no_grad():
        for step in range(WARMUP_STEPS + args.steps):
            start = time.perf_counter()
            logits = model(idx).numpy()
            elapsed = time.perf_counter() - start
            if step >= WARMUP_STEPS:
                step_seconds.append(elapsed)

    print(f"torch {torch.__version__}, nanoGPT-style ({config.n_layer} blocks, n_embd "
          f"{config.n_embd}, seq {config.block_size}, attention {args.attention}), "
          f"{torch.get_num_threads()} thread(s)")
    print(f"logits {tuple(logits.shape)} checksum {logits.sum(dtype=np.float64):.6f} "
          f"abs {np.abs(logits).sum(dtype=np.float64):.6f}")
    print(f"median step {statistics.median(step_seconds) * 1e3:.3f} ms "
          f"({args.steps} steps after {WARMUP_STEPS} warm-up)")
    print(f"mean step {statistics.fmean(step_seconds) * 1e3:.3f} ms")


if __name__ == "__main__":
    main()

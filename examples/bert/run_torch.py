"""A small BERT encoder from `transformers`, built from a BertConfig with random weights
(nothing is downloaded): inference, eval mode, no_grad, one thread.

    python examples/bert/run_torch.py --steps 10 [--attention eager]

Prints the last hidden state's checksum and the median and mean step times of the timed steps (2
warm-up steps come first and are not timed).
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

# Build from a config only: never ask the model hub for anything (this machine has no
# network, and a script that silently fetched would measure the download).
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from transformers import BertConfig, BertModel  # noqa: E402

WARMUP_STEPS = 2
SEQ = 128
BATCH = 1
# transformers' attention implementations: one scaled_dot_product_attention call ("sdpa",
# its default) or matmul + softmax written out ("eager").
ATTENTION_VARIANTS = ("sdpa", "eager")


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
                        help="transformers' attention implementation (default sdpa)")
    return parser.parse_args()


def small_bert_config(attention: str) -> BertConfig:
    # BERT-base's vocabulary and positions, a small body: 2 layers of width 256.
    return BertConfig(hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=1024, attn_implementation=attention)


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)              # the random weights BertModel draws
    config = small_bert_config(args.attention)
    model = BertModel(config)
    model.eval()
    generator = torch.Generator().manual_seed(args.seed + 1)
    input_ids = torch.randint(0, config.vocab_size, (BATCH, SEQ), generator=generator)
    attention_mask = torch.ones(BATCH, SEQ, dtype=torch.long)

    step_seconds = []
    with torch.no_grad():
        for step in range(WARMUP_STEPS + args.steps):
            start = time.perf_counter()
            hidden = model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            output = hidden.numpy()
            elapsed = time.perf_counter() - start
            if step >= WARMUP_STEPS:
                step_seconds.append(elapsed)

    print(f"torch {torch.__version__}, BertModel ({config.num_hidden_layers} layers, hidden "
          f"{config.hidden_size}, attention {model.config._attn_implementation}), "
          f"{torch.get_num_threads()} thread(s)")
    print(f"last hidden state {tuple(output.shape)} checksum "
          f"{output.sum(dtype=np.float64):.6f} abs {np.abs(output).sum(dtype=np.float64):.6f}")
    print(f"median step {statistics.median(step_seconds) * 1e3:.3f} ms "
          f"({args.steps} steps after {WARMUP_STEPS} warm-up)")
    print(f"mean step {statistics.fmean(step_seconds) * 1e3:.3f} ms")


if __name__ == "__main__":
    main()

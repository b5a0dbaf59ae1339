"""Run the small pre-LN encoder in torch: inference, eval mode, no_grad, one thread.

    python examples/transformer/run_torch.py --steps 10 [--attention sdpa]

Prints the output's checksum and the median and mean step times of the timed steps (2 warm-up steps
come first and are not timed). --save writes the last output as .npy for check_ports.py.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from torch_model import ATTENTION_VARIANTS, Encoder, load_weights
from weights import EncoderConfig, make_tokens, make_weights

WARMUP_STEPS = 2


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
    parser.add_argument("--attention", choices=ATTENTION_VARIANTS, default="matmul",
                        help="matmul + softmax written out, or F.scaled_dot_product_attention")
    parser.add_argument("--save", metavar="PATH", help="write the last output here (.npy)")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    config = EncoderConfig()
    model = Encoder(config, args.attention)
    load_weights(model, make_weights(config, args.seed))
    model.eval()
    tokens = torch.from_numpy(make_tokens(config, args.seed))

    step_seconds = []
    with torch.no_grad():
        for step in range(WARMUP_STEPS + args.steps):
            start = time.perf_counter()
            output = model(tokens).numpy()   # CPU torch runs eagerly: the output is ready
            elapsed = time.perf_counter() - start
            if step >= WARMUP_STEPS:
                step_seconds.append(elapsed)

    print(f"torch {torch.__version__}, attention {args.attention}, "
          f"{torch.get_num_threads()} thread(s)")
    print(f"output {tuple(output.shape)} checksum {output.sum(dtype=np.float64):.6f} "
          f"abs {np.abs(output).sum(dtype=np.float64):.6f}")
    print(f"median step {statistics.median(step_seconds) * 1e3:.3f} ms "
          f"({args.steps} steps after {WARMUP_STEPS} warm-up)")
    print(f"mean step {statistics.fmean(step_seconds) * 1e3:.3f} ms")
    if args.save:
        np.save(args.save, output)


if __name__ == "__main__":
    main()

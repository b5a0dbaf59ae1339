"""Run the encoder's MindSpore port: PyNative, queued launches, inference, one kernel thread.

    GLOG_v=3 python examples/transformer/run_mindspore.py --steps 10

Prints the output's checksum and the median and mean step times of the timed steps (2 warm-up steps
come first and are not timed). --save writes the last output as .npy for check_ports.py.
"""
from __future__ import annotations

import argparse
import statistics
import time

import mindspore as ms
import numpy as np
from mindspore import Tensor

from mindspore_model import Encoder, load_weights
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
                        help="CPU kernel threads, op_tuning.threads_num (default 1)")
    parser.add_argument("--save", metavar="PATH", help="write the last output here (.npy)")
    return parser.parse_args()


def set_up_mindspore(threads: int) -> None:
    """Before any operator runs: the kernel thread count and the device are fixed once the
    runtime starts. threads_num is MindSpore's counterpart of torch.set_num_threads (its CPU
    default is 25); the launch mode stays MindSpore's default (queued, not launch_blocking)."""
    ms.device_context.cpu.op_tuning.threads_num(threads)
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_device("CPU")


def main() -> None:
    args = parse_args()
    set_up_mindspore(args.threads)
    config = EncoderConfig()
    model = Encoder(config)
    load_weights(model, make_weights(config, args.seed))
    model.set_train(False)
    tokens = Tensor(make_tokens(config, args.seed))

    step_seconds = []
    with ms._no_grad():   # MindSpore's torch.no_grad: no autograd records in PyNative
        for step in range(WARMUP_STEPS + args.steps):
            start = time.perf_counter()
            # Operators are queued: reading the output back waits for all of them
            # (mindspore.runtime.synchronize() does nothing on CPU).
            output = model(tokens).asnumpy()
            elapsed = time.perf_counter() - start
            if step >= WARMUP_STEPS:
                step_seconds.append(elapsed)

    print(f"mindspore {ms.__version__}, PyNative, queued launches, {args.threads} thread(s)")
    print(f"output {tuple(output.shape)} checksum {output.sum(dtype=np.float64):.6f} "
          f"abs {np.abs(output).sum(dtype=np.float64):.6f}")
    print(f"median step {statistics.median(step_seconds) * 1e3:.3f} ms "
          f"({args.steps} steps after {WARMUP_STEPS} warm-up)")
    print(f"mean step {statistics.fmean(step_seconds) * 1e3:.3f} ms")
    if args.save:
        np.save(args.save, output)


if __name__ == "__main__":
    main()

"""Per-call latency of one MindSpore CPU operator followed by a sync, with queued launches
(PyNative's default) and with blocking ones - the measurement behind `--launch`.

    python tools/launch_latency.py [--threads 1] [--calls 1000] [--shape 1x128x768]

Each launch mode runs in its own process (mindspore.runtime.launch_blocking() cannot be
undone). Prints the 10th/50th/90th percentile and the maximum of single-call times and how
many calls took over 3 ms, then the per-call time of the same op in an async loop.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time


def measure(blocking: bool, threads: int, calls: int, shape: tuple[int, ...]) -> dict:
    os.environ.setdefault("GLOG_v", "3")
    import mindspore as ms
    import numpy as np
    from mindspore import mint

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from opbench.frameworks.mindspore_adapter import find_pynative_executor

    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.device_context.cpu.op_tuning.threads_num(threads)
    if blocking:
        ms.runtime.launch_blocking()
    executor, _ = find_pynative_executor()
    rng = np.random.default_rng(0)
    a = ms.Tensor(rng.random(shape, dtype=np.float32))
    b = ms.Tensor(rng.random(shape, dtype=np.float32))
    for _ in range(200):          # warm-up: kernel selection, memory pool
        mint.add(a, b)
        executor.sync()
    single = []
    for _ in range(calls):
        t0 = time.perf_counter()
        mint.add(a, b)
        executor.sync()
        single.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    for _ in range(calls):
        mint.add(a, b)
    executor.sync()
    loop_per_call = (time.perf_counter() - t0) / calls
    us = np.array(single) * 1e6
    p10, p50, p90 = np.percentile(us, [10, 50, 90])
    return {"p10_us": p10, "p50_us": p50, "p90_us": p90, "max_us": float(us.max()),
            "over_3ms": int((us > 3000).sum()), "calls": calls,
            "async_loop_us_per_call": loop_per_call * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--shape", default="1x128x768")
    parser.add_argument("--child", choices=["queued", "blocking"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    shape = tuple(int(n) for n in args.shape.split("x"))
    if args.child:
        print(json.dumps(measure(args.child == "blocking", args.threads, args.calls, shape)))
        return
    print(f"mindspore.mint.add float32 {args.shape}, {args.threads} thread(s), "
          f"{args.calls} single calls each followed by a sync:")
    for mode in ("queued", "blocking"):
        done = subprocess.run([sys.executable, __file__, "--child", mode, "--threads",
                               str(args.threads), "--calls", str(args.calls), "--shape",
                               args.shape], capture_output=True, text=True, check=True)
        r = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"  {mode:8s} p10 {r['p10_us']:7.0f} us  p50 {r['p50_us']:7.0f} us  "
              f"p90 {r['p90_us']:7.0f} us  max {r['max_us']:7.0f} us  "
              f"over 3 ms: {r['over_3ms']}/{r['calls']}  | async loop "
              f"{r['async_loop_us_per_call']:.1f} us/call")


if __name__ == "__main__":
    main()

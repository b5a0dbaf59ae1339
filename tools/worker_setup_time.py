"""A worker's set-up, started alone: from spawning the process to its reply to the opening
request, one worker at a time (nothing else starting), for each kind of worker a run uses.

    python tools/worker_setup_time.py [--repeats 3] [--threads 2]

Kinds: `both` (the default pool's worker: Open, torch and MindSpore in one process),
`torch` and `mindspore` (a side worker: OpenSide, one framework), `pair` (a torch and a
MindSpore side worker started together, as a run of one process per side starts them:
until the later one is ready). The kinds alternate
within each repeat, so the host's drift hits them alike. Run it under the CPU lock: the
imports are CPU-bound and any other work on the cores lengthens them.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("GLOG_v", "3")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

KINDS = ("both", "torch", "mindspore", "pair")


def setup_seconds(kind: str, config) -> float:
    """Seconds from spawning one worker of `kind` to its answer to the opening request."""
    from opbench.runner import ipc
    from opbench.runner.workers import spawn_worker

    started = time.perf_counter()
    if kind == "both":
        workers = [spawn_worker(1)]
        workers[0].call(ipc.Open(config, (), 1))
    else:
        sides = ("torch", "mindspore") if kind == "pair" else (kind,)
        workers = [spawn_worker(1, side) for side in sides]
        for worker in workers:
            worker.send(ipc.OpenSide(config, worker.side, 1))
        for worker in workers:
            worker.receive()
    elapsed = time.perf_counter() - started
    for worker in workers:
        worker.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()

    from opbench.cli.common import build_config

    config = build_config(timing=True, processes=1, threads=args.threads)
    found: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for repeat in range(args.repeats):
        for kind in KINDS:
            found[kind].append(setup_seconds(kind, config))
            print(f"repeat {repeat + 1} {kind:10s} {found[kind][-1]:.2f} s", flush=True)
    print(f"{'worker':10s} {'min':>7s} {'median':>7s} {'max':>7s}  (spawn to ready, alone, "
          f"{config.threads} threads)")
    for kind, values in found.items():
        print(f"{kind:10s} {min(values):6.2f}s {statistics.median(values):6.2f}s "
              f"{max(values):6.2f}s")


if __name__ == "__main__":
    main()

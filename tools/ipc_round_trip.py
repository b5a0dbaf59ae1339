"""What one request costs on the worker socket: the typed records of runner/ipc.py against
the verb tuples they replaced, each sent to a forked echo process and answered, over a
multiprocessing Connection as the workers use it.

    python tools/ipc_round_trip.py [--trips 2000] [--blocks 7]

Three messages, the ones a run sends most or largest: a side's Sample (one per sample:
every round of every instance, twice) answered with its two figures; a Forward answered
with a 64x64 float32 output (the instance's output crosses once per pass); an Extend whose
record holds 4 measurements of 30 rounds answered with that record. The two encodings
alternate block by block, so the host's drift hits them alike; each block's median
microseconds per round trip, and the median over blocks, are printed. Run it under the CPU
lock.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from multiprocessing import Pipe, get_context

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402

from opbench.runner import ipc  # noqa: E402


def _instance():
    """A real CaseInstance (add 64x64 float32), as the Forward and Extend requests carry."""
    import tempfile

    from opbench.cases.case_files import expand, load_cases

    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "cases.yaml")
        with open(path, "w") as f:
            f.write("cases:\n- name: add\n  inputs:\n    x: {shape: [64, 64], dtype: float32}\n"
                    "    y: {shape: [64, 64], dtype: float32}\n"
                    "  torch: {api: torch.add, args: [$x, $y]}\n"
                    "  mindspore: {api: mindspore.ops.add, args: [$x, $y]}\n")
        return expand(load_cases([path])[0])[0]


def _record(instance) -> dict:
    rng = np.random.default_rng(0)
    return {"id": instance.id, "measurements": [
        {"mode": "serial", "loops": 512,
         "per_call_s": {"torch": rng.random(30).tolist(), "mindspore": rng.random(30).tolist()},
         "order": ["torch", "mindspore"] * 30} for _ in range(4)]}


def messages(instance) -> dict[str, tuple]:
    """name -> (typed request, typed reply, verb tuple, tuple reply)."""
    output = np.random.default_rng(1).random((64, 64), dtype=np.float32)
    record = _record(instance)
    return {
        "Sample": (ipc.Sample("forward", 512, "serial", True), ipc.Ok((1.2e-3, 1.1e-3)),
                   ("sample", "forward", 512, "serial", True), ("ok", (1.2e-3, 1.1e-3))),
        "Forward": (ipc.Forward(instance), ipc.Ok(ipc.ForwardDone(output, "f" * 64)),
                    ("forward", instance), ("ok", ("done", output, "f" * 64))),
        "Extend": (ipc.Extend(instance, record, 2), ipc.Ok(record),
                   ("extend", instance, record, 2), ("ok", record)),
    }


def _echo(conn, other_end, typed: bool, reply) -> None:
    other_end.close()        # the parent's end, inherited: else no EOF when the parent closes
    while True:
        try:
            request = ipc.receive(conn) if typed else conn.recv()
        except EOFError:
            return
        if typed:
            ipc.send(conn, reply)
        else:
            conn.send(reply)


def block_us(typed: bool, request, reply, trips: int) -> float:
    """Median microseconds per round trip over `trips`, with a fresh echo process."""
    parent, child = Pipe()
    process = get_context("fork").Process(target=_echo, args=(child, parent, typed, reply))
    process.start()
    child.close()
    times = []
    for _ in range(trips):
        started = time.perf_counter()
        if typed:
            ipc.send(parent, request)
            ipc.receive(parent)
        else:
            parent.send(request)
            parent.recv()
        times.append(time.perf_counter() - started)
    parent.close()
    process.join()
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trips", type=int, default=2000)
    parser.add_argument("--blocks", type=int, default=7)
    args = parser.parse_args()
    print(f"{'message':8s} {'tuple us':>9s} {'typed us':>9s} {'typed/tuple':>11s}  "
          f"(median of {args.blocks} blocks of {args.trips} round trips)")
    for name, (request, reply, old_request, old_reply) in messages(_instance()).items():
        old, new = [], []
        for _ in range(args.blocks):
            old.append(block_us(False, old_request, old_reply, args.trips))
            new.append(block_us(True, request, reply, args.trips))
        ratios = [n / o for n, o in zip(new, old)]
        print(f"{name:8s} {statistics.median(old):9.1f} {statistics.median(new):9.1f} "
              f"{statistics.median(ratios):11.3f}  (per block: "
              f"{min(ratios):.3f}-{max(ratios):.3f})")


if __name__ == "__main__":
    main()

"""A replay process: `python -m opbench.model.replay.main REQUEST RESULT` (pickle files).

It imports one framework only, sets it up as asked (device, threads, launch mode), replays
the step (replay.py) and writes what it found: in a probe, each call's status and output
fingerprints; in a timing run, step samples and per-call latencies. A failure is written as
the result's `error`; the exit status is 0 whenever a result was written.
"""
from __future__ import annotations

import os
import pickle
import sys
import traceback
from typing import Any

__all__ = ["main", "serve_request"]

PROBE, TIME = "probe", "time"


def serve_request(request: dict[str, Any]) -> dict[str, Any]:
    from opbench.frameworks import get_adapter
    from opbench.frameworks.apimap import load_mapping
    from opbench.model.replay.executor import Replayer
    from opbench.model.replay.paired import PAIRED, serve_paired

    framework = request["framework"]
    cpus = request.get("cpus")
    if cpus and hasattr(os, "sched_setaffinity"):
        # the cores the script had, set before the framework starts its thread pools
        os.sched_setaffinity(0, cpus)
    adapter = get_adapter(framework)
    threads = request.get("threads") or adapter.threads()
    adapter.setup(request.get("device", "cpu"), int(threads))
    if request.get("launch") == "blocking":
        adapter.block_launches()
    if request["kind"] == PAIRED:        # `opbench model --suggest`: two programs interleaved
        return {**serve_paired(request, adapter, load_mapping()), "framework": framework,
                "launch": adapter.launch(), "pid": os.getpid()}
    replayer = Replayer(request["step"], framework, adapter, load_mapping(),
                        skip=request.get("skip", ()), routes_chosen=request.get("routes"))
    fingerprints = replayer.probe(fingerprints=request["kind"] == PROBE)
    result: dict[str, Any] = {"framework": framework, "version": adapter.version(),
                              "threads": int(threads), "launch": adapter.launch(),
                              "status": replayer.status, "pid": os.getpid()}
    if request["kind"] == PROBE:
        result["fingerprints"] = fingerprints
        return result
    result["warmup_runs"] = replayer.warm_up(request.get("warmup_runs", 3),
                                             request.get("warmup_s", 0.2))
    samples: list[float] = []
    per_call: list[list[float]] = [[] for _ in replayer.status]
    for _ in range(request.get("rounds", 1)):
        samples += replayer.time_step(request.get("samples", 5))
        for i, times in enumerate(replayer.time_calls(request.get("passes", 2))):
            per_call[i] += times
    result["samples_s"] = samples
    result["per_call_s"] = per_call
    return result


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    request_path, result_path = args[0], args[1]
    with open(request_path, "rb") as handle:
        request = pickle.load(handle)
    try:
        result = serve_request(request)
    except Exception as exc:     # written back: the parent records it and goes on
        result = {"error": f"{type(exc).__name__}: {exc}",
                  "traceback": traceback.format_exc(limit=8)}
    with open(result_path, "wb") as handle:
        pickle.dump(result, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main())

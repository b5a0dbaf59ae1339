"""A replay process: `python -m opbench.model.replay.main FD`, started by the model's
pipeline through the runner's one spawn function (runner/workers.spawn_worker with this
module), answering runner/ipc.py's ReplayStep requests on the socket FD through the one
dispatcher, until Close or the parent goes away.

It imports one framework only, sets it up at its first request (pinned to the script's
cores through runner/pinning.py before the framework starts its thread pools; device,
threads, launch mode), replays the step (executor.py) and answers a ReplayResult: in a
probe, each call's status and output fingerprints; in a timing run, step samples and
per-call latencies. A later request in the same process reuses the framework as set up
(it is imported once); one asking for another set-up is refused. A failure is answered
Failed with its message; the process goes on.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Callable

from opbench.runner import ipc
from opbench.runner.pinning import pin_process

__all__ = ["main", "ReplayServer", "serve_request"]


class ReplayServer:
    """One replay process's state: its framework's adapter once set up, and the set-up it
    was given. `dispatcher` answers ReplayStep and Close."""

    def __init__(self) -> None:
        self._adapter: Any = None
        self._threads = 0
        self._setup: tuple[Any, ...] | None = None
        self.dispatcher = ipc.Dispatcher({ipc.ReplayStep: self.replay,
                                          ipc.ReplayPaired: self.paired,
                                          ipc.Close: lambda _: None})

    def _set_up(self, request: ipc.ReplayStep | ipc.ReplayPaired) -> Any:
        from opbench.frameworks import get_adapter

        wanted = (request.framework, request.device, request.threads, request.cpus,
                  request.launch)
        if self._setup is not None:
            if wanted != self._setup:
                raise ValueError(f"this replay process holds {self._setup[0]} set up as "
                                 f"{self._setup[1:]}; a request for {wanted} needs a fresh "
                                 f"process")
            return self._adapter
        if request.cpus and hasattr(os, "sched_setaffinity"):
            # the cores the script had, set before the framework starts its thread pools
            pin_process(request.cpus)
        adapter = get_adapter(request.framework)
        threads = request.threads or adapter.threads()
        adapter.setup(request.device, int(threads))
        if request.launch == "blocking":
            adapter.block_launches()
        self._adapter, self._threads, self._setup = adapter, int(threads), wanted
        return adapter

    def paired(self, request: ipc.ReplayPaired) -> ipc.PairedResult:
        """`opbench model --suggest`: a step and its swaps, interleaved (replay/paired.py)."""
        from opbench.frameworks.apimap import load_mapping
        from opbench.model.replay.paired import serve_paired

        return serve_paired(request, self._set_up(request), load_mapping())

    def replay(self, request: ipc.ReplayStep) -> ipc.ReplayResult:
        from opbench.frameworks.apimap import load_mapping
        from opbench.model.replay.executor import Replayer

        adapter = self._set_up(request)
        replayer = Replayer(request.program, request.framework, adapter, load_mapping(),
                            skip=request.skip, routes_chosen=dict(request.routes or {}))
        probe = request.kind == ipc.REPLAY_PROBE
        fingerprints = replayer.probe(fingerprints=probe)
        facts = dict(framework=request.framework, version=adapter.version(),
                     threads=self._threads, launch=adapter.launch(),
                     status=tuple(replayer.status), pid=os.getpid())
        if probe:
            return ipc.ReplayResult(**facts, fingerprints=tuple(fingerprints))
        warmup_runs = replayer.warm_up(request.warmup_runs, request.warmup_s)
        samples: list[float] = []
        per_call: list[list[float]] = [[] for _ in replayer.status]
        probes: list[float] = []
        probe_speed = speed_probe_for(adapter)
        for _ in range(request.rounds):
            samples += replayer.time_script_steps(request.samples)
            if probe_speed is not None:
                # the mode this round's per-call passes run in (speed_probe.py), set beside
                # the capture's by the self-check
                probes.append(probe_speed(adapter.sync))
            for i, times in enumerate(replayer.time_calls(request.passes)):
                per_call[i] += times
        return ipc.ReplayResult(**facts, warmup_runs=warmup_runs, samples_s=tuple(samples),
                                per_call_s=tuple(tuple(times) for times in per_call),
                                probe_s=tuple(probes))


def speed_probe_for(adapter: Any) -> Callable[[Callable[[], None]], float] | None:
    """The speed probe of the adapter's framework: MindSpore's (model/speed_probe.py), which
    runs in modes; None for torch, whose speed holds within a process, and for the unit
    tests' fake frameworks."""
    from opbench.frameworks.mindspore_adapter import MindSporeAdapter
    if isinstance(adapter, MindSporeAdapter):
        from opbench.model.speed_probe import mindspore_speed_probe
        return mindspore_speed_probe
    return None


def serve_request(request: ipc.ReplayStep) -> ipc.ReplayResult:
    """One request answered by a fresh server in this process (the unit tests' replay
    process, on fake adapters)."""
    return ReplayServer().replay(request)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    conn = ipc.connection_from_fd(int(args[0]))
    return ipc.answer_requests(conn, ReplayServer().dispatcher)


if __name__ == "__main__":
    sys.exit(main())

"""The side worker's half of a split measurement: one framework, one Session holding only
its adapter, answering the parent's per-side requests (worker_main.WorkerServer passes
them here).

The parent (workers.RemoteSession) runs the protocol: it asks each side's process to
run an instance once (outputs and the inputs' checksum come back), to take a sample of so
many loops, to warm up, to re-warm, to time its sync; the timing itself happens here, on
this process's clock, and only the figure goes back. Between requests the process blocks
on its socket: an idle side spends no CPU while the other measures.

Requests (runner/ipc.py, ipc.SIDE_REQUESTS; each answered Ok(value) by the worker):
  Forward(instance)                        -> ForwardDone(output, inputs checksum)
                                              | OperatorFailed(message)
  Backward(instance, reference_output)     -> BackwardDone(gradients) | OperatorFailed
  Sample(which, loops, mode, rewarm_first) -> (seconds for `loops` calls, this process's
                                              CPU seconds or None), re-warmed first
                                              (measure.rewarm) when `rewarm_first`
  RunWarmUp(which, mode, warmup_time_s)    -> WarmUp (calls made, steady per-call s)
  SyncCost(which)                          -> seconds
  PeakMemory()                             -> this side's peak_memory entry
  ProfileCall(which, mode, loops)          -> this side's profile entry (profiling.py)
  SideInfo()  SideOverheads()  SideCeilings()  SideCheckApis(instances)
`which` is FORWARD or BACKWARD: the instance's call, or its forward+backward callable.
"""
from __future__ import annotations

from typing import Any

from opbench.runner import inputs as inputs_mod
from opbench.runner import ipc
from opbench.runner.measure import (
                                    Side,
                                    WarmUp,
                                    rewarm,
                                    run_sample,
                                    sample_with_cpu,
                                    sync_cost_s,
                                    warm_up,
                                    )
from opbench.runner.memory import peak_memory
from opbench.runner.protocol import BACKWARD, FORWARD
from opbench.runner.session import Session, SideFailed

__all__ = ["SideServer"]


class SideServer:
    """One side's Session and the instance it holds ready (the last Forward). `handlers`
    is its table (one per request type of ipc.SIDE_REQUESTS)."""

    def __init__(self, session: Session, name: str):
        self.session, self.name = session, name
        self._arrays: dict[str, Any] = {}
        self._prepared: Any = None
        self._forward_backward: Any = None
        self._timed: dict[str, Side] = {}
        self.handlers: dict[type, ipc.Handler] = {
            ipc.Forward: self._forward,
            ipc.Backward: self._backward,
            ipc.Sample: self._sample,
            ipc.RunWarmUp: self._warm_up,
            ipc.SyncCost: self._sync_cost,
            ipc.PeakMemory: self._memory,
            ipc.ProfileCall: self._profile,
            ipc.SideInfo: lambda _: self.session.framework_info()[self.name],
            ipc.SideOverheads: lambda _: self.session.measure_overheads()[self.name],
            ipc.SideCeilings: lambda _: self.session.measure_ceilings()[self.name],
            ipc.SideCheckApis: lambda request: self.session.check_apis(request.instances),
        }

    def answer(self, request: ipc.Request) -> Any:
        """The handler's value; raises what it raises (the worker's dispatcher turns it
        into Failed), ValueError for a request a side does not answer."""
        handler = self.handlers.get(type(request))
        if handler is None:
            raise ValueError(ipc.unknown_request(request, self.handlers))
        return handler(request)

    # -- one instance ----------------------------------------------------------------------
    def _forward(self, request: ipc.Forward) -> ipc.ForwardDone | ipc.OperatorFailed:
        self._arrays = inputs_mod.generate_inputs(request.instance)
        self._prepared = self._forward_backward = None
        self._timed = {}
        try:
            self._prepared, output = self.session.forward_side(request.instance, self._arrays,
                                                               self.name)
        except SideFailed as exc:
            return ipc.OperatorFailed(str(exc))
        return ipc.ForwardDone(output, inputs_mod.inputs_checksum(self._arrays))

    def _backward(self, request: ipc.Backward) -> ipc.BackwardDone | ipc.OperatorFailed:
        try:
            self._forward_backward, grads = self.session.backward_side(
                request.instance, self._arrays, self.name, request.reference_output)
        except SideFailed as exc:
            return ipc.OperatorFailed(str(exc))
        self._timed.pop(BACKWARD, None)
        return ipc.BackwardDone(grads)

    def _side(self, which: str) -> Side:
        if which not in self._timed:
            if self._prepared is None:
                raise RuntimeError("no instance is prepared: Forward comes first")
            backward = self._forward_backward if which == BACKWARD else None
            self._timed[which] = self.session.timed_side(self.name, self._prepared, backward)
        return self._timed[which]

    def _sample(self, request: ipc.Sample) -> tuple[float, float | None]:
        """The sample (after a re-warm, when asked) and this process's CPU seconds during
        it (None on a fake clock, whose Session reads no CPU clock)."""
        side, clock = self._side(request.which), self.session.clock
        if request.rewarm_first:
            rewarm(side, request.mode, clock, max_calls=request.loops)
        cpu_clock = self.session.cpu_clock
        if cpu_clock is None:
            return run_sample(side, request.loops, request.mode, clock), None
        return sample_with_cpu(side, request.loops, request.mode, clock, cpu_clock)

    def _warm_up(self, request: ipc.RunWarmUp) -> WarmUp:
        return warm_up(self._side(request.which), request.mode, self.session.clock,
                       request.warmup_time_s)

    def _sync_cost(self, request: ipc.SyncCost) -> float:
        return sync_cost_s(self._side(request.which).sync, self.session.clock)

    def _memory(self, request: ipc.PeakMemory) -> dict[str, Any]:
        side = self._side(FORWARD)
        return peak_memory({self.name: lambda: (side.call(), side.sync())},
                           self.session.config.device)[self.name]

    def _profile(self, request: ipc.ProfileCall) -> dict[str, Any]:
        return self.session.profile_side(self._side(request.which), request.mode,
                                         request.loops)

"""The side worker's half of a split measurement: one framework, one Session holding only
its adapter, answering the parent's per-side requests (worker_main.serve passes them here).

The parent (workers.RemoteSession) runs the protocol: it asks each side's process to
run an instance once (outputs and the inputs' checksum come back), to take a sample of so
many loops, to warm up, to re-warm, to time its sync; the timing itself happens here, on
this process's clock, and only the figure goes back. Between requests the process blocks
on its socket: an idle side spends no CPU while the other measures.

Requests (each answered ("ok", value) by serve):
  ("forward", instance)                      -> ("done", output, inputs checksum)
                                                or ("failed", message)
  ("backward", instance, reference_output)   -> ("done", gradients) | ("failed", message)
  ("sample", which, loops, mode, rewarm)     -> (seconds for `loops` calls, this process's
                                                CPU seconds or None), re-warmed first
                                                (measure.rewarm) when `rewarm`
  ("warm_up", which, mode, warmup_time_s)    -> WarmUp (calls made, steady per-call s)
  ("sync_cost", which)                       -> seconds
  ("memory",)                                -> this side's peak_memory entry
  ("side_info",)  ("side_overheads",)  ("side_ceilings",)  ("side_check_apis", instances)
`which` is FORWARD or BACKWARD: the instance's call, or its forward+backward callable.
"""
from __future__ import annotations

from typing import Any, Callable

from opbench.runner import inputs as inputs_mod
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

__all__ = ["SideServer", "SIDE_REQUESTS"]
SIDE_REQUESTS = frozenset({
    "forward", "backward", "sample", "warm_up", "sync_cost", "memory",
    "side_info", "side_overheads", "side_ceilings", "side_check_apis"})


class SideServer:
    """One side's Session and the instance it holds ready (the last "forward")."""

    def __init__(self, session: Session, name: str):
        self.session, self.name = session, name
        self._arrays: dict[str, Any] = {}
        self._prepared: Any = None
        self._forward_backward: Any = None
        self._timed: dict[str, Side] = {}

    def answer(self, op: str, args: tuple) -> Any:
        handler: Callable[..., Any] = getattr(self, "_" + op)
        return handler(*args)

    # -- one instance ----------------------------------------------------------------------
    def _forward(self, instance) -> tuple:
        self._arrays = inputs_mod.generate_inputs(instance)
        self._prepared = self._forward_backward = None
        self._timed = {}
        try:
            self._prepared, output = self.session.forward_side(instance, self._arrays,
                                                               self.name)
        except SideFailed as exc:
            return ("failed", str(exc))
        return ("done", output, inputs_mod.inputs_checksum(self._arrays))

    def _backward(self, instance, reference_output) -> tuple:
        try:
            self._forward_backward, grads = self.session.backward_side(
                instance, self._arrays, self.name, reference_output)
        except SideFailed as exc:
            return ("failed", str(exc))
        self._timed.pop(BACKWARD, None)
        return ("done", grads)

    def _side(self, which: str) -> Side:
        if which not in self._timed:
            if self._prepared is None:
                raise RuntimeError("no instance is prepared: 'forward' comes first")
            backward = self._forward_backward if which == BACKWARD else None
            self._timed[which] = self.session.timed_side(self.name, self._prepared, backward)
        return self._timed[which]

    def _sample(self, which: str, loops: int, mode: str, rewarm_first: bool = False
                ) -> tuple[float, float | None]:
        """The sample (after a re-warm, when asked) and this process's CPU seconds during
        it (None on a fake clock, whose Session reads no CPU clock)."""
        side, clock = self._side(which), self.session.clock
        if rewarm_first:
            rewarm(side, mode, clock, max_calls=loops)
        cpu_clock = self.session.cpu_clock
        if cpu_clock is None:
            return run_sample(side, loops, mode, clock), None
        return sample_with_cpu(side, loops, mode, clock, cpu_clock)

    def _warm_up(self, which: str, mode: str, warmup_time_s: float) -> WarmUp:
        return warm_up(self._side(which), mode, self.session.clock, warmup_time_s)

    def _sync_cost(self, which: str) -> float:
        return sync_cost_s(self._side(which).sync, self.session.clock)

    def _memory(self) -> dict[str, Any]:
        side = self._side(FORWARD)
        return peak_memory({self.name: lambda: (side.call(), side.sync())},
                           self.session.config.device)[self.name]

    # -- the side as a whole ---------------------------------------------------------------
    def _side_info(self) -> dict[str, Any]:
        return self.session.framework_info()[self.name]

    def _side_overheads(self) -> dict[str, float]:
        return self.session.measure_overheads()[self.name]

    def _side_ceilings(self) -> dict[str, Any]:
        return self.session.measure_ceilings()[self.name]

    def _side_check_apis(self, instances) -> list[str]:
        return self.session.check_apis(instances)

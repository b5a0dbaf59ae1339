"""The one interface of the two ways of measuring: a Session in this process
(session.py) and a pool of worker processes that each hold one (workers.py). Whoever
drives a run (opbench/runloop/recorded_run.py, the pytest front door, the gate) takes a
MeasuringSession and never asks which kind it holds."""
from __future__ import annotations

from typing import Any, Mapping, Protocol, Sequence, runtime_checkable

from opbench.cases.case_files import CaseInstance
from opbench.config import RunConfig

__all__ = ["MeasuringSession", "FORWARD", "BACKWARD"]

# Which callable of an instance a side worker times (side_server.py, workers.RemoteSession):
# the instance's call, or its forward+backward.
FORWARD = "forward"
BACKWARD = "backward"


@runtime_checkable
class MeasuringSession(Protocol):
    config: RunConfig
    # Each side's per-call floor and sync cost (measure_overheads), which explain a ratio.
    overhead: Mapping[str, Mapping[str, float]]
    # Wall time of open() (both frameworks imported in every process), when it was timed.
    setup_s: float | None

    def open(self) -> None:
        """Import and set up the frameworks (raises FrameworkUnavailable/DeviceUnavailable)."""

    def close(self) -> None:
        """Release what open() took (worker processes); safe to call twice."""

    @property
    def total_passes(self) -> int:
        """Passes a run makes through the selection: each process's passes in turn."""

    def framework_info(self) -> dict[str, Any]:
        """Each framework's version, device, threads and launch mode."""

    def measure_overheads(self) -> dict[str, dict[str, float]]:
        """Each side's sync cost and dispatch floor."""

    def measure_ceilings(self) -> dict[str, dict[str, Any]]:
        """Each framework's memory bandwidth and peak FLOP/s with the run's threads."""

    def check_apis(self, instances: Sequence[CaseInstance]) -> list[str]:
        """A message naming file:line, case and framework for every API that does not
        resolve; empty when all do."""

    def run_instance(self, instance: CaseInstance) -> dict[str, Any]:
        """Pass 1 of an instance: outputs checked, calibrated, the first share of rounds;
        raw (unjudged). A failing operator is recorded in the record, never raised."""

    def extend_instance(self, instance: CaseInstance, record: dict[str, Any],
                        pass_index: int) -> dict[str, Any]:
        """Run-wide pass `pass_index` (2..total_passes): more rounds pooled in, raw."""

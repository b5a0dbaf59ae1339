"""The event model: what one traced call is, and how its arguments are described.

Argument descriptions are small NamedTuples (cheap to build on every call, hashable so equal
call signatures are stored once). Nothing here imports a framework.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from opbench.config.vocabulary import ASYNC, MODES, SERIAL

# What kind of call site an API is; decides how it is named, tabled and emitted as a case.
FUNCTION = "function"            # torch.*, torch.nn.functional.*, mindspore.ops.*, mint.*
TENSOR_METHOD = "tensor_method"  # x.sum(), and operators: x + y is Tensor.__add__
MODULE = "module"                # a framework layer called: nn.Linear(...)(x), nn.Dense(...)(x)
PRIMITIVE = "primitive"          # a MindSpore primitive instance called: ops.Add()(x, y)
SCOPE = "scope"                  # user code (a user's Module/Cell, containers): structure only
KINDS = (FUNCTION, TENSOR_METHOD, MODULE, PRIMITIVE, SCOPE)
# Kinds that are framework APIs (tabled, timed as APIs); SCOPE is only structure.
API_KINDS = (FUNCTION, TENSOR_METHOD, MODULE, PRIMITIVE)

# How a call is timed: the run's timing modes (config/vocabulary.py), here per traced call.
TIMINGS = MODES
TIMING_NOTES = {
    SERIAL: "serial: synced after every call, so each time is the call's full latency",
    ASYNC: "async: host-side launch time only; queued device work is not waited for, "
           "so times can be far below the real cost",
}


class TensorSpec(NamedTuple):
    shape: tuple[int, ...]
    dtype: str            # opbench dtype name where one exists (float32, int64, ...)


class Literal(NamedTuple):
    value: Any            # None, bool, int, float or str: expressible in YAML as it is


class Sequence(NamedTuple):
    kind: str             # "list" | "tuple"
    items: tuple[Any, ...]


class Opaque(NamedTuple):
    """A value a case file cannot express (slice, dtype object, device, callable, ...)."""
    type_name: str
    text: str             # a short repr for cheap, informative types; "" otherwise


class Signature(NamedTuple):
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]


class CallSite(NamedTuple):
    """Where a call was intercepted: which API of which framework, of what kind.

    `skip` leading positional arguments are not inputs (a module's self, the function and
    types a torch function mode passes along) and are left out of the signature.
    `defaults` holds (name, type, value) of the API's literal keyword defaults: a keyword
    argument equal to its default is left out of the signature too (torch's Python functions
    forward every parameter by keyword, which would bury the ones the caller chose)."""
    framework: str
    api: str
    kind: str
    skip: int = 0
    defaults: frozenset = frozenset()


class CallEvent(NamedTuple):
    """One finished call. A tuple of plain values: cheap to build on every recorded call, and
    the garbage collector stops tracking such tuples, so a million events do not slow its
    passes through the traced program's objects."""
    index: int            # order in which calls started (unique within one trace)
    framework: str
    api: str
    kind: str
    thread_id: int
    start_ns: int         # on the recorder's clock (perf_counter_ns unless injected)
    duration_ns: int      # serial mode: call + sync; async: host-side call only
    depth: int            # number of recorded calls enclosing this one on its thread
    parent: int | None    # index of the enclosing recorded call
    signature: int        # index into TraceData.signatures
    failed: bool = False
    error: str | None = None   # exception type name when failed

    @property
    def end_ns(self) -> int:
        return self.start_ns + self.duration_ns


@dataclass(slots=True)
class CallStats:
    """Aggregate of every call of one API with one signature (kept even past the event cap)."""
    calls: int = 0
    failed: int = 0
    total_ns: int = 0
    self_ns: int = 0      # total minus the time of recorded calls nested inside
    min_ns: int = 0
    max_ns: int = 0

    def add(self, duration_ns: int, children_ns: int, failed: bool) -> None:
        """Count one call (on the hot path: kept to plain arithmetic)."""
        if self.calls == 0 or duration_ns < self.min_ns:
            self.min_ns = duration_ns
        if duration_ns > self.max_ns:
            self.max_ns = duration_ns
        self.calls += 1
        self.failed += failed
        self.total_ns += duration_ns
        self.self_ns += duration_ns - children_ns


class StatsKey(NamedTuple):
    framework: str
    api: str
    kind: str
    signature: int

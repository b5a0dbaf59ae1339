"""Per-API summary rows (pure): calls, total, mean, min, max and share of traced time."""
from __future__ import annotations

from dataclasses import dataclass

from opbench.trace.events import API_KINDS, CallStats
from opbench.trace.recorder import TraceData
from opbench.trace.signature import format_inputs

SORT_KEYS = ("total", "self", "calls", "mean", "max", "min", "name")


@dataclass(frozen=True)
class SummaryRow:
    framework: str
    api: str
    kind: str
    inputs: str | None          # tensor shapes and dtypes when grouped by shape
    calls: int
    failed: int
    total_ns: int
    self_ns: int
    min_ns: int
    max_ns: int
    share: float                # total over the framework's traced API time (0..1; nested
                                # parents include their children, so shares can add past 1)

    @property
    def mean_ns(self) -> float:
        return self.total_ns / self.calls if self.calls else 0.0


def api_time_ns(data: TraceData) -> dict[str, int]:
    """Time spent inside APIs per framework, each nanosecond counted once: the sum of self
    times (equal to the sum of totals when nothing nests)."""
    totals: dict[str, int] = {}
    for key, stats in data.stats.items():
        if key.kind in API_KINDS:
            totals[key.framework] = totals.get(key.framework, 0) + stats.self_ns
    return totals


def summarize(data: TraceData, *, group_by_shape: bool = False, sort_by: str = "total",
              include_scopes: bool = False) -> list[SummaryRow]:
    if sort_by not in SORT_KEYS:
        raise ValueError(f"sort_by must be one of {', '.join(SORT_KEYS)}, not {sort_by!r}")
    groups: dict[tuple[str, str, str, str | None], CallStats] = {}
    for key, stats in data.stats.items():
        if key.kind not in API_KINDS and not include_scopes:
            continue
        inputs = format_inputs(data.signatures[key.signature]) if group_by_shape else None
        group = groups.setdefault((key.framework, key.api, key.kind, inputs), CallStats())
        _merge(group, stats)
    denominators = api_time_ns(data)
    rows = [SummaryRow(framework=fw, api=api, kind=kind, inputs=inputs, calls=s.calls,
                       failed=s.failed, total_ns=s.total_ns, self_ns=s.self_ns, min_ns=s.min_ns,
                       max_ns=s.max_ns,
                       share=s.total_ns / denominators[fw] if denominators.get(fw) else 0.0)
            for (fw, api, kind, inputs), s in groups.items()]
    return sort_rows(rows, sort_by)


def sort_rows(rows: list[SummaryRow], sort_by: str) -> list[SummaryRow]:
    if sort_by == "name":
        return sorted(rows, key=lambda r: (r.framework, r.api, r.inputs or ""))
    value = {"total": lambda r: r.total_ns, "self": lambda r: r.self_ns,
             "calls": lambda r: r.calls, "mean": lambda r: r.mean_ns,
             "max": lambda r: r.max_ns, "min": lambda r: r.min_ns}[sort_by]
    return sorted(rows, key=lambda r: (-value(r), r.framework, r.api, r.inputs or ""))


def _merge(into: CallStats, other: CallStats) -> None:
    if other.calls == 0:
        return
    if into.calls == 0 or other.min_ns < into.min_ns:
        into.min_ns = other.min_ns
    into.max_ns = max(into.max_ns, other.max_ns)
    into.calls += other.calls
    into.failed += other.failed
    into.total_ns += other.total_ns
    into.self_ns += other.self_ns

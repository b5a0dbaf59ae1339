"""opbench measurements as pytest-benchmark entries, so --benchmark-save, -autosave, -json,
-compare, -compare-fail and the stock `pytest-benchmark compare` command work on them.

The numbers stay opbench's: its interleaved rounds produce them, and each entry is fed the
raw per-round samples (seconds per call, each the mean of `loops` calls) with
iterations = loops, exactly how pytest-benchmark stores its own rounds. One entry per
framework and measured mode; what only a comparison has (the ratio, its interval, the
threshold, the verdict) and the instance's parameters go into extra_info, on both entries.

Naming (stable across runs, so saved runs compare by fullname):
  name      <instance id>::<framework>:<mode>          reshape[shape=8x16]::torch:serial
  fullname  <pytest node id>::<framework>:<mode>
  group     <instance id> (<mode>)   both frameworks of one comparison side by side: the
                                     default grouping of pytest-benchmark's tables, of
                                     `pytest-benchmark compare` too
  param     <framework>:<mode>       --benchmark-group-by=param puts a framework together
  params    {framework, mode, ratio, ci_low, ci_high, verdict}
                                     --benchmark-group-by=param:framework works too; the
                                     CSV exports show the ratio as param columns
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from opbench.results.records import InstanceRecord, Measurement, as_plain
from opbench.verdicts.rules import Verdict

# pytest-benchmark records the options an entry was measured with; these are opbench's.
PROTOCOL = "opbench interleaved rounds"
# The comparison's figures, also in each entry's params (see _comparison).
COMPARISON_PARAMS = ("ratio", "ci_low", "ci_high", "verdict")


@dataclass(frozen=True)
class EntrySpec:
    """Everything one pytest-benchmark entry holds, before it is one."""

    name: str
    fullname: str
    group: str
    param: str
    params: dict[str, Any]
    extra_info: dict[str, Any]
    options: dict[str, Any]
    iterations: int
    samples_s: tuple[float, ...]
    # pytest-benchmark reads these from the fixture that made an entry
    cprofile_stats: Any = field(default=None, compare=False)
    has_error: bool = False


def entry_specs(record: InstanceRecord, nodeid: str, reference: str, target: str,
                run_config: Mapping[str, Any] | None = None) -> list[EntrySpec]:
    """One EntrySpec per framework and measured mode of an instance's record (none when
    nothing was timed: MISMATCH, ERROR, correctness-only runs). run_config: the run's
    device and threads (a mapping of RunConfig's names, not a record)."""
    specs = []
    run_config = run_config or {}
    device, threads = run_config.get("device"), run_config.get("threads")
    for mode, m in record.measurements.items():
        for framework, role in ((reference, "reference"), (target, "target")):
            samples = tuple(float(s) for s in m.samples_s.get(framework, ()))
            if not samples:
                continue
            suffix = f"{framework}:{mode}"
            specs.append(EntrySpec(
                name=f"{record.id}::{suffix}",
                fullname=f"{nodeid}::{suffix}",
                group=f"{record.id} ({mode})",
                param=suffix,
                params={"framework": framework, "mode": mode, **_comparison(m)},
                extra_info={**_extra_info(record, m, mode, framework, role, reference,
                                          target), "device": device, "threads": threads},
                options={"protocol": PROTOCOL, "mode": mode, "loops": m.loops,
                         "rounds": m.rounds, "rounds_requested": m.rounds_requested,
                         "device": device, "threads": threads},
                iterations=int(m.loops or 1),
                samples_s=samples))
    return specs


def _comparison(m: Measurement) -> dict[str, Any]:
    """The comparison as params: the stock tools show no extra_info, but their CSV export
    (`--benchmark-csv`, `pytest-benchmark compare --csv`) has a column per param, so the
    ratio, its interval and the verdict sit next to each side's times there."""
    return {key: _plain(getattr(m, key)) for key in COMPARISON_PARAMS}


def _plain(value: Any) -> Any:
    """A verdict as its word, frozen JSON as dicts and lists: what pytest-benchmark saves."""
    return value.value if isinstance(value, Verdict) else as_plain(value)


def _extra_info(record: InstanceRecord, m: Measurement, mode: str, framework: str,
                role: str, reference: str, target: str) -> dict[str, Any]:
    return {
        "opbench_instance": record.id,
        "case": record.case,
        "op": record.op,
        "file": record.file,
        "line": record.line,
        "framework": framework,
        "role": role,
        "reference": reference,
        "target": target,
        "mode": mode,
        "ratio": m.ratio,
        "ci_low": m.ci_low,
        "ci_high": m.ci_high,
        "confidence": m.confidence,
        "too_few_rounds": m.too_few_rounds,
        "threshold": m.threshold,
        "verdict": _plain(m.verdict),
        "instance_verdict": _plain(record.verdict),
        "params": as_plain(record.params),
        "inputs": [spec.to_dict() for spec in record.inputs],
    }


def to_benchmark_entry(spec: EntrySpec) -> Any:
    """A pytest-benchmark `Metadata` (what its `benchmark` fixture appends to the session)
    holding the spec's samples. Import here: pytest-benchmark is only needed for timing."""
    from pytest_benchmark.stats import Metadata

    entry = Metadata(spec, iterations=spec.iterations, options=dict(spec.options))
    for sample_s in spec.samples_s:
        # Stats.update stores a per-call time; Metadata.update would divide by iterations
        # again, but these samples are per-call already.
        entry.stats.update(sample_s)
    return entry


def add_benchmark_entries(session: Any, record: InstanceRecord, nodeid: str,
                          run_config: Any) -> None:
    """Append an instance's entries to pytest-benchmark's session (what its `benchmark`
    fixture would have appended)."""
    for spec in entry_specs(record, nodeid, run_config.reference_name, run_config.target_name,
                            {"device": run_config.device, "threads": run_config.threads}):
        session.benchmarks.append(to_benchmark_entry(spec))


def benchmark_session(pluginmanager: Any) -> Any | None:
    """pytest-benchmark's session object (registered under this name), or None when the
    plugin is absent or disabled (-p no:benchmark, --benchmark-disable, xdist)."""
    session = pluginmanager.get_plugin("pytest-benchmark")
    if session is None or getattr(session, "disabled", False):
        return None
    return session

"""JUnit XML for CI test panels: one <testcase> per instance.

INCONCLUSIVE means one thing everywhere: the gate could not tell, which is neither a pass
nor a failure. Exit 3; the README's CI job turns it into a warning; `pytest --benchmark`
reports it as "inconclusive", not failed; and here it is <skipped> with its reason, which
every JUnit reporter shows as "skipped" (yellow/grey), never as red. The reason carries the
verdict word, so a panel still tells an inconclusive case from a new one.

Mapping (JUnit has pass / failure / error / skipped):
  REGRESSION, BROKEN          -> <failure>  the gate fails on them (exit 1)
  INCONCLUSIVE, MISSING, NEW  -> <skipped>  no decision: too noisy, not run now, no baseline
  PASS                        -> (nothing)
Each decision appears once: in the element's `message` (the line a panel shows); the
element's text holds only what the message does not (the changes per measurement).
The suite carries `timestamp`, `hostname` and `time` (the run's), each case its `time`, and
the hygiene notes go into the suite's <properties> and <system-out>, so a panel that shows
only the cases still carries them. A later pass lost by a case (its worker process died:
`pass 1: worker process 2 was killed by SIGSEGV (signal 11) while running ...`) goes into
that case's <system-err>: the decision stands on the other passes' rounds, but a crash must
not vanish from the panel. (A crash in pass 1 leaves no measurement: the case is BROKEN and
the crash is its message.)
"""
from __future__ import annotations

import datetime as _dt
import xml.etree.ElementTree as ET
from typing import Any

from opbench.gate.decision import GateVerdict
from opbench.gate.evaluate import GateResult, InstanceResult
from opbench.results.records import RunRecord

__all__ = ["render_junit"]

_FAILURES = (GateVerdict.REGRESSION, GateVerdict.BROKEN)
_SKIPPED = (GateVerdict.INCONCLUSIVE, GateVerdict.MISSING, GateVerdict.NEW)


def _message(inst: InstanceResult) -> str:
    by = f" (decided by {inst.decided_by})" if inst.decided_by else ""
    return f"{inst.verdict.value}{by}: {inst.reason}"


def _details(inst: InstanceResult) -> str | None:
    """The changes behind the decision, one line per measurement (not in the message)."""
    from opbench.report.gate_markdown import pct

    lines = []
    for m in inst.measurements:
        last = m.decision.last if m.decision else None
        for name in ("ratio", "target_time"):
            path = getattr(last, name, None) if last else None
            if path is not None:
                e = path.estimate
                lines.append(f"{m.key} {name.replace('_', ' ')} change {pct(e.change)} "
                             f"[{pct(e.ci_low)}, {pct(e.ci_high)}]")
    return "\n".join(lines) or None


def _seconds(value: Any) -> str:
    return f"{float(value or 0.0):.3f}"


def _run_seconds(record: RunRecord | None) -> float:
    if record is None:
        return 0.0
    try:
        start = _dt.datetime.fromisoformat(record.created_utc)
        end = _dt.datetime.fromisoformat(record.finished_utc or "")
    except (TypeError, ValueError):
        return record.measuring_s
    return max(0.0, (end - start).total_seconds())


def render_junit(result: GateResult, suite_name: str = "opbench.gate",
                 record: RunRecord | None = None, hostname: str | None = None) -> str:
    """record: the current run's results record (times and timestamp); hostname: the
    machine that ran it."""
    instances = record.instances if record is not None else ()
    durations = {i.id: i.duration_s for i in instances}
    pass_errors = {i.id: i.pass_errors for i in instances}
    machine_id = record.environment.machine_id if record is not None else None
    counts = result.counts()
    failures = sum(counts[v.value] for v in _FAILURES)
    skipped = sum(counts[v.value] for v in _SKIPPED)
    attributes = {
        "name": suite_name, "tests": str(len(result.instances)), "failures": str(failures),
        "errors": "0", "skipped": str(skipped), "time": _seconds(_run_seconds(record)),
        "timestamp": record.created_utc[:19] if record is not None else "",
        "hostname": hostname or str(machine_id or "")}
    suite = ET.Element("testsuite", {k: v for k, v in attributes.items() if v})
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", {"name": "exit_code", "value": str(result.exit_code)})
    ET.SubElement(properties, "property", {"name": "same_machine",
                                           "value": str(result.same_machine).lower()})
    for i, note in enumerate(result.notes):
        ET.SubElement(properties, "property", {"name": f"note.{i}.{note.kind}",
                                               "value": note.message})
    for inst in result.instances:
        case = ET.SubElement(suite, "testcase", {"classname": f"opbench.{inst.op or 'case'}",
                                                 "name": inst.id,
                                                 "time": _seconds(durations.get(inst.id))})
        text = _message(inst)
        if inst.verdict in _FAILURES:
            element = ET.SubElement(case, "failure", {"type": inst.verdict.value,
                                                      "message": text})
            element.text = _details(inst)
        elif inst.verdict in _SKIPPED:
            ET.SubElement(case, "skipped", {"type": inst.verdict.value, "message": text})
        else:
            ET.SubElement(case, "system-out").text = text
        if pass_errors.get(inst.id):
            ET.SubElement(case, "system-err").text = "\n".join(pass_errors[inst.id])
    if result.notes:
        ET.SubElement(suite, "system-out").text = "\n".join(
            f"[{n.kind}] {n.message}" for n in result.notes)
    ET.indent(suite)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"

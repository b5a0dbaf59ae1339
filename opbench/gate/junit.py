"""JUnit XML for CI test panels: one <testcase> per instance.

Mapping (JUnit has pass / failure / error / skipped):
  REGRESSION, BROKEN   -> <failure>  the gate fails on them (exit 1)
  INCONCLUSIVE, MISSING -> <error>   the gate could not tell (exit 3): shown red, not hidden
                                     as "skipped", because a CI panel must not read it as fine
  NEW                  -> <skipped>  nothing to compare with yet
  PASS                 -> (nothing)
The hygiene notes go into the suite's <properties> and <system-out>, so a test panel that
shows only the cases still carries them.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET

from .decision import GateVerdict
from .evaluate import GateResult, InstanceResult

__all__ = ["render_junit"]

_FAILURES = (GateVerdict.REGRESSION, GateVerdict.BROKEN)
_ERRORS = (GateVerdict.INCONCLUSIVE, GateVerdict.MISSING)


def _message(inst: InstanceResult) -> str:
    by = f" (decided by {inst.decided_by})" if inst.decided_by else ""
    return f"{inst.verdict.value}{by}: {inst.reason}"


def render_junit(result: GateResult, suite_name: str = "opbench.gate") -> str:
    counts = result.counts()
    failures = sum(counts[v.value] for v in _FAILURES)
    errors = sum(counts[v.value] for v in _ERRORS)
    suite = ET.Element("testsuite", {
        "name": suite_name, "tests": str(len(result.instances)), "failures": str(failures),
        "errors": str(errors), "skipped": str(counts[GateVerdict.NEW.value])})
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", {"name": "exit_code", "value": str(result.exit_code)})
    ET.SubElement(properties, "property", {"name": "same_machine",
                                           "value": str(result.same_machine).lower()})
    for i, note in enumerate(result.notes):
        ET.SubElement(properties, "property", {"name": f"note.{i}.{note.kind}",
                                               "value": note.message})
    for inst in result.instances:
        case = ET.SubElement(suite, "testcase", {"classname": f"opbench.{inst.op or 'case'}",
                                                 "name": inst.id})
        text = _message(inst)
        if inst.verdict in _FAILURES:
            ET.SubElement(case, "failure", {"type": inst.verdict.value,
                                            "message": text}).text = text
        elif inst.verdict in _ERRORS:
            ET.SubElement(case, "error", {"type": inst.verdict.value,
                                          "message": text}).text = text
        elif inst.verdict is GateVerdict.NEW:
            ET.SubElement(case, "skipped", {"message": text})
        else:
            ET.SubElement(case, "system-out").text = text
    if result.notes:
        ET.SubElement(suite, "system-out").text = "\n".join(
            f"[{n.kind}] {n.message}" for n in result.notes)
    ET.indent(suite)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"

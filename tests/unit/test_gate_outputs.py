"""The gate's CI outputs: JUnit XML, the Markdown job summary, the JSON report."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from test_gate_evaluate import evaluate, pair_of_runs

from opbench.gate.serialize import result_as_dict
from opbench.report.gate_junit import render_junit
from opbench.report.gate_markdown import render_markdown
from opbench.results.records import RunRecord


def mixed_result():
    """add[b] regressed 25% (confirmed), relu[a] missing now, new[x] new, one id renamed."""
    base, cur = pair_of_runs(30, {"add[b]": 1.25}, ids=("add[a]", "add[b]", "relu[a]"))
    _, again = pair_of_runs(31, {"add[b]": 1.25}, ids=("add[a]", "add[b]", "relu[a]"))
    cur["instances"] = cur["instances"][:2]
    new = json.loads(json.dumps(cur["instances"][0]))
    new.update(id="new[x]", params={"shape": [7]})
    cur["instances"].append(new)
    cur["environment"]["machine_id"] = "m2"
    return evaluate(base, cur, remeasured={"add[b]": again["instances"][1]})


def test_junit_has_one_testcase_per_instance_and_the_right_elements():
    result = mixed_result()
    root = ET.fromstring(render_junit(result).split("\n", 1)[1])
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert set(cases) == {"add[a]", "add[b]", "relu[a]", "new[x]"}
    assert cases["add[b]"].find("failure").get("type") == "REGRESSION"
    assert cases["relu[a]"].find("skipped").get("type") == "MISSING"
    assert cases["new[x]"].find("skipped") is not None
    assert cases["add[a]"].find("failure") is None and cases["add[a]"].find("error") is None
    assert root.get("tests") == "4" and root.get("failures") == "1"
    assert root.get("errors") == "0" and root.get("skipped") == "2"
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["exit_code"] == "1"
    assert any(k.endswith(".machine") for k in props)
    assert "different machine" in root.find("system-out").text


def test_junit_inconclusive_is_skipped_with_its_reason_and_each_line_appears_once():
    """Issue #16 point 6: one meaning of INCONCLUSIVE (skipped, with its reason), a
    decision line once, and the suite's time, timestamp and hostname."""
    import dataclasses

    from opbench.gate.decision import GateVerdict

    result = mixed_result()
    inconclusive = dataclasses.replace(result.instances[0], verdict=GateVerdict.INCONCLUSIVE,
                                       reason="interval straddles the minimum effect")
    result = dataclasses.replace(result, instances=(inconclusive, *result.instances[1:]))
    _, record = pair_of_runs(33)
    record.update(created_utc="2026-01-02T03:04:05+00:00",
                  finished_utc="2026-01-02T03:05:35+00:00",
                  instances=[dict(record["instances"][0], id=inconclusive.id, duration_s=12.5)])
    xml = render_junit(result, record=RunRecord.from_dict(record), hostname="runner-7")
    root = ET.fromstring(xml.split("\n", 1)[1])
    assert root.find(".//error") is None
    skipped = root.find(f".//testcase[@name='{inconclusive.id}']/skipped")
    assert skipped.get("type") == "INCONCLUSIVE"
    assert "interval straddles the minimum effect" in skipped.get("message")
    assert root.get("hostname") == "runner-7" and root.get("time") == "90.000"
    assert root.get("timestamp") == "2026-01-02T03:04:05"
    assert root.find(f".//testcase[@name='{inconclusive.id}']").get("time") == "12.500"
    failure = root.find(".//failure")
    assert failure.get("message") not in (failure.text or "")   # not twice
    assert xml.count(failure.get("message").replace("%", "%")[:40]) == 1


def test_docs_give_inconclusive_one_meaning():
    """README, docs/gate.md and the JUnit mapping agree: exit 3 is a warning, skipped."""
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    gate_doc = (repo / "docs" / "gate.md").read_text()
    readme = (repo / "README.md").read_text()
    assert "not green" not in gate_doc and "not as red" not in gate_doc
    for text in (gate_doc, readme):
        assert "`<skipped>`" in text and "::warning::" in text


def test_markdown_summary_puts_the_outcome_hygiene_and_worst_first():
    text = render_markdown(mixed_result())
    first_line = text.splitlines()[0]
    assert first_line == "## opbench gate: FAIL: regression (exit 1)"
    assert "### Baseline hygiene" in text
    assert "**machine**: different machine" in text
    assert "**missing**: 'relu[a]' is in the baseline" in text
    assert "**new**: 'new[x]' has no baseline" in text
    attention = text.split("### Needs attention (worst first)")[1]
    rows = [ln for ln in attention.splitlines() if ln.startswith("| ")][1:]   # no header
    assert "add[b]" in rows[0] and "REGRESSION (re-measured)" in rows[0]
    assert "relu[a]" in rows[1]
    assert "-20." in rows[0]          # the ratio change, in percent
    assert "Exit codes: 0 pass, 1 regression" in text


def test_markdown_for_a_clean_pass():
    base, cur = pair_of_runs(32)
    text = render_markdown(evaluate(base, cur))
    assert text.startswith("## opbench gate: PASS (exit 0)")
    assert "### Passed" in text and "Needs attention" not in text


def test_json_report_roundtrips():
    result = mixed_result()
    data = json.loads(json.dumps(result_as_dict(result, baseline="b.json")))
    assert data["exit_code"] == 1 and data["baseline"] == "b.json"
    first = data["instances"][0]
    assert first["id"] == "add[b]" and first["verdict"] == "REGRESSION"
    stage2 = first["measurements"][0]["stage2"]
    assert stage2["ratio"]["verdict"] == "REGRESSION"
    assert stage2["target_time"] is None           # different machine: not compared
    assert data["counts"]["MISSING"] == 1

"""The gap map's figures in the results record (gapmap/figures.py): a cause per SLOW
measurement, the sweep fit, the roofline point and the runner's cores, written into the
JSON, valid against its schema, and read back by the views."""
from __future__ import annotations

import json

import pytest
from gapmap_fakes import instance, record, summary
from test_gapmap_attribute import ELEMS, OVERHEADS, sweep_instances

from opbench.gapmap.analysis import analyse
from opbench.gapmap.attribute import stored_attributions
from opbench.gapmap.figures import with_figures
from opbench.results.io import validate_record
from opbench.results.records import RunRecord
from opbench.runner.ceilings import ceilings_from_times


def _record(instances, ceilings=None):
    data = record(instances, OVERHEADS)
    if ceilings:
        data["ceilings"] = ceilings
    return RunRecord.from_dict(data)


def test_every_slow_measurement_gets_its_cause_and_fit_in_the_json():
    rec = with_figures(_record(sweep_instances("add", (2e-6, 20e9), (300e-6, 20e9)),
                               {"torch": ceilings_from_times(2**26, 2**27 / 30e9, 1024, 1e-2)}))
    data = json.loads(json.dumps(rec.to_dict()))
    validate_record(data)
    for inst in data["instances"]:
        m = inst["measurements"]["serial"]
        assert m["cause"]["kind"] == "overhead" and m["cause"]["basis"]
        assert m["fit"]["sizes"] == len(ELEMS) and m["fit"]["unit"] == "bytes"
        assert m["fit"]["sides"]["mindspore"]["fixed_s"] == pytest.approx(300e-6, rel=0.05)
        assert m["fit"]["sides"]["torch"]["throughput"] == pytest.approx(20e9, rel=0.05)
        for side in ("torch", "mindspore"):
            point = m["roofline"][side]
            assert point["fraction"] is None or 0 <= point["fraction"] <= 1


def test_a_pass_gets_no_cause_and_figures_are_replaced_not_stacked():
    slow = with_figures(_record(sweep_instances("add", (2e-6, 20e9), (300e-6, 20e9))))
    passed = [i.to_dict() for i in slow.instances]
    for inst in passed:
        inst["verdict"] = inst["measurements"]["serial"]["verdict"] = "PASS"
    again = with_figures(RunRecord.from_dict(dict(slow.to_dict(), instances=passed)))
    assert all(i.measurements["serial"].cause is None for i in again.instances)
    assert all(i.measurements["serial"].fit is not None for i in again.instances)


def test_views_read_the_stored_causes():
    rec = with_figures(_record(sweep_instances("add", (2e-6, 20e9), (300e-6, 20e9))))
    data = rec.to_dict()
    data["instances"][0]["measurements"]["serial"]["cause"] = {
        "kind": "threading", "basis": "written by hand", "overhead_share": None}
    stored = RunRecord.from_dict(data)
    assert [a.basis for a in analyse(stored).attributions][0] == "written by hand"
    # a file written before the key: the view computes the causes
    older = _record(sweep_instances("add", (2e-6, 20e9), (300e-6, 20e9)))
    assert stored_attributions(older) is None
    assert len(analyse(older).attributions) == len(ELEMS)


def test_a_correctness_only_record_is_left_as_it_is():
    data = record([instance("neg", 64, (summary([3e-6] * 5), summary([5e-6] * 5)))])
    data["config"]["timing"] = False
    rec = RunRecord.from_dict(data)
    assert with_figures(rec) is rec

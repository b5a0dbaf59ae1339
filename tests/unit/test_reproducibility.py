"""The reproducibility figures (opbench/reproducibility.py) on hand-made records."""
from __future__ import annotations

import json

import pytest
from test_gate_evaluate import record as run_record

from opbench.report.text import notes_lines, run_notes, view_text
from opbench.results.records import RecordedConfig, RunRecord
from opbench.results.reproducibility import agreement as agreement_of_records
from opbench.results.reproducibility import summary


def record(ratio, low, high, torch_s=20e-6, ms_s=40e-6, verdict="SLOW", duration=1.2,
           iid="add[x]") -> dict:
    """A run of one instance with the given serial measurement, as its file holds it."""
    return run_record([{
        "id": iid, "case": "add", "op": "add", "file": "cases/x.yaml", "apis": {},
        "verdict": verdict, "duration_s": duration, "measurements": {"serial": {
            "mode": "serial", "loops": 1, "rounds": 6, "threshold": 0.8,
            "samples_s": {"torch": [torch_s] * 6, "mindspore": [ms_s] * 6},
            "ratio": ratio, "ci_low": low, "ci_high": high, "verdict": verdict,
            "summary": {"torch": {"n": 6, "median_s": torch_s},
                        "mindspore": {"n": 6, "median_s": ms_s}}}}}])


def agreement(runs: list[dict]):
    return agreement_of_records([RunRecord.from_dict(r) for r in runs])


def test_spread_coverage_and_flips_over_runs():
    runs = [record(0.50, 0.45, 0.55), record(0.52, 0.50, 0.54, torch_s=21e-6),
            record(0.60, 0.58, 0.62, verdict="INCONCLUSIVE", duration=1.4)]
    (row,) = agreement(runs)
    assert row.ratio_spread == pytest.approx(0.60 / 0.50)
    assert row.median_spread["torch"] == pytest.approx(21 / 20)
    # of the 6 ordered pairs, 0.50 lies in run 1's [0.50, 0.54] and 0.52 in run 0's
    assert row.cross_coverage == pytest.approx(2 / 6)
    assert row.verdict_flips and row.seconds_per_run == pytest.approx(1.2)
    figures = summary([row])
    assert figures["all"]["verdict_flips"] == 1
    assert figures["both sides >= 10 us"]["rows"] == 1
    assert summary([row], min_time_s=1e-3)["both sides >= 1000 us"] == {"rows": 0}


def test_only_instances_measured_in_every_run_are_compared():
    runs = [record(0.5, 0.4, 0.6), record(0.5, 0.4, 0.6, iid="other")]
    assert agreement(runs) == []


def test_report_says_which_view_and_why_a_verdict_is_inconclusive():
    cfg = RecordedConfig.from_dict({
        "reference": "torch", "target": "mindspore", "device": "cpu", "threshold": 0.8,
        "modes": ["serial"], "launch": "blocking", "threads": 1, "processes": 3,
        "quiesce": True})
    assert view_text(cfg) == ("view: serial latency (sync after every call), blocking "
                              "launches, 1 threads, rounds over 3 worker processes, idle-wait "
                              "before each sample")
    rec = record(0.5, 0.4, 0.6, verdict="INCONCLUSIVE")
    m = rec["instances"][0]["measurements"]["serial"]
    m["inconclusive_reason"] = "would be SLOW, but torch is 2x as long ..."
    m["settle_s"] = {"torch": [0.002, 0.15], "mindspore": [0.002, None]}
    m["settle_timed_out"] = {"torch": 1, "mindspore": 0}
    lines = notes_lines(RunRecord.from_dict(rec))
    assert "add[x]: [serial] INCONCLUSIVE: would be SLOW, but torch is 2x" in lines[0]
    assert "torch waited up to 150 ms" in lines[1] and "1 of torch's waits hit the limit" \
        in lines[1]
    rec["between_process_prior"] = {"sd": 0.031, "df": 4, "instances": 18}
    assert run_notes(RunRecord.from_dict(rec)) == [
        "1 of 1 measurements: before samples, the other side's threads stayed busy after its "
        "own sample (spinning or queued work): torch waited up to 150 ms; 1 of torch's waits "
        "hit the limit, so other work may have shared those samples",
        "between worker processes a ratio moved by 3.1% (typical SD over 18 measurements); "
        "every interval includes that spread"]
    rec["between_process_prior"] = {"sd": 0.0, "df": 4, "instances": 11}
    assert run_notes(RunRecord.from_dict(rec))[-1] == (
        "between worker processes a ratio moved no more than its rounds' own noise explains "
        "(over 11 measurements); every interval includes that noise")
    # grouped (what the views print): the wait is said once, by run_notes, not per row
    assert not any("waited" in line for line in notes_lines(RunRecord.from_dict(rec),
                                                            grouped=True))


def test_long_waits_of_several_measurements_are_one_line_with_each_sides_range():
    from opbench.report.text import settle_lines

    rec = record(0.5, 0.4, 0.6)
    first = rec["instances"][0]
    second = json.loads(json.dumps(first))
    second["id"] = "add[y]"
    for inst, wait in ((first, 0.15), (second, 0.25)):
        inst["measurements"]["serial"]["settle_s"] = {"torch": [0.002, wait]}
    rec["instances"] = [first, second]
    assert settle_lines(RunRecord.from_dict(rec)) == [
        "2 of 2 measurements: before samples, the other side's threads stayed busy after its "
        "own sample (spinning or queued work): torch's longest wait per measurement 150 ms to "
        "250 ms"]

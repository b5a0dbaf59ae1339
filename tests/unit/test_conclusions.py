"""Judging returns new records (verdicts/conclusions.py): the runner's raw record is never
completed in place, a measurement's statistics are a frozen MeasurementStatistics until they
are written, and a measurement judged again keeps one key order and drops the lines of its
earlier statistics."""
from __future__ import annotations

import copy
import dataclasses

import pytest

from opbench.config import RunConfig
from opbench.verdicts.conclusions import (
    MeasurementStatistics,
    RawRounds,
    apply_between_process_prior,
    judge_instance,
    judge_measurement,
    measurement_statistics,
)
from opbench.verdicts.rules import Verdict

CONFIG = RunConfig()
REF, TARGET = CONFIG.reference, CONFIG.target
OVERHEAD = {REF: {"dispatch_floor_serial_s": 1e-6}, TARGET: {"dispatch_floor_serial_s": 1e-6}}


def _order(rounds: int) -> list[list[str]]:
    return [[REF, TARGET] if i % 2 == 0 else [TARGET, REF] for i in range(rounds)]


def _raw_measurement(ratio: float, processes: int = 1, rounds: int = 12) -> dict:
    """A raw measurement record as runner/raw_records.py writes it: the reference's 10 us
    against a target `1 / ratio` times that, a small spread, `processes` processes."""
    ref = [10e-6 * (1 + 0.01 * (i % 3)) for i in range(rounds)]
    target = [r / ratio * (1 + 0.01 * (i % 2)) for i, r in enumerate(ref)]
    per_process = rounds // processes
    return {"mode": "serial", "loops": 100, "rounds": rounds, "threshold": 0.8,
            "samples_s": {REF: ref, TARGET: target}, "order": _order(rounds),
            "process_of_round": [1 + i // per_process for i in range(rounds)],
            "protocol_notes": ["a protocol note"]}


def _raw_instance(ratio: float, processes: int = 1) -> dict:
    return {"id": "add[n=1]", "verdict": None, "error": None,
            "check": {"ok": True, "rtol": 1e-5, "atol": 1e-8},
            "measurements": {"serial": _raw_measurement(ratio, processes)},
            "duration_s": 1.5}


def test_statistics_are_a_frozen_value():
    stats = measurement_statistics(_raw_measurement(0.5)["samples_s"], REF, TARGET, 0.8,
                                   order=_order(12))
    assert isinstance(stats, MeasurementStatistics) and stats.verdict is Verdict.SLOW
    assert stats.estimate.ratio == pytest.approx(0.5, rel=0.02)
    with pytest.raises(dataclasses.FrozenInstanceError):
        stats.verdict = Verdict.PASS
    fields = stats.as_fields()
    assert list(fields)[0] == "summary" and list(fields)[-1] == "verdict"
    assert fields["verdict"] == "SLOW" and "interference_ruled_out" not in fields


def test_judging_an_instance_leaves_the_raw_record_as_it_was():
    raw = _raw_instance(0.5)
    before = copy.deepcopy(raw)
    judged = judge_instance(raw, CONFIG, OVERHEAD)
    assert raw == before and list(raw) == list(before)
    assert judged is not raw and judged["verdict"] == Verdict.SLOW.value
    # the explanation stands before the instance's duration, as the results file has it
    assert list(judged)[-2:] == ["explanation", "duration_s"]
    m = judged["measurements"]["serial"]
    assert list(m)[-2:] == ["protocol_notes", "notes"] and m["notes"][0] == "a protocol note"


def test_a_measurement_judged_again_keeps_its_key_order_and_drops_old_lines():
    first = judge_measurement(_raw_measurement(0.5), CONFIG, OVERHEAD)
    stale = {**first, "interference_ruled_out": "an earlier pass's line"}
    again = judge_measurement(stale, CONFIG, OVERHEAD)
    assert "interference_ruled_out" not in again
    assert list(again) == list(first) and again["verdict"] == first["verdict"]
    assert again["notes"] == first["notes"]        # not the notes twice


def test_failed_checks_and_errors_are_new_records_too():
    mismatch = {**_raw_instance(0.5), "check": {"ok": False, "rtol": 1e-5, "atol": 1e-8}}
    assert judge_instance(mismatch, CONFIG, OVERHEAD)["verdict"] == Verdict.MISMATCH.value
    assert mismatch["verdict"] is None
    failed = {**_raw_instance(0.5), "error": "torch failed calling torch.add"}
    assert judge_instance(failed, CONFIG, OVERHEAD)["verdict"] == Verdict.ERROR.value
    assert failed["verdict"] is None


def test_the_run_prior_returns_new_records():
    records = [judge_instance(_raw_instance(0.5 + 0.01 * i, processes=3), CONFIG, OVERHEAD)
               for i in range(6)]
    before = copy.deepcopy(records)
    rejudged, prior = apply_between_process_prior(records, CONFIG)
    assert prior is not None and records == before
    assert [r["id"] for r in rejudged] == [r["id"] for r in records]
    assert all(list(new["measurements"]["serial"]) == list(old["measurements"]["serial"])
               for new, old in zip(rejudged, records))


def test_raw_rounds_read_a_measurement_record_once():
    rounds = RawRounds.of(_raw_measurement(0.5, processes=2))
    assert rounds.processes == 2 and rounds.threshold == 0.8 and rounds.mode == "serial"
    assert rounds.shares()[:1] == [(1, 1)] and rounds.shares()[-1] == (2, 1)
    assert RawRounds.of({"samples_s": {}}).shares() is None

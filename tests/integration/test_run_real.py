"""The runner on the real frameworks (torch against MindSpore on this CPU) with a tiny case
library: outputs and gradients agree, both modes are measured, the record is sane.

Speed is never asserted (the machine is shared); only that the numbers are well formed.
MindSpore's thread count is process-global: the session uses the same 2 threads as the
adapter tests in this process.
"""
from __future__ import annotations

import json
import math

import pytest

from opbench.cases.case_files import expand, load_cases
from opbench.config import MIN_ROUNDS, MeasureSettings, RunConfig
from opbench.frameworks import FrameworkUnavailable
from opbench.results.io import validate_record
from opbench.results.records import load_results
from opbench.runloop.recorded_run import run
from opbench.runner.session import Session

pytestmark = pytest.mark.integration

THREADS = 2          # the test machines have 2 cores; the adapter tests use the same
FAST_SETTINGS = MeasureSettings(rounds=6, min_sample_time_s=0.002, max_time_s=1.0,
                                warmup_time_s=0.02)

CASES = """
cases:
  - name: add
    inputs:
      x: {shape: [16, 32]}
      y: {shape: [16, 32]}
    torch: {api: torch.add, args: [$x, $y]}
    mindspore: {api: mindspore.mint.add, args: [$x, $y]}

  - name: softmax
    backward: true
    inputs:
      x: {shape: [8, 32]}
    torch: {api: torch.nn.functional.softmax, args: [$x], kwargs: {dim: -1}}
    mindspore: {api: mindspore.mint.nn.functional.softmax, args: [$x], kwargs: {dim: -1}}
"""


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    directory = tmp_path_factory.mktemp("run_real")
    case_path = directory / "tiny.yaml"
    case_path.write_text(CASES)
    instances = [inst for case in load_cases([case_path]) for inst in expand(case)]
    config = RunConfig(threads=THREADS, modes=("serial", "async"), settings=FAST_SETTINGS)
    session = Session(config)
    try:
        session.open()
    except FrameworkUnavailable as err:
        pytest.skip(str(err))
    json_path = directory / "run.json"
    # the record as its results file holds it: these tests check the format
    record = run(instances, config, session=session, json_path=json_path).to_dict()
    return record, json_path


def instance(record, ident):
    return next(i for i in record["instances"] if i["id"] == ident)


def test_the_record_is_complete_valid_and_saved(results):
    record, json_path = results
    validate_record(record)
    assert record["complete"] is True
    assert load_results(json_path).to_dict() == json.loads(json.dumps(record))
    assert [i["id"] for i in record["instances"]] == ["add", "softmax"]
    for inst in record["instances"]:
        assert inst["error"] is None, inst.get("traceback")
        assert inst["verdict"] in ("PASS", "SLOW", "INCONCLUSIVE")


def test_both_frameworks_agree_on_outputs_and_gradients(results):
    record, _ = results
    for ident in ("add", "softmax"):
        check = instance(record, ident)["check"]
        assert check["ok"], check["detail"]
    grad = instance(record, "softmax")["grad_check"]
    assert grad["ok"], grad["detail"]
    assert "grad_check" not in instance(record, "add")


def test_both_frameworks_run_with_equal_threads(results):
    record, _ = results
    assert set(record["frameworks"]) == {"torch", "mindspore"}
    assert {info["threads"] for info in record["frameworks"].values()} == {THREADS}


def test_every_mode_is_measured_with_a_sane_interval(results):
    record, _ = results
    expected = {"add": {"serial", "async"},
                "softmax": {"serial", "async", "serial+backward", "async+backward"}}
    for ident, keys in expected.items():
        measurements = instance(record, ident)["measurements"]
        assert set(measurements) == keys
        for key, m in measurements.items():
            assert m["mode"] == key.split("+")[0]
            assert m["rounds"] >= MIN_ROUNDS and m["loops"] >= 1
            for side in ("torch", "mindspore"):
                samples = m["samples_s"][side]
                assert len(samples) == m["rounds"]
                assert all(s > 0 and math.isfinite(s) for s in samples)
            assert 0 < m["ci_low"] <= m["ratio"] <= m["ci_high"] < math.inf, (ident, key, m)
            assert m["too_few_rounds"] is False
            assert m["verdict"] in ("PASS", "SLOW", "INCONCLUSIVE")


def test_overhead_is_recorded_for_both_frameworks(results):
    record, _ = results
    assert set(record["overhead"]) == {"torch", "mindspore"}
    for overhead in record["overhead"].values():
        # torch's CPU sync does nothing: its cost is two clock reads, possibly 0 ns apart
        assert 0 <= overhead["sync_cost_s"] < math.inf
        for key in ("dispatch_floor_serial_s", "dispatch_floor_async_s", "first_call_serial_s"):
            assert overhead[key] > 0 and math.isfinite(overhead[key])


def test_machine_ceilings_are_measured_once_and_recorded(results):
    record, json_path = results
    saved = load_results(json_path).to_dict()
    for name in ("torch", "mindspore"):
        c = saved["ceilings"][name]
        assert "error" not in c, c
        assert c["memory_bandwidth_bytes_per_s"] > 0 and c["peak_flops_per_s"] > 0
        assert c["threads"] == THREADS
    assert saved["ceilings"] == record["ceilings"]

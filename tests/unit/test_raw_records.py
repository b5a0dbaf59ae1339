"""The runner's raw records (runner/raw_records.py): what a session measured is a frozen
RawInstance with frozen RawMeasurements, written as the record in the order the results file
has always had it; a later pass pools into new values and leaves the record it was given."""
from __future__ import annotations

import copy
import dataclasses

import pytest
from runner_fakes import binary_case, case_file, fake_config, fake_session, load_instances

from opbench.runner.check import compare_outputs
from opbench.runner.raw_records import RawInstance


def _instance(tmp_path, extra=""):
    return load_instances(case_file(tmp_path, binary_case("add", extra=extra)))[0]


def test_a_raw_instance_writes_only_the_stages_that_ran():
    header = {"id": "add[n=1]", "verdict": None, "error": None}
    failed = RawInstance(header, error="torch failed calling torch.add", traceback="...",
                         duration_s=0.5)
    assert list(failed.as_dict()) == ["id", "verdict", "error", "traceback", "duration_s"]
    check = compare_outputs([1.0], [1.0], 1e-5, 1e-8)
    checked = RawInstance(header, check=check, output_shapes=[1], threshold=0.8,
                          measurements={}, peak_memory={}, duration_s=1.0)
    assert list(checked.as_dict()) == ["id", "verdict", "error", "check", "output_shapes",
                                       "threshold", "measurements", "peak_memory",
                                       "duration_s"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        checked.error = "changed"


def test_a_later_pass_returns_a_new_record_and_leaves_the_given_one(tmp_path):
    config = fake_config(passes=2)
    session = fake_session(config)
    instance = _instance(tmp_path)
    first = session.run_instance(instance)
    before = copy.deepcopy(first)
    extended = session.extend_instance(instance, first, 2)
    assert first == before                                   # not completed in place
    m, m0 = extended["measurements"]["serial"], first["measurements"]["serial"]
    assert m["rounds"] == 2 * m0["rounds"] and m["passes"] == 2
    assert m["pass_of_round"] == [1] * m0["rounds"] + [2] * m0["rounds"]
    assert extended["duration_s"] > first["duration_s"]
    assert list(m) == list(m0)                               # one key order, pass after pass

"""The results file rewritten after every instance (results/run_file.py): byte for byte what
records.write_run_dict writes, with the unchanged instances' text reused."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

import opbench.results.run_file as run_file
from opbench.results.records import RecordError, write_run_dict
from opbench.results.run_file import RunFileWriter

GOLDEN = Path(__file__).parent / "fixtures" / "golden"


@pytest.fixture
def record():
    data = json.loads((GOLDEN / "run_in_workers.json").read_text(encoding="utf-8"))
    assert len(data["instances"]) >= 2
    return data


def reference(tmp_path, data) -> str:
    write_run_dict(tmp_path / "reference.json", data)
    return (tmp_path / "reference.json").read_text(encoding="utf-8")


def test_the_file_is_the_one_write_run_dict_writes_as_the_run_grows_and_changes(tmp_path,
                                                                               record):
    writer = RunFileWriter()
    path = tmp_path / "run.json"
    everything = record["instances"]
    for stage in ([], everything[:1], everything):      # before, during, after pass 1
        data = {**record, "instances": copy.deepcopy(stage)}
        writer(path, data)
        assert path.read_text(encoding="utf-8") == reference(tmp_path, data)
    # a later process extends an instance in place (a Session) or hands back a new one
    data["instances"][0]["duration_s"] = 9.75
    data["instances"][1] = {**data["instances"][1], "verdict": "INCONCLUSIVE"}
    writer(path, data)
    assert path.read_text(encoding="utf-8") == reference(tmp_path, data)
    # a shorter list (a writer reused for another record) drops the texts beyond it
    data = {**record, "instances": copy.deepcopy(everything[1:])}
    writer(path, data)
    assert path.read_text(encoding="utf-8") == reference(tmp_path, data)


def test_an_unchanged_instance_is_not_typed_and_dumped_again(record, monkeypatch):
    typed = []
    original = run_file.InstanceRecord.from_dict.__func__

    def counting(cls, data, where=""):
        typed.append(where)
        return original(cls, data, where)

    monkeypatch.setattr(run_file.InstanceRecord, "from_dict", classmethod(counting))
    writer = RunFileWriter()
    writer.text(record)
    assert len(typed) == len(record["instances"])
    record["instances"][-1]["duration_s"] = 1.5
    writer.text(record)
    assert typed[len(record["instances"]):] == [f"instances/{len(record['instances']) - 1}"]


def test_an_instance_that_does_not_fit_the_record_is_refused_by_its_key(record):
    del record["instances"][1]["id"]
    with pytest.raises(RecordError, match="instances/1"):
        RunFileWriter().text(record)

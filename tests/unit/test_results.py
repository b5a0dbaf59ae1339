"""Result records on disk: atomic writes, and reads that reject foreign files by name."""
from __future__ import annotations

import json

import numpy as np
import pytest

from opbench.results.io import (
    SCHEMA_VERSION,
    ResultsError,
    new_record,
    results_schema,
    validate_record,
    write_json_atomic,
)
from opbench.results.records import RunRecord, load_results

CONFIG = {"reference": "torch", "target": "mindspore", "device": "cpu", "threads": 2,
          "modes": ["serial"], "threshold": 0.8}
FRAMEWORKS = {"torch": {"version": "2", "device": "cpu", "threads": 2}}


def minimal_record() -> dict:
    return new_record(dict(CONFIG), dict(FRAMEWORKS), {})


def leftovers(directory) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_a_new_record_follows_the_schema():
    record = minimal_record()
    validate_record(record)
    assert record["schema_version"] == SCHEMA_VERSION
    assert record["complete"] is False and record["instances"] == []
    assert results_schema()["properties"]["schema_version"]["const"] == SCHEMA_VERSION


def test_write_then_read_round_trips(tmp_path):
    path = tmp_path / "deep" / "dir" / "run.json"   # missing directories are created
    record = minimal_record()
    write_json_atomic(path, record)
    assert load_results(path) == RunRecord.from_dict(record)
    assert load_results(path).to_dict() == record
    assert leftovers(path.parent) == []


def test_numpy_scalars_and_sets_are_written_as_plain_json(tmp_path):
    path = tmp_path / "x.json"
    write_json_atomic(path, {"n": np.int64(3), "t": np.float32(0.5), "s": {"b", "a"}})
    assert json.loads(path.read_text()) == {"n": 3, "t": 0.5, "s": ["a", "b"]}


def test_a_failed_write_leaves_the_old_file_intact_and_no_temporary_file(tmp_path):
    path = tmp_path / "run.json"
    write_json_atomic(path, {"version": "old"})
    before = path.read_bytes()
    # json.dump fails half-way: the first keys are already serialised when it meets this
    with pytest.raises(TypeError, match="not JSON serialisable"):
        write_json_atomic(path, {"version": "new", "a": list(range(1000)), "z": object()})
    assert path.read_bytes() == before
    assert leftovers(tmp_path) == []


def test_non_finite_numbers_are_refused_rather_than_written_as_invalid_json(tmp_path):
    path = tmp_path / "run.json"
    with pytest.raises(ValueError):
        write_json_atomic(path, {"ratio": float("nan")})
    assert not path.exists()
    assert leftovers(tmp_path) == []


def test_an_interrupt_during_the_write_leaves_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "run.json"
    write_json_atomic(path, {"version": "old"})

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("opbench.results.io.os.replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_json_atomic(path, {"version": "new"})
    assert json.loads(path.read_text()) == {"version": "old"}
    assert leftovers(tmp_path) == []


def test_reading_a_missing_file_names_it(tmp_path):
    path = tmp_path / "nope.json"
    with pytest.raises(ResultsError, match="nope.json: no such results file"):
        load_results(path)


def test_reading_a_file_that_is_not_json_names_it(tmp_path):
    path = tmp_path / "garbage.json"
    path.write_text("{not json")
    with pytest.raises(ResultsError) as info:
        load_results(path)
    assert str(info.value).startswith(f"{path}: not a readable JSON results file")


def test_reading_json_that_is_not_a_record_names_it(tmp_path):
    path = tmp_path / "list.json"
    path.write_text("[1, 2]")
    with pytest.raises(ResultsError, match="list.json: not an opbench results file"):
        load_results(path)


def test_reading_another_schema_version_names_the_file_and_both_versions(tmp_path):
    path = tmp_path / "future.json"
    record = minimal_record()
    record["schema_version"] = SCHEMA_VERSION + 1
    path.write_text(json.dumps(record))
    with pytest.raises(ResultsError) as info:
        load_results(path)
    message = str(info.value)
    assert message.startswith(f"{path}: results schema version {SCHEMA_VERSION + 1}")
    assert f"reads version {SCHEMA_VERSION}" in message


def test_reading_an_invalid_record_names_the_file_and_the_place(tmp_path):
    path = tmp_path / "bad.json"
    record = minimal_record()
    record["instances"] = [{"id": "x", "case": "x", "op": "x", "file": "f.yaml",
                            "apis": {}, "verdict": "FAST"}]
    path.write_text(json.dumps(record))
    with pytest.raises(ResultsError) as info:
        load_results(path)
    message = str(info.value)
    assert message.startswith(f"{path}: invalid results file at instances/0/verdict")
    assert "FAST" in message


def test_a_record_missing_a_required_key_is_invalid(tmp_path):
    path = tmp_path / "short.json"
    record = minimal_record()
    del record["config"]
    path.write_text(json.dumps(record))
    with pytest.raises(ResultsError, match=r"short.json: invalid results file at \(top level\)"):
        load_results(path)

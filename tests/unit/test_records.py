"""The typed results records (opbench/results/records.py): a results file read and written
back byte for byte, absent keys told from null ones, keys this opbench does not know kept,
older versions migrated, and a bad file named with its key."""
from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import pytest

from opbench.results import records
from opbench.results.io import ResultsError, validate_record
from opbench.results.records import (
    InstanceRecord,
    Measurement,
    RecordError,
    RunRecord,
    load_results,
    migrate,
    write_results,
    write_run_dict,
)
from opbench.verdicts.rules import Verdict

GOLDEN = sorted((Path(__file__).parent / "fixtures" / "golden").glob("*.json"))


def written(data) -> str:
    """The bytes io.write_json_atomic writes for `data` (its json.dump settings)."""
    return json.dumps(data, indent=1, allow_nan=False) + "\n"


def golden(name: str = "run_in_process.json") -> dict:
    return json.loads((GOLDEN[0].parent / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.name)
def test_the_golden_files_round_trip_byte_for_byte(path):
    text = path.read_text(encoding="utf-8")
    record = RunRecord.from_dict(json.loads(text))
    assert written(record.to_dict()) == text


def test_a_record_reads_as_typed_attributes():
    record = RunRecord.from_dict(golden())
    assert record.config.reference == "torch" and record.config.modes == ("serial", "async")
    assert record.config.settings.rounds == 6
    slow = next(i for i in record.instances if i.id == "slow_add")
    assert slow.verdict is Verdict.SLOW
    m = slow.measurements["serial"]
    assert isinstance(m, Measurement) and m.verdict is Verdict.SLOW
    assert tuple(m.interval) == (m.ratio, m.ci_low, m.ci_high)
    assert m.median_s("mindspore") == m.summary["mindspore"].median_s
    assert m.median_s("jax") is None
    assert record.overhead["torch"].floor_s("async+backward") == (
        record.overhead["torch"].dispatch_floor_async_s)


def test_absent_stays_absent_and_null_stays_null():
    data = golden()
    plain = copy.deepcopy(data["instances"][0])
    assert plain["min_effect"] is None                 # null: the case sets none
    older = {k: v for k, v in plain.items() if k != "min_effect"}   # before the key
    for raw, present in ((plain, True), (older, False)):
        inst = InstanceRecord.from_dict(raw)
        assert inst.min_effect is None and inst.has("min_effect") is present
        assert inst.to_dict() == raw and list(inst.to_dict()) == list(raw)


def test_absent_keys_read_as_what_the_schema_says_and_are_not_written_back():
    data = golden()
    for key in ("launch", "passes", "processes", "quiesce"):
        del data["config"][key]
    config = RunRecord.from_dict(data).config
    assert (config.launch, config.passes, config.processes, config.quiesce) == (
        "queued", 1, 1, False)
    assert config.to_dict() == data["config"]


def test_keys_this_opbench_does_not_know_survive_a_round_trip(tmp_path):
    data = golden()
    data["from_the_future"] = {"a": [1, 2.5, None]}
    data["config"]["new_knob"] = True
    data["instances"][1]["measurements"]["serial"]["new_statistic"] = 0.25
    data["instances"][1]["measurements"]["serial"]["summary"]["torch"]["p99_s"] = 1e-4
    record = RunRecord.from_dict(data)
    assert record.extra["from_the_future"] == {"a": (1, 2.5, None)}
    assert record.to_dict() == data
    path = tmp_path / "run.json"
    write_results(path, record)
    assert path.read_text(encoding="utf-8") == written(data)


def test_a_replaced_field_is_written_and_the_record_stays_frozen():
    record = RunRecord.from_dict(golden())
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.complete = False
    with pytest.raises(TypeError):
        record.instances[0].params["new"] = 1         # free-form JSON is read-only too
    changed = record.replace(complete=False, pooled_from=["a.json", "b.json"])
    out = changed.to_dict()
    assert out["complete"] is False and out["pooled_from"] == ["a.json", "b.json"]
    assert list(out)[:len(golden())] == list(golden())   # the keys read keep their places
    assert record.to_dict() == golden()                   # the original is unchanged


def test_the_run_dict_is_written_through_the_model(tmp_path):
    data = golden()
    data["instances"][0]["unknown"] = {"kept": True}
    path = tmp_path / "run.json"
    write_run_dict(path, data)
    assert path.read_text(encoding="utf-8") == written(data)
    assert load_results(path).instances[0].extra["unknown"] == {"kept": True}


def test_a_missing_required_key_names_the_key():
    data = golden()
    del data["instances"][2]["id"]
    with pytest.raises(RecordError, match=r"^instances/2: the required key 'id' is missing"):
        RunRecord.from_dict(data)
    data = golden()
    data["instances"][0]["measurements"]["async"]["verdict"] = "FAST"
    with pytest.raises(RecordError, match=r"^instances/0/measurements/async/verdict: 'FAST'"):
        RunRecord.from_dict(data)


def test_a_bad_file_is_named_with_its_key(tmp_path):
    data = golden()
    data["instances"][1]["measurements"]["serial"]["ratio"] = "fast"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ResultsError) as info:
        load_results(path)
    assert str(info.value).startswith(f"{path}: invalid results file at "
                                      f"instances/1/measurements/serial/ratio")


def _version_0_to_1(data: dict) -> dict:
    """A synthetic older format: config.mode held one mode where version 1 has modes."""
    config = dict(data["config"])
    config["modes"] = [config.pop("mode")]
    return dict(data, config=config)


def test_an_older_version_is_migrated_through_the_table(tmp_path, monkeypatch):
    old = golden()
    old["schema_version"] = 0
    old["config"]["mode"] = old["config"].pop("modes")[0]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    with pytest.raises(ResultsError, match=r"old.json: results schema version 0 is not "
                                           r"supported \(this opbench reads version 1\)"):
        load_results(path)
    monkeypatch.setitem(records.MIGRATIONS, 0, _version_0_to_1)
    record = load_results(path)
    assert record.schema_version == 1 and record.config.modes == ("serial",)
    validate_record(record.to_dict())


def test_migrate_applies_each_step_in_turn():
    steps = {0: lambda d: dict(d, zero=True), 1: lambda d: dict(d, one=True)}
    original = {"schema_version": 0}
    data = migrate(original, "x.json", to_version=2, steps=steps)
    assert data == {"schema_version": 2, "zero": True, "one": True}
    assert original == {"schema_version": 0}
    with pytest.raises(ResultsError, match="x.json: results schema version 3"):
        migrate({"schema_version": 3}, "x.json", to_version=2, steps=steps)
    with pytest.raises(ResultsError, match="x.json: results schema version 0"):   # a gap
        migrate({"schema_version": 0}, "x.json", to_version=2, steps={0: steps[0]})

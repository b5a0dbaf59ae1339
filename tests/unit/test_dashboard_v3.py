"""`opbench report --v3` and `opbench history --v3`: the PyTorch benchmark dashboard's v3
records, checked against opbench/schema/dashboard_v3.schema.json."""
from __future__ import annotations

import json
from importlib import resources

import jsonschema
import pytest
from click.testing import CliRunner
from test_change_points import _history
from test_gate_evaluate import pair_of_runs

from opbench.cli.gate import history_command
from opbench.cli.main import cli

SCHEMA = json.loads(resources.files("opbench.schema").joinpath(
    "dashboard_v3.schema.json").read_text())

# The shape of the published example records (the PyTorch OSS benchmark database's wiki
# and the projects that upload to it: one metric per record), values made up here.
PUBLISHED_SHAPE = {
    "benchmark": {"name": "some benchmark", "mode": "inference", "dtype": "bfloat16",
                  "extra_info": {"args": {"batch_size": 8}}},
    "model": {"name": "some/model", "type": "llm", "backend": "eager", "origins": ["hf"]},
    "metric": {"name": "median_latency_ms", "benchmark_values": [12.5, 12.7],
               "target_value": None, "extra_info": {}},
    "runners": [{"name": "runner-1", "type": "cpu", "cpu_info": "x86", "cpu_count": 8}],
}


def test_the_schema_accepts_the_published_shape_and_refuses_a_broken_one():
    jsonschema.validate(PUBLISHED_SHAPE, SCHEMA)
    broken = json.loads(json.dumps(PUBLISHED_SHAPE))
    del broken["metric"]["benchmark_values"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, SCHEMA)


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_report_v3_one_record_per_instance_mode_metric(tmp_path):
    base, _ = pair_of_runs(5)
    results = tmp_path / "r.json"
    results.write_text(json.dumps(base))
    out = tmp_path / "v3.jsonl"
    result = CliRunner().invoke(cli, ["report", str(results), "--v3", str(out)])
    assert result.exit_code == 0, result.output
    rows = _lines(out)
    for row in rows:
        jsonschema.validate(row, SCHEMA)
    assert len(rows) == 3 * 3              # 3 instances x serial x (2 medians + the ratio)
    ratio = [r for r in rows if r["model"]["name"] == "add[b]"
             and r["metric"]["name"] == "ratio_torch_over_mindspore"][0]
    measured = [i for i in base["instances"] if i["id"] == "add[b]"][0]["measurements"]
    assert ratio["metric"]["benchmark_values"] == [measured["serial"]["ratio"]]
    assert ratio["metric"]["extra_info"]["ci_low"] == measured["serial"]["ci_low"]
    assert ratio["benchmark"]["mode"] == "serial" and ratio["benchmark"]["dtype"] == "float32"


def test_history_v3_every_stored_measurement(tmp_path):
    db = _history(tmp_path, runs=3, factor=1.0)
    out = tmp_path / "h.jsonl"
    result = CliRunner().invoke(history_command, ["--db", str(db), "--v3", str(out)])
    assert result.exit_code == 0, result.output
    rows = _lines(out)
    for row in rows:
        jsonschema.validate(row, SCHEMA)
    assert len(rows) == 3 * 4 * 3           # runs x instances x metrics
    assert {r["benchmark"]["extra_info"]["run"] for r in rows} == {1, 2, 3}

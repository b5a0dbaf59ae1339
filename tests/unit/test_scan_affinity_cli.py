"""`opbench scan --affinity`: the table, `--csv FILE` (Ascend columns first) and `--json`."""
from __future__ import annotations

import csv
import json

from click.testing import CliRunner

from opbench.cli.scan import scan_command

NAIVE = """import torch

def step(x, w, b):
    y = torch.matmul(x, w.t()) + b
    return y * torch.sigmoid(y)
"""
ASCEND_COLUMNS = ["File", "Start Line", "End Line", "Api Type", "Api Call Name",
                  "Affinity Api Name"]


def _write(tmp_path):
    path = tmp_path / "naive.py"
    path.write_text(NAIVE)
    return path


def test_csv_has_the_ascend_columns_first(tmp_path):
    path = _write(tmp_path)
    out = tmp_path / "affinity.csv"
    result = CliRunner().invoke(scan_command, [str(path), "--affinity", "--csv", str(out)])
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(out.open()))
    assert rows[0] == ASCEND_COLUMNS + ["Family", "Replacement", "Measured"]
    assert rows[1] == [str(path), "4", "4", "pattern", "torch.matmul(x, w.t()) + b",
                       "torch.nn.functional.linear", "torch.linear_composed",
                       "torch.nn.functional.linear(x, w, b)", "not measured"]
    assert [r[6] for r in rows[1:]] == ["torch.linear_composed", "torch.silu_formula"]
    assert "2 affinity candidates (not measured)" in result.output   # the table on stdout


def test_json_rows(tmp_path):
    path = _write(tmp_path)
    result = CliRunner().invoke(scan_command, [str(path), "--affinity", "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    row = document["rows"][1]
    assert {k: row[k] for k in ("file", "start_line", "end_line", "api", "affinity_api",
                                "family", "replacement", "measured")} == {
        "file": str(path), "start_line": 5, "end_line": 5, "api": "y * torch.sigmoid(y)",
        "affinity_api": "torch.nn.functional.silu", "family": "torch.silu_formula",
        "replacement": "torch.nn.functional.silu(y)", "measured": False}
    assert document["files"] == 1 and document["errors"] == []


def test_framework_filter(tmp_path):
    path = _write(tmp_path)
    result = CliRunner().invoke(scan_command, [str(path), "--affinity", "--json",
                                               "--framework", "mindspore"])
    assert json.loads(result.stdout)["rows"] == []


def test_options_that_do_not_apply_are_clear_errors(tmp_path):
    path = _write(tmp_path)
    result = CliRunner().invoke(scan_command, [str(path), "--affinity", "--mapping",
                                               str(path)])
    assert result.exit_code == 2 and "--affinity does not use --mapping" in result.output
    result = CliRunner().invoke(scan_command, [str(path), "--json"])
    assert result.exit_code == 2 and "--csv and --json go with --affinity" in result.output
    result = CliRunner().invoke(scan_command, [str(path), "--affinity", "--json",
                                               "--format", "csv"])
    assert result.exit_code == 2 and "disagree" in result.output

"""CSV / JSON / table output and the `opbench scan` command, end to end on the fixture tree."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console
from test_gate_evaluate import record as run_record

from opbench.cli.scan import scan_command
from opbench.scan import COLUMNS, scan_paths, summarize
from opbench.scan.output import render_table, write_csv

TREE = Path(__file__).parent / "fixtures" / "scan_tree"

# The documented CSV column set (docs/scan.md). Changing it breaks users' scripts: extend only.
DOCUMENTED_COLUMNS = (
    "file", "line", "end_line", "col", "api_type", "call", "api", "framework", "guess",
    "guess_reason", "mapped_api", "mapping_status", "mapping_note", "covered", "ratio",
    "ci_low", "ci_high", "verdict", "mode", "instances", "worst_instance",
)

MAPPING_YAML = """
- torch: torch.nn.functional.relu
  mindspore: mindspore.mint.nn.functional.relu
  kind: functional
  status: same
- torch: torch.zeros
  mindspore: mindspore.mint.zeros
  kind: function
  status: same
- torch: torch.matmul
  mindspore: mindspore.mint.matmul
  kind: function
  status: same
"""

CASE_YAML = """
cases:
  - name: relu
    inputs:
      x: {shape: [8], dtype: float32}
    torch:
      api: torch.nn.functional.relu
      args: [$x]
    mindspore:
      api: mindspore.mint.nn.functional.relu
      args: [$x]
"""

RESULTS = run_record([
    {"id": "relu", "case": "relu", "op": "relu", "file": "cases/relu.yaml",
     "apis": {"torch": "torch.nn.functional.relu",
              "mindspore": "mindspore.mint.nn.functional.relu"},
     "verdict": "SLOW",
     "measurements": {"serial": {
         "mode": "serial", "loops": 1, "rounds": 6, "threshold": 0.8,
         "samples_s": {"torch": [1e-5] * 6, "mindspore": [2.4e-5] * 6},
         "summary": {"torch": {"n": 6, "median_s": 1e-5},
                     "mindspore": {"n": 6, "median_s": 2.4e-5}},
         "ratio": 0.42, "ci_low": 0.4, "ci_high": 0.45, "verdict": "SLOW"}}},
])


@pytest.fixture
def inputs(tmp_path):
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text(MAPPING_YAML)
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "relu.yaml").write_text(CASE_YAML)
    results = tmp_path / "run.json"
    results.write_text(json.dumps(RESULTS))
    return {"mapping": str(mapping), "cases": str(cases), "results": str(results),
            "dir": tmp_path}


def run(*args):
    result = CliRunner().invoke(scan_command, [str(a) for a in args])
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def test_columns_are_the_documented_set():
    assert COLUMNS == DOCUMENTED_COLUMNS


def test_write_csv_renders_booleans_and_missing_values():
    rows = scan_paths([TREE / "model.py"]).rows
    stream = io.StringIO()
    write_csv(rows, stream)
    table = list(csv.DictReader(io.StringIO(stream.getvalue())))
    assert len(table) == len(rows)
    first = table[0]
    assert (first["line"], first["api"], first["guess"], first["covered"], first["ratio"]) == (
        "12", "torch.nn.functional.gelu", "false", "", "")
    assert {r["guess"] for r in table} == {"true", "false"}


def test_csv_output_file_joined_with_mapping_cases_and_results(inputs):
    out = inputs["dir"] / "scan.csv"
    result = run(TREE, "-o", out, "--mapping", inputs["mapping"], "--cases", inputs["cases"],
                 "--results", inputs["results"])
    table = list(csv.DictReader(out.open()))
    assert tuple(table[0].keys()) == COLUMNS
    relu = [r for r in table if r["api"] == "torch.nn.functional.relu" and r["guess"] == "false"]
    assert len(relu) == 2
    for r in relu:
        assert (r["mapped_api"], r["mapping_status"], r["covered"], r["ratio"], r["verdict"],
                r["instances"]) == ("mindspore.mint.nn.functional.relu", "same", "true",
                                    "0.42", "SLOW", "1")
    matmul = next(r for r in table if r["api"] == "torch.matmul")
    assert (matmul["covered"], matmul["ratio"], matmul["verdict"]) == ("false", "", "")
    unknown = next(r for r in table if r["api"] == "torch.nn.Linear")
    assert unknown["mapping_status"] == "unknown"
    # The human part went to stderr: the unparsable file and the summary.
    assert "broken.py:6: SyntaxError" in result.stderr
    # F.relu (twice), the star-imported relu and MF.relu on the MindSpore side all join.
    assert "covered 2 · slow 2 (4 calls)" in result.stderr
    assert result.stdout == ""


def test_table_shows_calls_summary_and_errors(inputs):
    result = run(TREE, "--mapping", inputs["mapping"], "--cases", inputs["cases"],
                 "--results", inputs["results"], "--format", "table", "--group", "call")
    out = result.stdout
    assert "h[mask] = 0.0" in out          # special forms shown as written, not as markup
    assert "broken.py:6" in out
    rows = scan_paths([TREE]).rows
    assert f"calls {len(rows)} ({sum(r.guess for r in rows)} guessed)" in out
    # mapped: relu, zeros, matmul on the torch side; MF.relu and mint.matmul on the MindSpore side.
    assert "mapped 5 · unmapped 30 · covered 2 · slow 2 (4 calls)" in out


def test_table_grouped_by_api_counts_calls(inputs):
    result = run(TREE, "--mapping", inputs["mapping"], "--cases", inputs["cases"],
                 "--group", "api")
    line = next(l for l in result.stdout.splitlines() if "torch.nn.functional.relu " in l)
    cells = [c.strip() for c in line.split("│")]
    # api, type, calls, first at: the certain rows represent the API (2 + 1 star import).
    assert cells[1:4] == ["torch.nn.functional.relu", "function", "3"]


def test_json_output_and_framework_filter(inputs):
    result = run(TREE, "--format", "json", "--framework", "mindspore",
                 "--mapping", inputs["mapping"], "--cases", inputs["cases"])
    document = json.loads(result.stdout)
    assert document["columns"] == list(COLUMNS)
    assert {r["framework"] for r in document["rows"]} == {"mindspore"}
    assert len(document["rows"]) == document["summary"]["calls"] == 8
    assert document["errors"][0]["line"] == 6


def test_format_follows_the_output_suffix(inputs):
    out = inputs["dir"] / "scan.json"
    run(TREE / "model.py", "-o", out, "--mapping", inputs["mapping"], "--cases", inputs["cases"])
    assert json.loads(out.read_text())["schema_version"] == 1


def test_unreadable_results_and_bad_cases_are_errors(inputs):
    bad = inputs["dir"] / "bad.json"
    bad.write_text("{not json")
    result = CliRunner().invoke(scan_command, [str(TREE), "--results", str(bad)])
    assert result.exit_code == 1 and "cannot read results" in result.output
    # a JSON file that is no results record is named, with the key that is wrong
    foreign = inputs["dir"] / "foreign.json"
    foreign.write_text(json.dumps({"schema_version": 1, "instances": [{"id": "a"}]}))
    result = CliRunner().invoke(scan_command, [str(TREE), "--results", str(foreign)])
    assert result.exit_code == 1 and "foreign.json: invalid results file" in result.output
    broken_cases = inputs["dir"] / "broken_cases"
    broken_cases.mkdir()
    (broken_cases / "x.yaml").write_text("cases:\n  - nme: x\n")
    result = CliRunner().invoke(scan_command, [str(TREE), "--cases", str(broken_cases)])
    assert result.exit_code == 1 and "cannot load cases" in result.output


def test_no_python_files_is_an_error(tmp_path):
    result = CliRunner().invoke(scan_command, [str(tmp_path)])
    assert result.exit_code == 1 and "no Python files" in result.output


def test_render_table_without_rows_still_prints_the_summary():
    result = scan_paths([TREE / "pkg" / "__init__.py"])
    console = Console(file=io.StringIO(), width=120)
    render_table(console, result.rows, summarize(result), result.errors)
    text = console.file.getvalue()
    assert "Scanned 1 files" in text and "calls 0 (0 guessed)" in text

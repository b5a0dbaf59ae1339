"""The SQLite run history and `opbench history` (no frameworks: recorded records only)."""
from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner
from test_gate_evaluate import pair_of_runs

from opbench.cli.gate import history_command
from opbench.report.history_plot import trend_series
from opbench.results.history import _SCHEMA, HistoryError, HistoryStore
from opbench.results.records import RunRecord


def test_records_runs_once_and_returns_a_trend(tmp_path):
    db = tmp_path / "h.db"
    base, cur = pair_of_runs(40, {"add[b]": 1.25})
    cur["environment"]["git_commit"] = "def"
    base, cur = RunRecord.from_dict(base), RunRecord.from_dict(cur)
    with HistoryStore(db) as store:
        first, added = store.record_run(base, source="base.json")
        assert added
        assert store.record_run(base) == (first, False)      # same content: not twice
        second, added = store.record_run(cur, label="pr")
        assert added and second != first
        assert store.run_count() == 2
        assert store.operators() == ["add", "relu"]
        points = store.trend("add")
        assert {p.instance_id for p in points} == {"add[a]", "add[b]"}
        b_points = [p for p in points if p.instance_id == "add[b]"]
        assert [p.run_id for p in b_points] == [first, second]
        assert b_points[1].ratio == pytest.approx(b_points[0].ratio * 0.8, rel=0.05)
        assert b_points[1].git_commit == "def" and b_points[1].label == "pr"
        assert b_points[0].machine_id == "m1" and b_points[0].target_version == "2.10.0"
        # Not an op name: a substring of instance ids.
        assert {p.instance_id for p in store.trend("[b")} == {"add[b]"}
        assert [p.run_id for p in store.trend("add", last_runs=1)] == [second, second]
        samples = store.samples(first, "add[a]", "serial")
        assert samples["torch"] == list(base.instances[0].measurements["serial"].samples_s[
            "torch"])


def test_refuses_a_foreign_sqlite_file(tmp_path):
    db = tmp_path / "other.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(HistoryError, match="not an opbench history"):
        HistoryStore(db)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(HistoryError, match="junk.db"):
        HistoryStore(junk)


def _results_file(tmp_path, name, rec):
    path = tmp_path / name
    path.write_text(json.dumps(rec))
    return path


def test_history_command_adds_shows_and_plots(tmp_path):
    base, cur = pair_of_runs(41, {"add[b]": 1.25})
    files = [_results_file(tmp_path, "a.json", base), _results_file(tmp_path, "b.json", cur)]
    db = tmp_path / "h.db"
    runner = CliRunner()
    added = runner.invoke(history_command, ["--db", str(db), "--add", str(files[0]),
                                            "--add", str(files[1])])
    assert added.exit_code == 0, added.output
    listing = runner.invoke(history_command, ["--db", str(db)])
    assert "2 runs" in listing.output and "add" in listing.output
    plot = tmp_path / "trend.png"
    shown = runner.invoke(history_command, ["--db", str(db), "add", "--plot", str(plot)],
                          terminal_width=250)
    assert shown.exit_code == 0, shown.output
    assert "add[b]" in shown.output and "-20." in shown.output   # change vs previous run
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_history_command_without_a_db_is_a_usage_error(tmp_path):
    result = CliRunner().invoke(history_command, ["--db", str(tmp_path / "none.db"), "add"])
    assert result.exit_code == 2
    missing = tmp_path / "h.db"
    with HistoryStore(missing) as store:
        store.record_run(RunRecord.from_dict(pair_of_runs(42)[0]))
    result = CliRunner().invoke(history_command, ["--db", str(missing), "softmax"])
    assert result.exit_code == 2


def test_two_builds_of_one_version_are_two_series(tmp_path):
    """A nightly and a patched build both say MindSpore 2.10.0: the history keeps each
    run's build, the trend's lines split by it, and `opbench history` names both."""
    base, cur = pair_of_runs(43, {"add[b]": 1.25})
    base["frameworks"]["mindspore"]["build"] = "1a2b3c"
    cur["frameworks"]["mindspore"]["build"] = "9f8e7d"
    assert base["frameworks"]["mindspore"]["version"] == \
        cur["frameworks"]["mindspore"]["version"]
    db = tmp_path / "h.db"
    with HistoryStore(db) as store:
        store.record_run(RunRecord.from_dict(base))
        store.record_run(RunRecord.from_dict(cur))
        points = [p for p in store.trend("add") if p.instance_id == "add[b]"]
    assert [p.target_build for p in points] == ["1a2b3c", "9f8e7d"]
    assert points[0].frameworks != points[1].frameworks
    assert points[0].frameworks.endswith("2.10.0 (build 1a2b3c)")
    series = trend_series(points)
    assert len(series) == 2 and all(len(line) == 1 for line in series.values())
    shown = CliRunner().invoke(history_command, ["--db", str(db), "add"], terminal_width=250)
    assert shown.exit_code == 0, shown.output
    assert "(build 1a2b3c)" in shown.output and "(build 9f8e7d)" in shown.output
    # one build throughout: one line per instance and mode, as before
    assert len(trend_series(points[:1])) == 1


def test_a_version_1_history_gains_the_build_columns(tmp_path):
    db = tmp_path / "v1.db"
    with sqlite3.connect(db) as conn:
        conn.executescript(_SCHEMA.replace(",\n    reference_build TEXT,\n    target_build TEXT",
                                           ""))
        conn.execute("PRAGMA user_version = 1")
    with HistoryStore(db) as store:
        store.record_run(RunRecord.from_dict(pair_of_runs(44)[0]))
        assert all(p.target_build is None for p in store.trend("add"))
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 3

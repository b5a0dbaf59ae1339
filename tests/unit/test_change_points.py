"""Change points in the run history (results/changes.py) and `opbench history --changes`."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from test_gate_evaluate import instance, measurement, record

from opbench.cli.gate import history_command
from opbench.results.change_sim import simulate
from opbench.results.changes import detect_changes, find_steps
from opbench.results.history import HistoryStore
from opbench.results.records import RunRecord
from opbench.verdicts.rules import DEFAULT_MIN_EFFECT

IDS = ("add[a]", "add[b]", "relu[a]", "softmax[a]")
RUN_TO_RUN_SD = 0.02    # the simulation's drift between runs of one code (change_sim.py)


def _history(tmp_path, runs=6, slowed_from=4, slowed="add[b]", factor=1.25, seed=7,
             threads=2):
    """runs recorded runs; from run `slowed_from` on, the target side of `slowed` takes
    `factor` times as long (what OPBENCH_INJECT_SLOWDOWN's extra calls do to it)."""
    rng = np.random.default_rng(seed)
    db = tmp_path / "h.db"
    with HistoryStore(db) as store:
        for run in range(1, runs + 1):
            drift = math.exp(rng.normal(0, RUN_TO_RUN_SD))     # the machine between runs
            insts = [instance(i, i.split("[")[0], measurement(
                rng, 1e-3, 1e-3 * drift * (factor if i == slowed and run >= slowed_from
                                           else 1.0))) for i in IDS]
            rec = record(insts)
            rec["environment"]["git_commit"] = f"c{run}"
            rec["config"]["threads"] = threads
            store.record_run(RunRecord.from_dict(rec))
    return db


def test_names_the_slowed_instance_at_the_fourth_run_and_no_other(tmp_path):
    db = _history(tmp_path)
    with HistoryStore(db) as store:
        changes = detect_changes(store.all_points())
    assert [(c.key.instance, c.run_index, c.commit, c.direction) for c in changes] == [
        ("add[b]", 4, "c4", "regression")]
    assert changes[0].ci_low < 1 / 1.25 < changes[0].ci_high


def test_cli_json_rows_and_exit_code(tmp_path):
    db = _history(tmp_path)
    result = CliRunner().invoke(history_command, ["--db", str(db), "--changes", "--json"])
    assert result.exit_code == 1, result.output
    rows = json.loads(result.output)["changes"]
    assert len(rows) == 1
    row = rows[0]
    assert {k: row[k] for k in ("instance", "mode", "run_index", "run", "commit",
                                "direction")} == {
        "instance": "add[b]", "mode": "serial", "run_index": 4, "run": 4, "commit": "c4",
        "direction": "regression"}
    assert row["change"]["ci_low"] < row["change"]["ratio"] < row["change"]["ci_high"]
    quiet = _history(tmp_path / "aa", factor=1.0)
    result = CliRunner().invoke(history_command, ["--db", str(quiet), "--changes"])
    assert result.exit_code == 0 and "no change points" in result.output


def test_unlike_runs_never_share_a_series(tmp_path):
    """Three runs on 2 threads then three on 4, every op 30% slower on 4: two series each,
    no step (a changed thread count is not a regression)."""
    rng = np.random.default_rng(3)
    with HistoryStore(tmp_path / "h.db") as store:
        for run in range(6):
            slower = 1.3 if run >= 3 else 1.0
            rec = record([instance(i, i.split("[")[0], measurement(rng, 1e-3, 1e-3 * slower))
                          for i in IDS])
            rec["config"]["threads"] = 2 if run < 3 else 4
            store.record_run(RunRecord.from_dict(rec))
        points = store.all_points()
    assert detect_changes(points) == []
    assert {p.threads for p in points} == {2, 4}


def test_a_step_below_the_min_effect_is_not_a_change():
    values = [0.0] * 6 + [-math.log1p(DEFAULT_MIN_EFFECT / 2)] * 6
    assert find_steps(values, [0.001] * 12) == []
    values = [0.0] * 6 + [-math.log1p(2 * DEFAULT_MIN_EFFECT)] * 6
    assert [s.at for s in find_steps(values, [0.001] * 12)] == [6]


@pytest.mark.parametrize("runs,at", [(6, 3), (12, 6)])
def test_simulated_detection_and_false_alarm_rates(runs, at):
    """tools/change_points_sim.py's figures on fewer series: a 25% step found in >= 95 of
    100 series, a 15% step on 12 runs in >= 90, and <= 2 false alarms per 100 A/A series."""
    big = simulate(series=300, runs=runs, step=0.25, at=at, seed=1)
    assert big.detected_per_100 >= 95
    assert big.false_alarms_per_100 <= 2
    if runs >= 12:
        assert simulate(series=300, runs=runs, step=0.15, at=at, seed=2).detected_per_100 >= 90


def test_an_acknowledged_change_is_not_reported_again(tmp_path):
    """Acknowledged at run 4: add[b]'s series starts there, at its new level; two more runs
    at that level raise nothing; a bad run id is a usage error naming it."""
    db = _history(tmp_path, runs=8, slowed_from=4)
    runner = CliRunner()
    result = runner.invoke(history_command, ["--db", str(db), "add[b]", "--acknowledge", "4",
                                             "--note", "known: new kernel"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(history_command, ["--db", str(db), "--changes", "--json"])
    assert result.exit_code == 0 and json.loads(result.output)["changes"] == []
    with HistoryStore(db) as store:
        assert store.acknowledged() == {("add[b]", "serial"): 4}
        points = store.all_points()
        assert [c.run for c in detect_changes(points)] == [4]     # unacknowledged: still there
    result = runner.invoke(history_command, ["--db", str(db), "add[b]", "--acknowledge", "99"])
    assert result.exit_code == 2 and "run #99" in result.output

"""`opbench run --workers N` drives pytest-xdist (opbench/xdist_run.py): the pytest command
it builds, and whole runs in a pytest subprocess on fake frameworks (a conftest next to
the case file supplies them through the plugin's session hook)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import plugin_fakes
import pytest
from click.testing import CliRunner
from test_pytest_plugin_fake import CASES, CONFTEST, FAST_S

from opbench.cli.main import cli
from opbench.cli.xdist_run import PLUGIN_MODULE, node_id, option_flags, pytest_command
from opbench.results.records import load_results

pytest.importorskip("xdist")


class Inst:
    def __init__(self, file, id_):
        self.case = type("C", (), {"file": file})()
        self.id = id_


def test_the_command_names_every_instance_and_hands_over_the_options(tmp_path):
    insts = [Inst(str(tmp_path / "a.yaml"), "add[n=4]"), Inst("b.yaml", "neg")]
    command = pytest_command(insts, {"rounds": 9, "no_quiesce": True, "no_backward": False,
                                     "mode": None, "device": "cpu"}, 2, "out.json",
                             shard="1/2", autoloaded=False)
    assert command[:3] == [sys.executable, "-m", "pytest"]
    assert command[3:5] == ["-p", "opbench.pytest_plugin.plugin"]
    assert ["--benchmark", "-n", "2", "--opbench-json=out.json", "--opbench-shard=1/2"] == \
        command[command.index("--benchmark"):command.index("--opbench-shard=1/2") + 1]
    assert "--opbench-rounds=9" in command and "--opbench-no-quiesce" in command
    assert "--opbench-device=cpu" in command and "--opbench-no-backward" not in command
    assert command[-2:] == [f"{tmp_path / 'a.yaml'}::add[n=4]",
                            f"{Path('b.yaml').resolve()}::neg"]
    assert PLUGIN_MODULE not in pytest_command(insts, {}, 2, "o.json", autoloaded=True)


def test_only_given_options_become_flags():
    assert option_flags({}) == []
    assert option_flags({"threshold": 0.9, "passes": None}) == ["--opbench-threshold=0.9"]
    assert node_id(Inst("/x/c.yaml", "sum[n=1]")) == "/x/c.yaml::sum[n=1]"


@pytest.fixture
def fake_project(tmp_path, monkeypatch):
    """Cases, and a conftest giving the pytest subprocess fake frameworks."""
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "cases.yaml").write_text(CASES)
    (tmp_path / plugin_fakes.COSTS_FILE).write_text(json.dumps(
        {"costs_s": {"torch": FAST_S, "mindspore": FAST_S}, "noise_sd": 0.0}))
    monkeypatch.chdir(tmp_path)
    repo = str(Path(__file__).resolve().parents[2])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [
        repo, os.environ.get("PYTHONPATH")])))
    return tmp_path


QUICK = ("--min-sample-time", "0.001", "--processes", "1")


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="two workers need two cores")
def test_run_with_workers_measures_in_isolated_xdist_workers(fake_project):
    result = CliRunner().invoke(cli, ["run", "cases.yaml", "--workers", "2", *QUICK,
                                      "--json", "run.json"])
    assert result.exit_code == 0, result.output
    record = load_results(fake_project / "run.json")
    assert sorted(i.id for i in record.instances) == ["add[n=16]", "add[n=4]", "neg"]
    assert record.config.threads == 1
    assert all(p.worker.cpus for p in record.merged_from)
    assert "3 instances: 3 PASS" in result.stdout


def test_run_with_workers_and_a_shard_records_the_shard(fake_project):
    result = CliRunner().invoke(cli, ["run", "cases.yaml", "--workers", "1", "--shard", "2/2",
                                      *QUICK, "-q", "--json", "run.json"])
    assert result.exit_code == 0, result.output
    record = load_results(fake_project / "run.json")
    assert [i.id for i in record.instances] == ["neg"]
    assert record.config.shard.index == 2
    assert record.config.shard.of_instances == 3


def test_workers_that_would_share_cores_are_a_usage_error(fake_project):
    cores = len(os.sched_getaffinity(0))
    result = CliRunner().invoke(cli, ["run", "cases.yaml", "--workers", str(cores + 1),
                                      *QUICK, "-q", "--json", "run.json"])
    assert result.exit_code == 2, result.output
    assert f"{cores + 1} workers but {cores} CPU cores: workers would share cores" in \
        " ".join(result.stderr.split())
    assert not (fake_project / "run.json").exists()

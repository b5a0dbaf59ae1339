"""A whole gate as one library call (runloop/gate_run.py), on fake frameworks in this process
and without click: the options completed from the baseline, the set-up checks before
anything is measured, stage 1 through the front door's run path, stage 2 in this process
when fresh processes fail, and the history recorded after the verdict."""
from __future__ import annotations

import pytest
from runner_fakes import binary_case, case_file, fake_config, fake_session, load_instances

from opbench.gate.baseline import KIND_STAGE2
from opbench.gate.evaluate import GateSettings
from opbench.runloop.gate_fresh_stage import FreshStageError
from opbench.runloop.gate_run import GateHooks, GateRequest, GateSetupError, gate_config, run_gate
from opbench.results.history import HistoryStore
from opbench.runloop.recorded_run import run
from opbench.results.records import RecordedConfig
from opbench.runner.injection import INJECT_ENV
from opbench.verdicts.rules import EXIT_OK, EXIT_SLOW


@pytest.fixture
def instances(tmp_path):
    return load_instances(case_file(tmp_path, binary_case("add"), binary_case("sub")))


@pytest.fixture
def baseline(instances):
    config = fake_config()
    return run(instances, config, session=fake_session(config))


class FrontDoor:
    """What a front door hands the gate: stage 1 on a fake session, and a log of what the
    gate told it."""

    def __init__(self, **target_options):
        self.target_options = target_options
        self.told: list[tuple] = []

    def measure(self, instances, config, json_path, injection, early_stop):
        self.told.append(("measure", config))
        return run(instances, config, json_path=json_path,
                   session=fake_session(config, **self.target_options), early_stop=early_stop)

    def hooks(self) -> GateHooks:
        return GateHooks(measure=self.measure,
                         inherited=lambda options: self.told.append(("inherited", options)),
                         stage2_starting=lambda n: self.told.append(("stage 2", n)),
                         stage2_here=lambda reason: self.told.append(("here", reason)))


def request(baseline, instances, tmp_path, **kw) -> GateRequest:
    return GateRequest(baseline=baseline, baseline_path="base.json", instances=instances,
                       options=kw.pop("options", {}), settings=GateSettings(),
                       json_path=str(tmp_path / "current.json"), **kw)


def test_the_gate_measures_like_its_baseline_and_passes_an_unchanged_run(baseline, instances,
                                                                         tmp_path):
    door = FrontDoor()
    gate = run_gate(request(baseline, instances, tmp_path), door.hooks())
    assert gate.result.exit_code == EXIT_OK and gate.remeasured == {}
    (_, config), = [t for t in door.told if t[0] == "measure"]
    assert config == gate.config
    assert (config.threads, config.processes, config.settings.rounds) == (
        2, 1, baseline.config.settings.rounds)
    assert ("inherited", list(gate.inherited)) in door.told and "--threads 2" in gate.inherited
    assert gate.history is None


def test_options_the_baseline_does_not_record_come_from_the_gate_settings():
    # a baseline that records the least the schema asks for
    recorded = RecordedConfig.from_dict({"reference": "torch", "target": "mindspore",
                                         "device": "cpu", "threads": 2, "modes": ["serial"],
                                         "threshold": 0.8, "settings": {}})
    config, inherited = gate_config({"rounds": 12}, recorded)
    assert config.settings.rounds == 12 and "--rounds" not in " ".join(inherited)
    # threads from the baseline; the budget, which it does not record, from the gate's own
    assert (config.threads, config.settings.max_time_s) == (2, 6.0)
    with pytest.raises(GateSetupError, match="--threads must be a positive integer"):
        gate_config({"threads": 0}, recorded)


def test_a_baseline_of_other_frameworks_or_other_cases_stops_the_gate_before_measuring(
        baseline, instances, tmp_path):
    door = FrontDoor()
    other = baseline.replace(config=baseline.config.replace(target="numpy"))
    with pytest.raises(GateSetupError, match="base.json compares torch with numpy"):
        run_gate(request(other, instances, tmp_path), door.hooks())
    unrelated = load_instances(case_file(tmp_path, binary_case("mul", shape="[3, 3]"),
                                         name="other.yaml"))
    with pytest.raises(GateSetupError, match="shares no instance with the selected cases"):
        run_gate(request(baseline, unrelated, tmp_path), door.hooks())
    assert not [t for t in door.told if t[0] == "measure"]


def test_when_fresh_processes_fail_stage_2_runs_here_and_says_so(baseline, instances,
                                                                 tmp_path, monkeypatch):
    def no_processes(*args, **kwargs):
        raise FreshStageError("cannot start worker process 1")

    monkeypatch.setattr("opbench.runloop.gate_run.remeasure_in_fresh_processes", no_processes)
    opened = []
    monkeypatch.setattr("opbench.runloop.gate_run.open_session",
                        lambda config, injection=None: opened.append(config) or fake_session(
                            config, cost_s=2e-4))
    door = FrontDoor(cost_s=2e-4)     # the target now does twice the work
    gate = run_gate(request(baseline, instances, tmp_path), door.hooks())
    assert gate.result.exit_code == EXIT_SLOW
    assert sorted(gate.remeasured) == ["add", "sub"] and [c.processes for c in opened] == [1]
    assert ("stage 2", 2) in door.told and ("here", "cannot start worker process 1") in door.told
    assert any(n.kind == KIND_STAGE2 and "cannot start worker process 1" in n.message
               for n in gate.result.notes)


def test_the_run_is_recorded_in_the_history_after_the_verdict(baseline, instances, tmp_path):
    db = str(tmp_path / "h.db")
    gate = run_gate(request(baseline, instances, tmp_path, history_db=db), FrontDoor().hooks())
    assert gate.history.recorded and gate.history.message.startswith("history: run #1 ")
    with HistoryStore(db) as store:
        assert store.run_count() == 1


def test_a_self_test_is_never_recorded_in_the_history(baseline, instances, tmp_path,
                                                     monkeypatch):
    monkeypatch.setenv(INJECT_ENV, "sub:1.5")
    db = tmp_path / "h.db"
    gate = run_gate(request(baseline, instances, tmp_path, history_db=str(db)),
                    FrontDoor().hooks())
    assert not gate.history.recorded and "self-test" in gate.history.message
    assert not db.exists()
    assert any(n.kind == "self-test" for n in gate.result.notes)

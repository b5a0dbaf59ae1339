"""The gate's second stage in fresh worker processes (opbench/runloop/gate_fresh_stage.py) on fake
workers: only the ids asked for, every process and pass, a fresh pool each time, and the
errors a parent must turn into a fallback. One test starts a real worker process."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from runner_fakes import binary_case, case_file, fake_config, fake_session_class, load_instances
from worker_fakes import Spawner

from opbench.runloop.gate_fresh_stage import FreshStageError, remeasure_in_fresh_processes
from opbench.runner.workers import WorkerError, WorkerPool, spawn_worker

FakeOpeningSession = fake_session_class()


@pytest.fixture
def instances(tmp_path):
    return load_instances(case_file(tmp_path, binary_case("add"),
                                    binary_case("sub", shape="[2, 3]")))


def test_only_the_ids_asked_for_are_measured_in_every_process_and_pass(instances):
    spawn = Spawner(FakeOpeningSession)
    config = fake_config(processes=2, passes=2)
    records = remeasure_in_fresh_processes(instances, ["sub"], config, spawn=spawn)
    assert list(records) == ["sub"]
    m = records["sub"].measurements["serial"]
    assert m.passes == 2 and sorted(set(m.process_of_round)) == [1, 2]
    assert m.rounds == 4 * m.rounds_per_pass
    assert m.ratio == pytest.approx(1.0)
    assert spawn.spawned == [1, 2]          # a pool of its own, fresh


def test_an_id_gone_from_the_selection_is_an_error_not_a_silent_skip(instances):
    with pytest.raises(FreshStageError, match="not in the selection any more: mul"):
        remeasure_in_fresh_processes(instances, ["add", "mul"], fake_config(processes=2),
                                     spawn=Spawner(FakeOpeningSession))


def test_workers_that_cannot_start_are_a_fresh_stage_error(instances):
    with pytest.raises(FreshStageError, match="cannot start worker process 1"):
        remeasure_in_fresh_processes(instances, ["add"], fake_config(processes=2),
                                     spawn=Spawner(FakeOpeningSession, fail_after=0))


def test_one_process_still_means_a_fresh_one(instances):
    spawn = Spawner(FakeOpeningSession)
    records = remeasure_in_fresh_processes(instances, ["add"], fake_config(processes=1),
                                           spawn=spawn)
    assert spawn.spawned == [1] and list(records) == ["add"]


def test_a_real_worker_process_reports_a_missing_framework(monkeypatch):
    """The real `python -m opbench.runner.worker_main`: asked to set up a framework that does not
    exist, it answers with the reason (no traceback for the user) and the pool refuses."""
    root = str(Path(__file__).resolve().parents[2])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (root, os.environ.get("PYTHONPATH")) if p))
    config = fake_config(processes=1, reference="nosuchframework")
    pool = WorkerPool(config, spawn=spawn_worker)
    with pytest.raises(WorkerError, match="unknown framework 'nosuchframework'"):
        pool.open()
    assert pool.workers == []


def test_the_fresh_stage_takes_its_floors_from_the_machine_facts_cache(instances, tmp_path,
                                                                      monkeypatch):
    """Stage 2's per-call floors come as a run's do (runner/machine_facts.py): measured
    when the cache holds none for this machine and these builds, then read from it."""
    from opbench.runner.machine_facts import CACHED, FactsCache

    measured, obtained = [], []
    real_measure = WorkerPool.measure_overheads
    monkeypatch.setattr(WorkerPool, "measure_overheads",
                        lambda pool: measured.append(1) or real_measure(pool))
    import opbench.runloop.recorded_run as recorded_run
    real_facts = recorded_run.obtain_machine_facts
    monkeypatch.setattr(recorded_run, "obtain_machine_facts",
                        lambda *a, **k: obtained.append(real_facts(*a, **k)) or obtained[-1])
    cache = FactsCache(tmp_path / "facts")
    for _ in range(2):
        remeasure_in_fresh_processes(instances, ["add"], fake_config(processes=1),
                                     spawn=Spawner(FakeOpeningSession), facts_cache=cache)
    assert len(measured) == 1
    assert [facts.source for facts in obtained] == ["measured", CACHED]

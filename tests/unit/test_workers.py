"""The worker pool on fake workers: threads that serve the real worker loop over a real
pipe, with fake frameworks. Rounds from every process, the process recorded for each round,
a dying worker recorded and replaced while the run goes on."""
from __future__ import annotations

import json
import pickle

import pytest
from runner_fakes import binary_case, case_file, fake_config, fake_session_class, load_instances
from worker_fakes import Spawner

from opbench.results.io import validate_record
from opbench.results.recorded_run import run
from opbench.runner.workers import WorkerError, WorkerPool


def _instances(tmp_path, *names):
    return load_instances(case_file(tmp_path, *(binary_case(n) for n in names)))


def test_rounds_are_spread_over_every_process(tmp_path):
    config = fake_config(processes=3)
    spawn = Spawner(fake_session_class())
    pool = WorkerPool(config, spawn=spawn)
    pool.open()
    try:
        record = run(_instances(tmp_path, "a", "b"), config, session=pool,
                     json_path=tmp_path / "r.json")
    finally:
        pool.close()
    validate_record(json.loads((tmp_path / "r.json").read_text()))
    for inst in record["instances"]:
        m = inst["measurements"]["serial"]
        assert sorted(set(m["process_of_round"])) == [1, 2, 3]
        assert len(m["process_of_round"]) == m["rounds"] == len(m["samples_s"]["torch"])
        assert m["n_processes"] == 3 and m["between_process_sd"] is not None
        assert inst["verdict"] in ("PASS", "INCONCLUSIVE")
    assert record["frameworks"]["torch"]["processes"] == 3
    assert spawn.spawned == [1, 2, 3]


def test_a_dying_worker_is_recorded_and_replaced(tmp_path):
    config = fake_config(processes=3)
    spawn = Spawner(fake_session_class(), die_on_extend_in={2})
    with WorkerPool(config, spawn=spawn) as pool:
        pool.open()
        record = run(_instances(tmp_path, "a", "b"), config, session=pool)
    first, second = record["instances"]
    assert any("process 2" in e and "died" in e for e in first["pass_errors"])
    assert set(first["measurements"]["serial"]["process_of_round"]) == {1, 3}
    assert set(second["measurements"]["serial"]["process_of_round"]) == {1, 2, 3}
    assert spawn.spawned == [1, 2, 3, 2]


def test_a_worker_that_cannot_start_fails_the_pool_with_its_message():
    class Broken(fake_session_class()):
        def open(self):
            raise RuntimeError("mindspore: not installed")

    pool = WorkerPool(fake_config(processes=2), spawn=Spawner(Broken))
    with pytest.raises(WorkerError, match="not installed"):
        pool.open()
    assert pool.workers == []


def test_case_instances_pickle(tmp_path):
    inst = _instances(tmp_path, "a")[0]
    assert pickle.loads(pickle.dumps(inst)).id == inst.id

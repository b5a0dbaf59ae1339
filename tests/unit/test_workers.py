"""The worker pool on fake workers: threads that serve the real worker loop over a real
pipe, with fake frameworks. Rounds from every process, the process recorded for each round,
a dying worker recorded and replaced while the run goes on, and its death told in words:
the signal or exit status, and the instance it was running."""
from __future__ import annotations

import json
import pickle

import pytest
from runner_fakes import binary_case, case_file, fake_config, fake_session_class, load_instances
from worker_fakes import Spawner

from opbench.report.text import problem_lines
from opbench.results.io import validate_record
from opbench.runloop.recorded_run import run
from opbench.runner import ipc
from opbench.runner.exits import describe_exit
from opbench.runner.workers import WorkerError, WorkerPool

# A case with a parameter, so its full id (the JSON's) and short id (the tables') differ.
SWEEP_CASE = """
  - name: exp
    params:
      shape: [[16, 64], [4, 8]]
      dtype: [float32]
    inputs:
      x: {shape: $shape, dtype: $dtype}
      y: {shape: $shape, dtype: $dtype}
    torch: {api: torch.add, args: [$x, $y]}
    mindspore: {api: mindspore.add, args: [$x, $y]}
"""
# Popen's return code -> how the message says the worker ended.
ENDINGS = {-11: "was killed by SIGSEGV (signal 11)", -9: "was killed by SIGKILL (signal 9)",
           3: "exited with status 3"}


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
    for inst in record.instances:
        m = inst.measurements["serial"]
        assert sorted(set(m.process_of_round)) == [1, 2, 3]
        assert len(m.process_of_round) == m.rounds == len(m.samples_s["torch"])
        assert m.n_processes == 3 and m.between_process_sd is not None
        assert inst.verdict in ("PASS", "INCONCLUSIVE")
    assert record.frameworks["torch"].processes == 3
    assert spawn.spawned == [1, 2, 3]


def test_a_dying_worker_is_recorded_and_replaced(tmp_path):
    config = fake_config(processes=3)
    spawn = Spawner(fake_session_class(), die_on_extend_in={2})
    with WorkerPool(config, spawn=spawn) as pool:
        pool.open()
        record = run(_instances(tmp_path, "a", "b"), config, session=pool)
    first, second = record.instances
    assert first.pass_errors == (
        "pass 1: worker process 2 was killed by SIGSEGV (signal 11) while running a",)
    assert set(first.measurements["serial"].process_of_round) == {1, 3}
    assert set(second.measurements["serial"].process_of_round) == {1, 2, 3}
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


@pytest.mark.parametrize("code,words", [
    *ENDINGS.items(),
    (-6, "was killed by SIGABRT (signal 6)"),
    (139, "was killed by SIGSEGV (signal 11, reported by a shell as exit status 139)"),
    (137, "was killed by SIGKILL (signal 9, reported by a shell as exit status 137)"),
    (0, "exited with status 0"),
    (1, "exited with status 1"),
    (128, "exited with status 128"),           # 128 + 0: no signal
    (-200, "was killed by signal 200"),        # a number with no name here
    (None, "died (its exit status is unknown)"),
])
def test_an_exit_is_told_by_its_signal_or_status(code, words):
    assert describe_exit(code) == words


@pytest.mark.parametrize("code", sorted(ENDINGS))
def test_a_worker_dying_in_pass_1_names_how_and_the_instance(tmp_path, code):
    config = fake_config(processes=2)
    spawn = Spawner(fake_session_class(), die_on_run_in={1}, exit_code=code)
    instances = load_instances(case_file(tmp_path, SWEEP_CASE))
    json_path = tmp_path / "r.json"
    with WorkerPool(config, spawn=spawn) as pool:
        pool.open()
        record = run(instances, config, session=pool, json_path=json_path)
    crashed, measured = record.instances
    message = (f"worker process 1 {ENDINGS[code]} while running "
               f"exp[shape=16x64,dtype=float32]")
    assert crashed.verdict == "ERROR" and crashed.error == message
    saved = json.loads(json_path.read_text())
    validate_record(saved)
    assert saved["instances"][0]["error"] == message      # the full id in the JSON
    assert pool.restarts == [message] and spawn.spawned == [1, 2, 1]
    assert measured.verdict != "ERROR" and not measured.pass_errors
    # the terminal's problem lines name the instance by the short id, as its table does
    assert problem_lines(record) == [
        f"exp[16x64,float32]: worker process 1 {ENDINGS[code]} while running "
        f"exp[16x64,float32]"]


def test_a_worker_dying_in_a_later_pass_is_a_pass_error_naming_the_instance(tmp_path):
    from opbench.report.text import notes_lines

    config = fake_config(processes=2)
    spawn = Spawner(fake_session_class(), die_on_extend_in={2}, exit_code=-9)
    instances = load_instances(case_file(tmp_path, SWEEP_CASE))
    with WorkerPool(config, spawn=spawn) as pool:
        pool.open()
        record = run(instances, config, session=pool, json_path=tmp_path / "r.json")
    first = record.instances[0]
    assert first.pass_errors == (
        "pass 1: worker process 2 was killed by SIGKILL (signal 9) while running "
        "exp[shape=16x64,dtype=float32]",)
    assert json.loads((tmp_path / "r.json").read_text())["instances"][0]["pass_errors"] == \
        list(first.pass_errors)
    assert first.verdict != "ERROR"     # worker 1's rounds still make a measurement
    assert ("exp[16x64,float32]: pass 1: worker process 2 was killed by SIGKILL (signal 9) "
            "while running exp[16x64,float32]; the earlier passes' rounds are kept"
            ) in notes_lines(record, short=True)


def test_a_worker_dying_while_starting_says_so():
    class Crashing(fake_session_class()):
        def open(self):
            from worker_fakes import Dies

            raise Dies()

    pool = WorkerPool(fake_config(processes=2), spawn=Spawner(Crashing))
    with pytest.raises(WorkerError, match=r"^worker process 1 was killed by SIGSEGV \(signal "
                                          r"11\) while starting its frameworks$"):
        pool.open()


def _silent_worker(returncode):
    """A Worker whose process never answers (the other end of its pipe is returned)."""
    from multiprocessing import Pipe

    from worker_fakes import FakeProcess

    from opbench.runner.workers import Worker

    parent, child = Pipe()
    process = FakeProcess()
    process.returncode = returncode
    return Worker(parent, process, 2), child


def test_a_hung_worker_is_stopped_naming_the_instance(tmp_path):
    instance = load_instances(case_file(tmp_path, SWEEP_CASE))[0]
    worker, child = _silent_worker(None)
    worker.send(ipc.Extend(instance, {}, 1))
    with pytest.raises(WorkerError, match=r"^worker process 2 sent nothing for 0 s while "
                                          r"running exp\[shape=16x64,dtype=float32\] and "
                                          r"was stopped$"):
        worker.receive(timeout_s=0.01)
    child.close()


def test_a_worker_dead_before_a_request_says_the_request_was_not_sent(tmp_path):
    instance = load_instances(case_file(tmp_path, SWEEP_CASE))[0]
    worker, child = _silent_worker(-9)
    worker.conn.close()                     # its socket gone, as after a crash
    with pytest.raises(WorkerError) as caught:
        worker.call(ipc.Run(instance))
    assert str(caught.value).startswith(
        "worker process 2 was killed by SIGKILL (signal 9) before running "
        "exp[shape=16x64,dtype=float32] (the request could not be sent: ")
    child.close()


def test_a_replacement_that_cannot_open_is_killed_and_the_run_goes_on(tmp_path):
    """Fixed bug (found unifying the two pools): a fresh worker started in place of a dead
    one, whose frameworks then failed to open, was dropped from the pool but left running.
    Now it is killed, both reasons are kept, and the other process measures on."""
    opened = []

    class FailsThirdOpen(fake_session_class()):
        def open(self):
            opened.append(1)
            if len(opened) == 3:            # workers 1 and 2, then 1's replacement
                raise RuntimeError("mindspore could not be set up (fake)")
            return super().open()

    spawn = Spawner(FailsThirdOpen, die_on_run_in={1})
    started = []
    instances = load_instances(case_file(tmp_path, SWEEP_CASE))
    with WorkerPool(fake_config(processes=2),
                    spawn=lambda *a: started.append(spawn(*a)) or started[-1]) as pool:
        pool.open()
        record = run(instances, fake_config(processes=2), session=pool,
                     json_path=tmp_path / "r.json")
        assert [p.index for p in pool.processes] == [2]
    replacement = started[2]
    assert replacement.index == 1 and replacement.process.poll() is not None   # killed
    assert len(pool.restarts) == 2 and "fake" in pool.restarts[1]
    assert record.instances[0].verdict == "ERROR"
    assert record.instances[1].verdict != "ERROR"       # process 2 measured it

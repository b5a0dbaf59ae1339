"""The model's processes on the runner's process layer, framework-free: a replay process
answers ipc.ReplayStep through the one dispatcher (its framework set up once, pinned
through runner/pinning), a replay that dies is a ReplayFailed naming how and its stderr's
last line, the capture and the replays are started by the runner's one spawn function in
the script's interpreter, and the interpreter is checked by one probe for both
frameworks."""
from __future__ import annotations

import sys
import threading
from multiprocessing import Pipe
from types import SimpleNamespace

import pytest
from runner_fakes import FakeAdapter, FakeClock
from test_model_impact import TORCH_COST, _functions, _program
from worker_fakes import FakeProcess

import opbench.frameworks
import opbench.model.impact.processes as processes
import opbench.model.replay.main as replay_main
import opbench.runner.spawn as spawn
from opbench.model.steady import find_region, step_program
from opbench.runner import ipc
from opbench.runner.child_env import is_this_interpreter
from opbench.runner.workers import Worker


@pytest.fixture
def torch_here(monkeypatch):
    """get_adapter gives a numpy torch on a fake clock; returns the adapters made."""
    made = []

    def adapter(name):
        made.append(FakeAdapter(name, FakeClock(), costs=TORCH_COST,
                                functions=_functions("torch.", None)))
        return made[-1]

    monkeypatch.setattr(opbench.frameworks, "get_adapter", adapter)
    return made


def _step():
    program = _program()
    return step_program(program, find_region(program, None))


def _request(**fields):
    return ipc.ReplayStep(**{"framework": "torch", "program": _step(), "threads": 2,
                             **fields})


def test_a_replay_process_answers_several_requests_with_its_framework_set_up_once(
        torch_here, monkeypatch):
    pinned = []
    monkeypatch.setattr(replay_main, "pin_process", lambda cpus: pinned.append(cpus))
    server = replay_main.ReplayServer()
    probe = server.dispatcher.answer(_request(kind=ipc.REPLAY_PROBE, cpus=(1,)))
    timed = server.dispatcher.answer(_request(cpus=(1,), samples=2, passes=1, rounds=2))
    assert isinstance(probe, ipc.Ok) and isinstance(timed, ipc.Ok)
    assert len(torch_here) == 1 and pinned == [(1,)]      # imported and pinned once
    found = probe.value
    assert isinstance(found, ipc.ReplayResult) and found.framework == "torch"
    assert found.threads == 2 and len(found.fingerprints) == len(found.status)
    assert found.samples_s == ()
    timing = timed.value
    assert len(timing.samples_s) == 2 * 2                  # samples x rounds
    assert all(len(times) == 1 * 2 for times in timing.per_call_s)   # passes x rounds
    # another set-up needs another process: refused, and the process goes on
    other = server.dispatcher.answer(_request(threads=1, cpus=(1,)))
    assert isinstance(other, ipc.Failed) and "needs a fresh process" in other.message
    assert isinstance(server.dispatcher.answer(ipc.Close()), ipc.Ok)


def test_a_replay_request_crosses_the_socket_to_the_replay_server(torch_here):
    parent, child = Pipe()
    server = threading.Thread(
        target=ipc.answer_requests, args=(child, replay_main.ReplayServer().dispatcher))
    server.start()
    worker = Worker(parent, FakeProcess(), 1, "torch")
    result = worker.call(_request(kind=ipc.REPLAY_PROBE))
    assert isinstance(result, ipc.ReplayResult) and len(result.status) == len(_step().calls)
    worker.call(ipc.Close())
    server.join(5)
    assert not server.is_alive()


class _DeadConnection:
    closed = False

    def send_bytes(self, data):
        pass

    def poll(self, timeout=None):
        return True

    def recv_bytes(self):
        raise EOFError

    def close(self):
        self.closed = True


def test_a_replay_process_that_dies_is_a_replay_failed_with_its_last_words(tmp_path):
    process = FakeProcess()
    process.returncode = -11
    log = tmp_path / "replay.log"
    log.write_text("[WARNING] noise\nSegmentation fault in KernelThread_0\n",
                   encoding="utf-8")
    replay = processes.ReplayProcess(Worker(_DeadConnection(), process, 2, "mindspore"),
                                     "mindspore", log)
    with pytest.raises(processes.ReplayFailed) as found:
        replay.replay(_request(framework="mindspore"))
    message = str(found.value)
    assert "worker process 2 (mindspore) was killed by SIGSEGV" in message
    assert "replaying the model's step" in message
    assert message.endswith("(Segmentation fault in KernelThread_0)")
    with pytest.raises(ValueError, match="a mindspore replay process was asked"):
        replay.replay(_request(framework="torch"))


def test_replays_are_spawned_by_the_runners_spawn_in_the_scripts_interpreter(
        tmp_path, monkeypatch):
    seen = []

    def spawn_worker(index, side, python, **options):
        seen.append((index, side, python, options))
        return Worker(_DeadConnection(), FakeProcess(), index, side)

    monkeypatch.setattr(processes, "spawn_worker", spawn_worker)
    replay = processes.start_replay("mindspore", "/envs/ms29/bin/python", tmp_path, 3)
    ((index, side, python, options),) = seen
    assert (index, side, python) == (3, "mindspore", "/envs/ms29/bin/python")
    assert options["module"] == processes.REPLAY_MODULE and options["this_opbench"]
    assert options["env_defaults"] == spawn.QUIET_MINDSPORE
    replay.close()
    assert not replay.stderr_path.exists()


def test_the_capture_is_started_by_the_same_spawn_with_the_users_terminal(tmp_path,
                                                                        monkeypatch):
    seen = []

    def spawn_child(module, args, python, **options):
        seen.append((module, list(args), python, options))
        return SimpleNamespace(wait=lambda timeout=None: 0)

    monkeypatch.setattr(processes, "spawn_child", spawn_child)
    status = processes.run_capture(processes.Interpreter("/venv/bin/python", True),
                                   ["train.py", "--epochs", "1"], tmp_path / "p.json", 500, 3)
    ((module, args, python, options),) = seen
    assert status == 0 and module == processes.CAPTURE_MODULE
    assert python == "/venv/bin/python" and options["stdin"] is None
    assert args[-4:] == ["--", "train.py", "--epochs", "1"] and "--steps" in args


def test_the_model_checks_its_interpreter_once_for_both_frameworks(monkeypatch):
    from opbench.runner.interpreters import InterpreterFacts
    probes = []

    def check(python, frameworks, this_opbench=None):
        probes.append((python, frameworks, this_opbench))
        return InterpreterFacts(opbench="0.1.0", has_framework=True, python="3.11.2")

    monkeypatch.setattr(processes, "check_interpreter", check)
    version = processes.interpreter_version(processes.Interpreter("/venv/bin/python", True),
                                            ("torch", "mindspore"))
    assert version == "3.11.2"
    assert probes == [("/venv/bin/python", ("torch", "mindspore"), True)]


def test_a_childs_environment_comes_from_the_one_spawn(monkeypatch):
    seen = []
    monkeypatch.setattr(spawn.subprocess, "Popen",
                        lambda argv, **kwargs: seen.append((argv, kwargs)))
    monkeypatch.delenv("GLOG_v", raising=False)
    spawn.spawn_child("opbench.model.replay.main", ["7"], "/envs/ms29/bin/python",
                      env_defaults={"GLOG_v": "3"}, pass_fds=(7,))
    monkeypatch.setenv("GLOG_v", "1")
    spawn.spawn_child("opbench.runner.worker_main", ["8"])
    (argv, there), (here_argv, here) = seen
    assert argv == ["/envs/ms29/bin/python", "-m", "opbench.model.replay.main", "7"]
    assert there["env"]["GLOG_v"] == "3" and there["pass_fds"] == (7,)
    assert here_argv[0] == sys.executable and here["env"]["GLOG_v"] == "1"   # the user's wins
    assert here["env"]["PYTHONPATH"].split(":")[0] != there["env"].get("PYTHONPATH", "")


def test_this_interpreter_is_recognised_by_its_path_not_its_links():
    assert is_this_interpreter(None) and is_this_interpreter(sys.executable)
    assert not is_this_interpreter("/envs/ms29/bin/python")

"""The one IPC module (runner/ipc.py): every request and reply survives the socket, the
dispatcher answers through its table, and a worker outlives whatever a parent sends it."""
from __future__ import annotations

import dataclasses
import re
import threading
from multiprocessing import Pipe

import numpy as np
import pytest
from runner_fakes import binary_case, case_file, fake_config, fake_session_class, load_instances
from worker_fakes import FakeProcess

from opbench.runner import ipc
from opbench.runner.measure import WarmUp
from opbench.runner.protocol import BACKWARD, FORWARD
from opbench.runner.side_server import SideServer
from opbench.runner.worker_main import WorkerServer, serve
from opbench.runner.workers import Worker, WorkerError


@pytest.fixture
def instance(tmp_path):
    return load_instances(case_file(tmp_path, binary_case("a")))[0]


def _examples(instance):
    """One of every request and reply ipc.py defines, with realistic fields."""
    config = fake_config(processes=2)
    record = {"id": instance.id, "measurements": [{"rounds": [1.5e-6, 1.6e-6]}]}
    return [
        ipc.Open(config, (101, 102), 1), ipc.OpenSide(config, "mindspore", 2),
        ipc.Overheads(), ipc.Ceilings(), ipc.CheckApis((instance, instance)),
        ipc.Run(instance), ipc.Extend(instance, record, 3), ipc.Close(),
        ipc.Forward(instance), ipc.Backward(instance, [1.0, 2.0]),
        ipc.Sample(FORWARD, 64, "serial", True), ipc.RunWarmUp(BACKWARD, "async", 0.05),
        ipc.SyncCost(FORWARD), ipc.PeakMemory(), ipc.ProfileCall(FORWARD, "serial", 7),
        ipc.SideInfo(), ipc.SideOverheads(),
        ipc.SideCeilings(), ipc.SideCheckApis((instance,)),
        ipc.Ok({"torch": {"sync_s": 1e-7}}), ipc.Ok(None),
        ipc.Failed("RuntimeError: no", "Traceback ...\n"), ipc.Ok(WarmUp(3, 1e-3)),
        ipc.Ok(ipc.ForwardDone(("out",), "f" * 64)), ipc.Ok(ipc.BackwardDone({"x": 1.0})),
        ipc.Ok(ipc.OperatorFailed("mindspore.add failed")),
        # a model's replay: the step program is opaque here (a StepProgram in the model)
        ipc.ReplayStep("mindspore", ("step", 1), ipc.REPLAY_PROBE, threads=2, cpus=(0, 1),
                       launch="queued", routes={3: 1}, skip=(2,)),
        ipc.Ok(ipc.ReplayResult("torch", "2.13.0", 2, "blocking", ("ok",), 4242,
                                warmup_runs=3, samples_s=(1e-3, 1.1e-3),
                                per_call_s=((1e-4, 1.2e-4),))),
        # `--suggest`: a step and its swap, interleaved in one process
        ipc.ReplayPaired("torch", (("step", 1), ("swapped", 1)), rounds=4, launch="blocking"),
        ipc.Ok(ipc.PairedResult("torch", "blocking", 4242, (("ok",), ("ok",)), ({}, {}),
                                samples_s=(((1e-3,),), ((0.9e-3,),)))),
    ]


def _message_classes():
    return {kind for kind in vars(ipc).values()
            if isinstance(kind, type) and dataclasses.is_dataclass(kind)
            and issubclass(kind, (ipc.Request, ipc.Reply))}


def test_every_request_and_reply_survives_the_socket(instance):
    examples = _examples(instance)
    assert {type(m) for m in examples} == _message_classes()     # none left out
    parent, child = Pipe()
    for message in examples:
        ipc.send(parent, message)
        back = ipc.receive(child)
        assert type(back) is type(message) and back == message
    parent.close(), child.close()


def test_numpy_values_cross_whole():
    output = np.arange(12, dtype=np.float32).reshape(3, 4)
    parent, child = Pipe()
    ipc.send(child, ipc.Ok(ipc.ForwardDone(output, "c" * 64)))
    back = ipc.receive(parent).value
    assert back.output.dtype == np.float32 and np.array_equal(back.output, output)
    parent.close(), child.close()


def test_requests_are_frozen(instance):
    with pytest.raises(dataclasses.FrozenInstanceError):
        ipc.Run(instance).instance = None      # type: ignore[misc]


def test_bytes_that_do_not_unpickle_are_one_clear_error():
    parent, child = Pipe()
    parent.send_bytes(b"\x80\x05not a pickle")
    with pytest.raises(ipc.UnreadableMessage, match="could not be read .*same opbench"):
        ipc.receive(child)
    parent.close(), child.close()


# -- the dispatcher -----------------------------------------------------------------------------

def test_the_dispatcher_answers_with_the_handler_of_the_requests_type(instance):
    dispatcher = ipc.Dispatcher({ipc.Run: lambda request: request.instance.id,
                                 ipc.Overheads: lambda _: {"torch": 1.0}})
    assert dispatcher.answer(ipc.Run(instance)) == ipc.Ok(instance.id)
    assert dispatcher.answer(ipc.Overheads()) == ipc.Ok({"torch": 1.0})


@pytest.mark.parametrize("request_", [("open", None, [], 1), ipc.Ceilings(), "close"])
def test_an_unknown_request_is_a_failed_reply_naming_what_is_answered(request_):
    reply = ipc.Dispatcher({ipc.Overheads: lambda _: None}).answer(request_)
    assert isinstance(reply, ipc.Failed)
    assert reply.message.startswith("unknown request ")
    assert reply.message.endswith(f"(a {type(request_).__name__}): this process answers "
                                  f"Overheads")


def test_a_handler_that_raises_is_a_failed_reply_with_message_and_traceback():
    def broken(_):
        raise RuntimeError("the kernel failed")

    reply = ipc.Dispatcher({ipc.Overheads: broken}).answer(ipc.Overheads())
    assert reply.message == "RuntimeError: the kernel failed"
    assert "in broken" in reply.traceback and reply.traceback.startswith("Traceback")


def test_a_base_exception_is_not_swallowed():
    """A crash (the fake workers' Dies, a KeyboardInterrupt) must end the worker, as before."""
    def interrupted(_):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ipc.Dispatcher({ipc.Overheads: interrupted}).answer(ipc.Overheads())


@pytest.mark.parametrize("request_,words", [
    (None, "waiting for its first request"),
    (ipc.Open(None, (), 1), "starting its frameworks"),
    (ipc.Sample(FORWARD, 4, "serial"), "timing a[x]"),
    (ipc.Close(), "closing"),
])
def test_each_request_says_what_the_worker_is_doing(request_, words):
    assert ipc.activity(request_, current="a[x]") == words


def test_a_request_about_an_instance_names_it(instance):
    for kind in (ipc.Run, ipc.Forward):
        assert ipc.activity(kind(instance)) == f"running {instance.id}"
    assert ipc.activity(ipc.Extend(instance, {}, 2)) == f"running {instance.id}"


# -- the worker's table -------------------------------------------------------------------------

def test_the_side_servers_table_is_the_side_requests():
    config = fake_config()
    side = SideServer(fake_session_class()(config, sides=("torch",)), "torch")
    assert set(side.handlers) == set(ipc.SIDE_REQUESTS)


def test_a_workers_table_takes_every_request_ipc_defines():
    """...but the model's replay's, which its own server answers (model/replay/main.py)."""
    from opbench.model.replay.main import ReplayServer

    requests = {kind for kind in _message_classes() if issubclass(kind, ipc.Request)}
    replay_requests = {ipc.ReplayStep, ipc.ReplayPaired}
    assert set(WorkerServer().dispatcher.handlers) == requests - replay_requests
    assert set(ReplayServer().dispatcher.handlers) == replay_requests | {ipc.Close}


def test_a_side_request_before_the_side_is_open_says_what_comes_first(instance):
    reply = WorkerServer().dispatcher.answer(ipc.Forward(instance))
    assert reply.message == ("RuntimeError: Forward is a side's request and this worker "
                             "holds no side: OpenSide comes first")
    reply = WorkerServer().dispatcher.answer(ipc.Overheads())
    assert reply.message == ("RuntimeError: no framework is set up in this worker: Open or "
                             "OpenSide comes first")


def test_a_side_worker_refuses_a_request_its_side_does_not_answer():
    config = fake_config()
    side = SideServer(fake_session_class()(config, sides=("torch",)), "torch")
    with pytest.raises(ValueError, match=r"^unknown request Run\(.*\(a Run\): this process "
                                         r"answers Backward, Forward, PeakMemory"):
        side.answer(ipc.Run(None))


# -- a worker over a real pipe --------------------------------------------------------------------

def _served():
    """(the parent's Worker, the serving thread) for a worker loop on fake frameworks."""
    parent, child = Pipe()
    session_class = fake_session_class()
    thread = threading.Thread(
        target=serve, args=(child,),
        kwargs={"session_factory": lambda config, **kw: session_class(config, **kw)},
        daemon=True)
    thread.start()
    return Worker(parent, FakeProcess(), 1), thread


def test_a_worker_survives_an_unreadable_message_and_an_unknown_request(instance):
    worker, thread = _served()
    worker.conn.send_bytes(b"garbage")
    with pytest.raises(WorkerError, match="could not be read"):
        worker.receive(timeout_s=10)
    worker.conn.send(("open", fake_config(), [], 1))          # the old verb tuple
    with pytest.raises(WorkerError, match=r"^unknown request \('open', .*\(a tuple\)"):
        worker.receive(timeout_s=10)
    info = worker.call(ipc.Open(fake_config(), (), 1))        # still answering
    assert set(info) == {"torch", "mindspore"}
    record = worker.call(ipc.Run(instance))
    assert record["id"] == instance.id and record["measurements"]
    worker.close()
    thread.join(timeout=10)
    assert not thread.is_alive()                              # Close ended the loop


def test_a_side_worker_answers_its_requests_in_turn(instance):
    worker, thread = _served()
    info = worker.call(ipc.OpenSide(fake_config(), "torch", 1))
    assert (info["name"], info["version"]) == ("torch", "0.0-fake")
    done = worker.call(ipc.Forward(instance))
    assert isinstance(done, ipc.ForwardDone) and len(done.inputs_checksum) == 64
    assert worker.current == instance.id                      # for the messages
    seconds, cpu = worker.call(ipc.Sample(FORWARD, 8, "serial", True))
    assert seconds > 0 and cpu is None                        # a fake clock reads no CPU
    with pytest.raises(WorkerError, match="unknown request"):
        ipc.send(worker.conn, ("sample", FORWARD, 8, "serial"))
        worker.receive(timeout_s=10)
    worker.close()
    thread.join(timeout=10)


def test_a_parent_refuses_something_that_is_no_reply():
    parent, child = Pipe()
    worker = Worker(parent, FakeProcess(), 3)
    ipc.send(child, ("ok", 1))
    with pytest.raises(WorkerError, match=r"^worker process 3 answered tuple, not a reply, "
                                          r"while waiting for its first request$"):
        worker.receive(timeout_s=10)
    parent.close(), child.close()


def test_the_loop_answers_until_close_and_runs_after_each_between():
    parent, child = Pipe()
    for request in (ipc.Overheads(), ("what",), ipc.Close(), ipc.Overheads()):
        ipc.send(parent, request)
    parent.send_bytes(b"never read")
    after = []
    status = ipc.answer_requests(child, ipc.Dispatcher({ipc.Overheads: lambda _: 7,
                                                        ipc.Close: lambda _: None}),
                                 after_each=lambda: after.append(1))
    replies = [ipc.receive(parent) for _ in range(3)]
    assert status == 0 and len(after) == 2        # not after Close's reply
    assert replies[0] == ipc.Ok(7) and isinstance(replies[1], ipc.Failed)
    assert replies[2] == ipc.Ok(None) and not parent.poll(0)   # nothing after Close
    parent.close(), child.close()


def test_the_loop_ends_quietly_when_the_parent_goes():
    parent, child = Pipe()
    parent.close()
    assert ipc.answer_requests(child, ipc.Dispatcher({})) == 0
    child.close()



def test_a_parent_names_the_worker_whose_reply_it_cannot_read(instance):
    parent, child = Pipe()
    worker = Worker(parent, FakeProcess(), 2, "mindspore")
    worker.send(ipc.Run(instance))
    child.send_bytes(b"\x80\x05truncated")
    with pytest.raises(WorkerError, match=rf"^worker process 2 \(mindspore\) answered "
                                          rf"unreadably while running {re.escape(instance.id)}: "
                                          rf"a message of 11 bytes could not be read"):
        worker.receive(timeout_s=10)
    parent.close(), child.close()

"""Activation checkpointing (model/recompute.py): the capture's marking (observer.py
checkpointed, torch_checkpoint.py's wrapper), the program field in the capture file, which
calls each backward recomputes, and the torch replay running them once more in the
backward's window (numpy fake adapter, a counting function). Fake torch; the real one is
tests/integration/test_model_recompute.py."""
from __future__ import annotations

import json
import sys
import types
from dataclasses import replace

import numpy as np
from runner_fakes import FakeAdapter, FakeClock

from opbench.frameworks.apimap import ApiMapping
from opbench.model.capture.observer import Capture
from opbench.model.capture.torch_checkpoint import TorchCheckpoint
from opbench.model.program import Call, Ext, Program, Ref
from opbench.model.recompute import recompute_note, recomputed_before
from opbench.model.replay import executor
from opbench.model.replay.executor import Replayer
from opbench.model.replay.trainable import is_differentiation
from tests.unit.test_model_capture import (Feeder, FakeParameter, FakeTensor, _event,
                                           torch)  # noqa: F401  (torch: a fixture)
from tests.unit.test_model_replay_compiled import FUNCTIONS, _call, _step


# -- the capture's marking ---------------------------------------------------------------------

def test_calls_made_inside_a_checkpoint_are_marked_and_others_are_not(torch):
    capture = Capture()
    feed = Feeder(capture)
    w = FakeParameter((8, 8))
    x = feed.function("torch.matmul", (FakeTensor((4, 8)), w), result=FakeTensor((4, 8)))
    first = capture.next_position()
    h = feed.function("torch.relu", (x,), result=FakeTensor((4, 8)))
    h = feed.function("torch.matmul", (h, w), result=FakeTensor((4, 8)))
    capture.checkpointed(first)
    feed.function("torch.sum", (h,), result=FakeTensor(()))
    calls = capture.calls([_event(i, 100 * i, 10) for i in range(4)])
    assert [c.recompute for c in calls] == [False, True, True, False]
    # the reads are unchanged: the marked calls are the step's own calls
    assert calls[2].args[0] == Ref(1)


def test_a_reentrant_checkpoint_s_calls_are_marked_as_made_with_grad(torch, monkeypatch):
    """torch's CheckpointFunction runs the block under no_grad; its recompute runs it with
    grad, and the weights inside get their gradient through it."""
    capture = Capture()
    feed = Feeder(capture)
    first = capture.next_position()
    monkeypatch.setattr(sys.modules["torch"], "is_grad_enabled", lambda: False, raising=False)
    feed.function("torch.relu", (FakeTensor((4, 8)),), result=FakeTensor((4, 8)))
    monkeypatch.setattr(sys.modules["torch"], "is_grad_enabled", lambda: True, raising=False)
    capture.checkpointed(first)
    (call,) = capture.calls([_event(0, 0, 10)])
    assert call.recompute and call.grad_enabled


def test_the_wrapper_marks_only_a_checkpoint_entered_with_grad_and_uninstall_restores_it(
        monkeypatch):
    grad = {"on": True}

    def checkpoint(function, *args, **kwargs):
        return function(*args, **kwargs)

    fake = types.ModuleType("torch")
    fake.is_grad_enabled = lambda: grad["on"]
    module = types.ModuleType("torch.utils.checkpoint")
    module.checkpoint = checkpoint
    fake.utils = types.SimpleNamespace(checkpoint=module)
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.setitem(sys.modules, "torch.utils", fake.utils)
    monkeypatch.setitem(sys.modules, "torch.utils.checkpoint", module)
    seen = []
    recorder = types.SimpleNamespace(next_position=lambda: 5, checkpointed=seen.append)
    wrapper = TorchCheckpoint(recorder)
    wrapper.install()
    try:
        assert module.checkpoint(lambda a, b=0: a + b, 1, b=2) == 3
        grad["on"] = False
        assert module.checkpoint(lambda a: a, 4) == 4
    finally:
        wrapper.uninstall()
    assert seen == [5]
    assert module.checkpoint is checkpoint


# -- the capture file --------------------------------------------------------------------------

def _plain(index: int, recompute: bool = False) -> Call:
    return Call(index=index, framework="torch", api="torch.relu", kind="function",
                replay_api="torch.relu", args=(Ext(0),), kwargs=(),
                outputs=("tensor", (4, 8), "float32"), duration_ns=5, start_ns=0,
                recompute=recompute)


def test_the_field_round_trips_and_an_unmarked_call_writes_no_key():
    program = Program(framework="torch", version="2", threads=1, launch="blocking",
                      device="cpu", timing="serial", calls=(_plain(0), _plain(1, True)),
                      externals=())
    data = json.loads(json.dumps(program.to_json()))
    assert "rc" not in data["calls"][0] and data["calls"][1]["rc"] is True
    assert Program.from_json(data) == program


# -- which calls each backward recomputes ------------------------------------------------------

def _backward(index: int, loss: int) -> Call:
    return replace(_call(index, "Tensor.backward", Ref(loss), outputs=("none",)),
                   backward=True)


def _marked(call: Call) -> Call:
    return replace(call, recompute=True)


def test_each_backward_recomputes_the_marked_calls_since_the_previous_one():
    calls = (_marked(_call(0, "torch.matmul", Ext(0), Ext(1))),
             _call(1, "torch.relu", Ref(0)),
             _backward(2, 1),
             _call(3, "torch.matmul", Ext(0), Ext(1)),
             _backward(4, 3),
             _marked(_call(5, "torch.relu", Ext(0))),
             _marked(_call(6, "torch.relu", Ref(5))),
             _backward(7, 6),
             _marked(_call(8, "torch.relu", Ext(0))))       # no backward after it
    assert recomputed_before(calls, is_differentiation) == {2: (0,), 7: (5, 6)}
    note = recompute_note(calls, is_differentiation)
    assert note.startswith("activation checkpointing: 3 call(s) recomputed in 2 backward(s)")
    assert recompute_note(calls[3:5], is_differentiation) is None


# -- the torch replay --------------------------------------------------------------------------

def _counting(seen=None):
    counts = {"torch.matmul": 0, "torch.relu": 0}

    def counted(api):
        def call(*args, **kwargs):
            counts[api] += 1
            if seen is not None:
                seen.append(args[0])
            return FUNCTIONS[api](*args, **kwargs)
        return call
    return counts, {**FUNCTIONS, "torch.matmul": counted("torch.matmul"),
                    "torch.relu": counted("torch.relu"), "Tensor.backward": lambda loss: None}


def _recompute_step():
    return _step(_call(0, "torch.matmul", Ext(0), Ext(1)),
                 _marked(_call(1, "torch.relu", Ref(0))),
                 _marked(_call(2, "torch.matmul", Ref(1), Ext(1))),
                 _call(3, "torch.relu", Ref(2)),
                 _backward(4, 3))


def _replayer(monkeypatch, functions):
    monkeypatch.setattr(executor, "clearing_grads", lambda fn, weights: fn)
    monkeypatch.setattr(executor, "make_trainable", lambda framework, tensor, name: tensor)
    monkeypatch.setattr(executor, "without_grad", lambda fn: fn)      # numpy: no grad mode
    monkeypatch.setattr(executor, "grad_mode_setter", lambda: lambda enabled: None)
    adapter = FakeAdapter("torch", FakeClock(), functions=functions)
    return Replayer(_recompute_step(), "torch", adapter, ApiMapping([]), clock=adapter.clock)


def test_the_backward_runs_the_checkpointed_calls_again_in_every_timed_path(monkeypatch):
    counts, functions = _counting()
    replayer = _replayer(monkeypatch, functions)
    replayer.probe()
    assert all(s.ok for s in replayer.status)
    assert counts == {"torch.matmul": 2, "torch.relu": 2}      # the probe: once each
    assert replayer._recomputed == {4: (1, 2)}
    # the loop, not the written-out step: the rerun reads results through the getters
    assert replayer._compiled is None
    before = dict(counts)
    replayer._run()
    assert counts["torch.matmul"] - before["torch.matmul"] == 3     # 2 in the step, 1 again
    assert counts["torch.relu"] - before["torch.relu"] == 3
    before = dict(counts)
    replayer.time_calls(1)
    assert counts["torch.matmul"] - before["torch.matmul"] == 3


def test_the_rerun_reads_what_the_step_read_and_keeps_nothing_alive(monkeypatch):
    """The rerun's input (matmul 0's result) is kept until the backward; what the region's
    results held before the rerun is put back (dropped results stay dropped)."""
    seen = []
    counts, functions = _counting(seen)
    replayer = _replayer(monkeypatch, functions)
    replayer.probe()
    assert 0 in replayer._reads[4]
    seen.clear()
    replayer._run()
    results = replayer._results
    # six calls read a first argument (four in the step, two again), each a real value:
    # none was dropped before the backward that reads it again
    assert len(seen) == 6 and all(isinstance(s, np.ndarray) for s in seen)
    # the rerun's relu read matmul 0's result as the step's relu did
    np.testing.assert_array_equal(seen[1], seen[4])
    # the region's results are as the step's releases left them
    assert results[1] is None and results[2] is None


def test_a_step_without_checkpointing_is_written_out_as_before(monkeypatch):
    counts, functions = _counting()
    monkeypatch.setattr(executor, "clearing_grads", lambda fn, weights: fn)
    monkeypatch.setattr(executor, "make_trainable", lambda framework, tensor, name: tensor)
    adapter = FakeAdapter("torch", FakeClock(), functions=functions)
    plain = _step(_call(0, "torch.matmul", Ext(0), Ext(1)), _call(1, "torch.relu", Ref(0)),
                  _backward(2, 1))
    replayer = Replayer(plain, "torch", adapter, ApiMapping([]), clock=adapter.clock)
    replayer.probe()
    assert replayer._recomputed == {} and replayer._compiled is not None

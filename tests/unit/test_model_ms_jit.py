"""A `mindspore.jit`-compiled function captured as one call that says why it is not replayed
(opbench/model/capture/ms_jit.py), on a FAKE `mindspore` module: before, a @jit training
step was captured as its `asnumpy` readback alone (coverage 100%, self-check -100%)."""
from __future__ import annotations

import sys
import types

import pytest

from opbench.model.capture.ms_jit import JIT_API, MindSporeJit


class Recorder:
    def __init__(self):
        self.position = 4
        self.calls = []

    def next_position(self):
        return self.position

    def compiled(self, *args):
        self.calls.append(args)


@pytest.fixture
def mindspore(monkeypatch):
    def jit(function=None, *, jit_level="O0"):
        if function is None:
            return lambda fn: jit(fn, jit_level=jit_level)
        return lambda *a, **k: ("graph", jit_level, function(*a, **k))

    fake = types.ModuleType("mindspore")
    fake.jit = jit
    monkeypatch.setitem(sys.modules, "mindspore", fake)
    monkeypatch.delenv("MS_JIT", raising=False)
    return fake


def test_each_call_of_a_compiled_function_is_one_timed_call_with_its_reason(mindspore):
    recorder, synced, original = Recorder(), [], mindspore.jit
    jit = MindSporeJit(recorder, sync=lambda: synced.append(True))
    jit.install()
    try:
        @mindspore.jit
        def train_step(x, y):
            return x + y

        @mindspore.jit(jit_level="O1")
        def evaluate(x):
            return train_step(x, 1)          # a compiled function inside another: one call
        assert train_step(1, 2) == ("graph", "O0", 3)
        assert evaluate(5) == ("graph", "O1", ("graph", "O0", 6))
    finally:
        jit.uninstall()
    assert synced == [True, True]                      # the queued work waited for
    (api, args, kwargs, result, problem, first, elapsed), second = recorder.calls
    assert api == JIT_API and args == (1, 2) and kwargs == {} and first == 4
    assert result == ("graph", "O0", 3) and elapsed >= 0
    assert "jit-compiled function (test_each_call" in problem and "MS_JIT=0" in problem
    assert second[1] == (5,) and "evaluate" in second[4]
    assert mindspore.jit is original                   # its own function back


def test_with_ms_jit_0_nothing_is_wrapped(mindspore, monkeypatch):
    """MindSpore then runs the function call by call: the tracer captures those calls."""
    monkeypatch.setenv("MS_JIT", "0")
    original = mindspore.jit
    jit = MindSporeJit(Recorder(), sync=lambda: None)
    jit.install()
    try:
        assert mindspore.jit is original
    finally:
        jit.uninstall()

"""The timed step written out as Python (opbench/model/replay/compiled_step.py): the same
results as Replayer._run's loop over the plan's getters, the same releases and grad-mode
switches, readable source, and the loop kept for what it does not express. numpy fake
adapters (runner_fakes.py); a weak reference tells whether a result is still alive."""
from __future__ import annotations

import weakref
from dataclasses import replace

import numpy as np
import pytest
from runner_fakes import FakeAdapter, FakeClock

from opbench.frameworks.apimap import ApiMapping
from opbench.model.program import Call, Dtype, Ext, ExternalTensor, Lit, Ref, Seq, SliceOf
from opbench.model.replay import executor
from opbench.model.replay.compiled_step import StepCall, compile_step
from opbench.model.replay.executor import Differentiated, Replayer
from opbench.model.steady import StepProgram

HIDDEN = ("tensor", (4, 8), "float32")
PAIR = ("seq", (HIDDEN, HIDDEN))
EXTERNALS = (ExternalTensor(0, (4, 8), "float32", "input"),
             ExternalTensor(1, (8, 8), "float32", "parameter", "w"),
             ExternalTensor(2, (8,), "float32", "parameter", "b"))


def _split2(x):
    return tuple(np.split(x, 2, axis=1))


def _pair(x):
    """A nested result: ((x, -x), 2x)."""
    return ((x, -x), 2 * x)


def _scaled(x, factor=1.0, *, offset=0.0, name=""):
    assert isinstance(name, str)
    return x * factor + offset


def _gather(xs, dim=0, extra=None):
    """Concatenates a list or tuple of arrays (which kind it got is part of the result)."""
    assert isinstance(xs, (list, tuple))
    out = np.concatenate(list(xs), axis=dim)
    return out if extra is None else out + extra


FUNCTIONS = {"torch.matmul": np.matmul, "torch.relu": lambda x: np.maximum(x, 0.0),
             "torch.add": np.add, "torch.split2": _split2, "torch.pair": _pair,
             "torch.scaled": _scaled, "torch.gather_all": _gather,
             "torch.sliced": lambda x, s: x[s], "torch.as_type": lambda x, t: x,
             "torch.inplace": lambda x: None,
             "torch.accumulate": lambda x, total: x if total is None else x + total}


def _call(index, api, *args, kwargs=(), outputs=HIDDEN, alias_of=None, replay_api="same",
          grad_enabled=True):
    return Call(index=index, framework="torch", api=api, kind="function",
                replay_api=api if replay_api == "same" else replay_api, args=tuple(args),
                kwargs=tuple(kwargs), outputs=outputs, duration_ns=1000, start_ns=0,
                problem=None if replay_api else "no route", alias_of=alias_of,
                grad_enabled=grad_enabled)


def _step(*calls):
    n = len(calls)
    return StepProgram("torch", tuple(calls), EXTERNALS, steps=3, traced_ns=(1000,) * n,
                       step_traced_ns=(1000 * n,) * 3, source_index=tuple(range(n)))


class _Made:
    """Weak references to every array the fake framework's calls return, per api."""

    def __init__(self):
        self.refs: dict[str, list[weakref.ref]] = {}

    def tracking(self, api, fn):
        def call(*args, **kwargs):
            value = fn(*args, **kwargs)
            for v in _arrays(value):
                self.refs.setdefault(api, []).append(weakref.ref(v))
            return value
        return call

    def alive(self, api):
        return self.refs[api][-1]() is not None


def _arrays(value):
    if isinstance(value, np.ndarray):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _arrays(v)


def _replayer(step, made=None):
    made = made or _Made()
    adapter = FakeAdapter("torch", FakeClock(), functions={
        api: made.tracking(api, fn) for api, fn in FUNCTIONS.items()})
    return Replayer(step, "torch", adapter, ApiMapping([]), clock=adapter.clock)


def _everything_step():
    """Nested Refs, Seqs (list and tuple, constant and not), kwargs, constants of each kind,
    an alias, a stand-in, a statement-like call nothing reads, and a late reader of an early
    result."""
    return _step(
        _call(0, "torch.matmul", Ext(0), Ext(1)),
        _call(1, "torch.pair", Ref(0), outputs=("seq", (PAIR, HIDDEN))),
        _call(2, "torch.scaled", Ref(1, (0, 1)), Lit(0.5),
              kwargs=(("offset", Lit(2)), ("name", Lit("a b")))),
        _call(3, "torch.gather_all", Seq("list", (Ref(1, (1,)), Ref(2), Ext(0))),
              kwargs=(("dim", Lit(1)),), outputs=("tensor", (4, 24), "float32")),
        _call(4, "torch.gather_all", Seq("tuple", (Ref(3),)), Lit(0),
              kwargs=(("extra", Lit(None)),),
              outputs=("tensor", (4, 24), "float32")),
        _call(5, "torch.sliced", Ref(4), Seq("tuple", (SliceOf(None, None, None),
                                                      SliceOf(0, 8, 1)))),
        _call(6, "torch.dropout", Ref(5), alias_of=Ref(5)),
        _call(7, "torch.unmappable", Ref(6), replay_api=None),
        _call(8, "torch.as_type", Ref(7), Dtype("float32")),
        _call(9, "torch.inplace", Ref(8), outputs=None),
        _call(10, "torch.add", Ref(8), Ref(0)),
        _call(11, "torch.relu", Ref(10)),
    )


def _fake_dtypes(monkeypatch):
    """Dtype("float32") resolves through importlib.import_module("torch"): a fake module."""
    import types
    fake = types.SimpleNamespace(float32="float32")
    monkeypatch.setattr(executor.importlib, "import_module", lambda name: fake)


def _same(a, b):
    if a is None or b is None:
        return a is b
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return np.array_equal(a, b)


def _results_after(step, compiled: bool, steps: int = 2):
    replayer = _replayer(step)
    replayer.probe()
    if not compiled:
        replayer._compiled = None
    assert (replayer._compiled is not None) == compiled
    for _ in range(steps):
        replayer._run()
    return replayer


def test_the_written_out_step_leaves_the_loops_results_on_every_kind_of_argument(
        monkeypatch):
    _fake_dtypes(monkeypatch)
    step = _everything_step()
    written, loop = _results_after(step, True), _results_after(step, False)
    assert all(s.ok for i, s in enumerate(written.status) if i != 7)
    assert written.status[7].stand_in
    assert all(_same(a, b) for a, b in zip(written._results, loop._results))
    assert written.adapter.calls == loop.adapter.calls
    # what a step leaves: its result, the alias and the stand-in; the rest let go of
    kept = {i for i, r in enumerate(written._results) if r is not None}
    assert kept == {6, 7, 11}
    h = written._externals[0] @ written._externals[1]
    np.testing.assert_array_equal(written._results[6], 2 * h)     # cat(...)[:, 0:8]
    np.testing.assert_array_equal(written._results[11],
                                  np.maximum(written._results[7] + h, 0.0))


def test_the_written_out_step_reads_paths_seqs_and_keywords_as_a_script_writes_them(
        monkeypatch):
    _fake_dtypes(monkeypatch)
    replayer = _replayer(_everything_step())
    replayer.probe()
    source = replayer._compiled.source
    print(source)
    lines = [line.strip() for line in source.splitlines()]
    assert "v2 = f2(v1[0][1], 0.5, offset=2, name='a b')  # torch.scaled" in lines
    assert "v3 = f3([v1[1], v2, e0], dim=1)  # torch.gather_all" in lines
    assert "v4 = f4((v3,), 0, extra=None)  # torch.gather_all" in lines
    assert "v5 = f5(v4, c0)  # torch.sliced" in lines
    assert "v6 = results[6] = v5  # alias" in lines           # passed through, not called
    assert "v7 = results[7] = f7()  # torch.unmappable" in lines  # the stand-in's value
    assert "f9(v8)  # torch.inplace" in lines                 # nothing reads it
    assert "v11 = results[11] = f11(v10)  # torch.relu" in lines
    assert "del v0, v8" in lines
    assert not any("results[0]" in line for line in lines)
    assert not any("set_grad" in line for line in lines)     # one grad mode: no switch


def test_a_small_steps_source_is_the_script_written_out():
    made = _Made()
    replayer = _replayer(_step(_call(0, "torch.matmul", Ext(0), Ext(1)),
                               _call(1, "torch.add", Ref(0), Ext(2)),
                               _call(2, "torch.relu", Ref(1))), made)
    replayer.probe()
    assert replayer._compiled.source == (
        "def _make(results, e0, e1, f0, e2, f1, f2):\n"
        "    def step():\n"
        "        v0 = f0(e0, e1)  # torch.matmul\n"
        "        v1 = f1(v0, e2)  # torch.add\n"
        "        del v0\n"
        "        v2 = results[2] = f2(v1)  # torch.relu\n"
        "        del v1\n"
        "    return step\n")


def test_results_are_let_go_of_after_their_last_reader_and_kept_where_they_must_be():
    """The probe keeps every result (it fingerprints them); the first written-out step lets
    go of the probe's values too, as the loop's first step does."""
    made = _Made()
    step = _step(_call(0, "torch.matmul", Ext(0), Ext(1)),
                 _call(1, "torch.split2", Ref(0), outputs=PAIR),
                 _call(2, "torch.relu", Ref(1, (1,))),
                 _call(3, "torch.add", Ref(2), Ref(1, (0,))))
    replayer = _replayer(step, made)
    replayer.probe()
    assert replayer._compiled.written_back == {3} and replayer._compiled.dropped == {0, 1, 2}
    assert made.alive("torch.matmul") and made.alive("torch.split2")
    replayer.time_step(1)
    assert not made.alive("torch.matmul") and not made.alive("torch.split2")
    assert not made.alive("torch.relu") and made.alive("torch.add")
    assert replayer._results == [None, None, None, replayer._results[3]]
    replayer.time_step_to_host(1)           # reads results[3] back: written there
    assert all(s.ok for s in replayer.status)
    halves = np.split(replayer._externals[0] @ replayer._externals[1], 2, axis=1)
    np.testing.assert_array_equal(replayer._results[3], np.maximum(halves[1], 0.0) + halves[0])


def test_a_result_the_step_reads_before_it_sets_it_is_the_last_steps():
    """A running sum: call 1 reads call 2's result, which the step sets after it; the
    written-out step loads it from `results` at the top and writes it back."""
    step = _step(_call(0, "torch.relu", Ext(0)),
                 _call(1, "torch.accumulate", Ref(0), Ref(2)),
                 _call(2, "torch.add", Ref(1), Ext(0)))
    written, loop = _results_after(step, True, steps=3), _results_after(step, False, steps=3)
    assert written._compiled.source.splitlines()[2].strip() == "v2 = results[2]"
    assert all(s.ok for s in written.status)
    assert _same(written._results, loop._results)
    # the probe's sum is relu(x) + x; each step adds relu(x) + x to the last step's
    x = written._externals[0]
    np.testing.assert_allclose(written._results[2], 4 * (np.maximum(x, 0.0) + x), rtol=1e-6)


def test_grad_mode_switches_are_calls_of_the_setter_where_the_mode_changes(monkeypatch):
    switched: list[bool] = []
    monkeypatch.setattr(executor, "grad_mode_setter", lambda: switched.append)
    monkeypatch.setattr(executor, "without_grad", lambda fn: fn)
    step = _step(_call(0, "torch.matmul", Ext(0), Ext(1), grad_enabled=False),
                 _call(1, "torch.add", Ref(0), Ref(0), grad_enabled=False),
                 _call(2, "torch.relu", Ref(1)),
                 _call(3, "torch.relu", Ref(2), grad_enabled=False))
    replayer = _replayer(step)
    replayer.probe()
    lines = [line.strip() for line in replayer._compiled.source.splitlines()]
    assert lines.index("set_grad(False)") < lines.index("v0 = f0(e0, e1)  # torch.matmul")
    assert lines[-2] == "set_grad(True)"          # back on at the step's end
    replayer.time_step(2)
    assert switched == [False, True, False, True] * 2
    switched.clear()
    replayer._compiled = None                     # the loop switches the same
    replayer.time_step(1)
    assert switched == [False, True, False, True]


def test_an_entry_it_cannot_write_is_left_to_the_loop():
    call = StepCall(0, lambda **kw: 1, (), (("not a name", Lit(1)),))
    assert compile_step([call], {}, lambda a: a.value, [None]) is None
    # a switch of the grad mode with no setter to call
    call = StepCall(0, lambda: 1, (), grad_mode=False)
    assert compile_step([call], {}, lambda a: a.value, [None]) is None
    # an external tensor it does not hold
    call = StepCall(0, lambda x: x, (Ext(9),))
    assert compile_step([call], {}, lambda a: a.value, [None]) is None


def test_a_differentiated_step_is_replayed_by_the_loop():
    """MindSpore's value_and_grad block (executor.differentiate) reads the plan's getters:
    the loop replays such a step (executor._compile_step)."""
    step = _step(_call(0, "torch.matmul", Ext(0), Ext(1)),
                 _call(1, "torch.relu", Ref(0)),
                 _call(2, "torch.unmappable", Ref(1), replay_api=None, outputs=PAIR),
                 _call(3, "torch.add", Ref(2, (1,)), Ref(0)))
    replayer = _replayer(step)
    replayer.probe()
    assert replayer._compiled is not None
    plan, results = replayer._plan, replayer._results
    plan[2], replayer._reads[2] = None, None

    def forward():
        for i in (0, 1):
            fn, get_args, get_kwargs = plan[i]
            results[i] = fn(*get_args(), **get_kwargs())
        return results[1]
    replayer._blocks = [Differentiated(
        frozenset({0, 1}), 0, 2, lambda: (forward(), np.ones((4, 8), np.float32)), forward)]
    replayer._plan_releases()
    assert replayer._compiled is None
    replayer.time_step(1)
    np.testing.assert_array_equal(results[3], 1.0 + replayer._externals[0]
                                  @ replayer._externals[1])


@pytest.mark.parametrize("compiled", [True, False])
def test_a_stand_in_a_loss_depends_on_reads_its_inputs_in_both_paths(compiled):
    """A chained stand-in (executor._stood_in) is called with its inputs, written out as
    any call is."""
    calls = (_call(0, "torch.matmul", Ext(0), Ext(1)),
             _call(1, "torch.unmappable", Ref(0), replay_api=None),
             replace(_call(2, "Tensor.backward", Ref(1), outputs=None), backward=True))
    inputs = tuple(replace(e, role="input") for e in EXTERNALS)    # numpy: nothing trains
    step = replace(_step(*calls), externals=inputs)
    adapter_functions = {**FUNCTIONS, "Tensor.backward": lambda loss: None}
    adapter = FakeAdapter("torch", FakeClock(), functions=adapter_functions)
    replayer = Replayer(step, "torch", adapter, ApiMapping([]), clock=adapter.clock)
    replayer.probe()
    assert replayer.status[1].stand_in and replayer._plan[1] is not None
    if compiled:
        assert "v1 = results[1] = f1(v0)" in replayer._compiled.source
    else:
        replayer._compiled = None
    replayer._run()
    assert replayer._results[1] is not None


def test_torch_clears_the_gradients_before_a_backward_that_starts_afresh_only(monkeypatch):
    """Gradient accumulation replayed in torch as the script ran it: the first backward of
    the step clears the weights' gradients (zero_grad), the second adds to them (no clear);
    after the update (in place, grad mode off, on a weight) a backward starts afresh."""
    backward = ("none",)
    calls = (_call(0, "torch.matmul", Ext(0), Ext(1)),
             replace(_call(1, "Tensor.backward", Ref(0), outputs=backward), backward=True),
             _call(2, "torch.matmul", Ext(0), Ext(1)),
             replace(_call(3, "Tensor.backward", Ref(2), outputs=backward), backward=True),
             replace(_call(4, "torch.inplace", Ext(1)), api="torch.Tensor.add_",
                     grad_enabled=False),
             _call(5, "torch.matmul", Ext(0), Ext(1)),
             replace(_call(6, "Tensor.backward", Ref(5), outputs=backward), backward=True))
    cleared = []

    def clearing(fn, weights):
        def backward(*args):
            cleared.append(args[0].shape)
            return fn(*args)
        return backward
    monkeypatch.setattr(executor, "clearing_grads", clearing)
    monkeypatch.setattr(executor, "make_trainable", lambda framework, tensor, name: tensor)
    monkeypatch.setattr(executor, "without_grad", lambda fn: fn)      # numpy: no grad mode
    monkeypatch.setattr(executor, "grad_mode_setter", lambda: lambda enabled: None)
    functions = {**FUNCTIONS, "Tensor.backward": lambda loss: None}
    adapter = FakeAdapter("torch", FakeClock(), functions=functions)
    replayer = Replayer(_step(*calls), "torch", adapter, ApiMapping([]), clock=adapter.clock)
    assert replayer._onto == {3: 1}
    replayer.probe()
    assert all(s.ok for s in replayer.status)
    assert len(cleared) == 2                      # backwards 1 and 6, not 3
    cleared.clear()
    replayer._run()
    assert len(cleared) == 2

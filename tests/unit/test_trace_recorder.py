"""The recorder's rules (nesting, timing, sync, failures, caps), with a fake clock and sync."""
from __future__ import annotations

import importlib
import threading

import pytest

from opbench.trace.events import (
    ASYNC,
    FUNCTION,
    MODULE,
    SCOPE,
    SERIAL,
    TENSOR_METHOD,
    CallSite,
    Literal,
    TensorSpec,
)
from opbench.trace.recorder import NO_SYNC, Recorder


class FakeTensor:
    def __init__(self, *shape: int, dtype: str = "float32"):
        self.shape, self.dtype = shape, dtype


def fake_spec(value):
    return TensorSpec(value.shape, value.dtype) if isinstance(value, FakeTensor) else None


class TickClock:
    """Every reading advances 1 ns; `work(n)` makes the traced function take n ns more."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        self.now += 1
        return self.now

    def work(self, ns: int) -> None:
        self.now += ns


ADD = CallSite("fake", "fake.add", FUNCTION)
MUL = CallSite("fake", "fake.mul", FUNCTION)
LAYER = CallSite("fake", "fake.nn.Layer", MODULE, skip=1)
USER = CallSite("fake", "MyModel", SCOPE, skip=1)


def make(nested=False, timing=SERIAL, **kw):
    clock = TickClock()
    syncs = []
    recorder = Recorder(nested=nested, timing=timing, clock=clock, **kw)
    recorder.add_framework("fake", sync=lambda: syncs.append(clock.now), tensor_spec=fake_spec)
    recorder.start()
    return recorder, clock, syncs


def test_a_call_is_recorded_with_its_inputs_and_duration():
    recorder, clock, _ = make()
    x = FakeTensor(2, 3)
    result = recorder.call(ADD, lambda a, b: (clock.work(100), a)[1], (x, 2.5), {})
    assert result is x
    data = recorder.data()
    [event] = data.events
    assert (event.api, event.kind, event.depth, event.parent, event.failed) == \
        ("fake.add", FUNCTION, 0, None, False)
    assert data.signatures[event.signature].args == (TensorSpec((2, 3), "float32"),
                                                     Literal(2.5))
    # the work plus the clock read that closes the window
    assert 100 <= event.duration_ns <= 102


def test_without_nesting_only_the_outermost_api_is_recorded():
    recorder, clock, _ = make(nested=False)

    def layer(module, x):
        recorder.call(MUL, lambda a: a, (x,), {})
        return recorder.call(ADD, lambda a: a, (x,), {})

    recorder.call(LAYER, layer, (object(), FakeTensor(4)), {})
    recorder.call(ADD, lambda a: a, (FakeTensor(4),), {})
    assert [e.api for e in recorder.data().events] == ["fake.nn.Layer", "fake.add"]


def test_with_nesting_children_keep_their_parent_and_self_time_excludes_them():
    recorder, clock, _ = make(nested=True)

    def layer(module, x):
        clock.work(10)
        return recorder.call(ADD, lambda a: (clock.work(50), a)[1], (x,), {})

    recorder.call(LAYER, layer, (object(), FakeTensor(4)), {})
    data = recorder.data()
    parent, child = data.events
    assert (parent.api, child.api) == ("fake.nn.Layer", "fake.add")
    assert child.parent == parent.index and child.depth == 1 and parent.depth == 0
    assert parent.start_ns < child.start_ns and child.end_ns <= parent.end_ns
    stats = {k.api: s for k, s in data.stats.items()}
    assert stats["fake.nn.Layer"].self_ns == parent.duration_ns - child.duration_ns
    assert stats["fake.add"].self_ns == child.duration_ns


def _module_call(recorder, site, fn, layer, *args):
    """What the interceptors' Module/Cell wrappers do with a framework layer's call."""
    if recorder.traces_through(site, layer, args, {}):
        return fn(layer, *args)
    return recorder.call(site, fn, (layer, *args), {})


def test_a_layer_the_rule_traces_through_is_not_recorded_and_its_own_calls_are():
    asked = []

    def rule(site, layer, args, kwargs):
        asked.append((site.api, layer, recorder.in_internal()))
        return site.api == "fake.nn.Layer"

    recorder, _, _ = make(through=rule)
    opaque = CallSite("fake", "fake.nn.Other", MODULE, skip=1)
    marker = object()

    def forward(module, x):
        recorder.call(MUL, lambda a: a, (x,), {})
        return _module_call(recorder, opaque, lambda m, a: recorder.call(ADD, lambda: a, (), {}),
                            object(), x)

    _module_call(recorder, LAYER, forward, marker, FakeTensor(4))
    # the traced-through layer's mul and its inner layer are top-level calls; the inner
    # layer (kept by the rule) is one call, its add inside it is not recorded
    assert [e.api for e in recorder.data().events] == ["fake.mul", "fake.nn.Other"]
    assert [e.depth for e in recorder.data().events] == [0, 0]
    # asked before each top-level layer call, as the tracer's own work (nothing recorded)
    assert [(api, internal) for api, _, internal in asked] == [("fake.nn.Layer", True),
                                                                ("fake.nn.Other", True)]
    assert asked[0][1] is marker


def test_no_rule_or_a_call_inside_a_recorded_one_is_never_traced_through():
    recorder, _, _ = make()
    assert not recorder.traces_through(LAYER, object(), (), {})
    recorder, _, _ = make(through=lambda *a: True)
    seen = []
    recorder.call(ADD, lambda: seen.append(recorder.traces_through(LAYER, object(), (), {})),
                  (), {})
    assert seen == [False]
    recorder.stop()
    assert not recorder.traces_through(LAYER, object(), (), {})


def test_the_same_api_seen_by_two_layers_is_recorded_once():
    recorder, _, _ = make(nested=True)
    recorder.call(ADD, lambda: recorder.call(ADD, lambda: 1, (), {}), (), {})
    assert [e.api for e in recorder.data().events] == ["fake.add"]


def test_user_scopes_are_structure_only_when_nested():
    for nested, expected in ((False, ["fake.add"]), (True, ["MyModel", "fake.add"])):
        recorder, _, _ = make(nested=nested)
        recorder.call(USER, lambda m: recorder.call(ADD, lambda: 1, (), {}), (object(),), {})
        events = recorder.data().events
        assert [e.api for e in events] == expected
        assert events[-1].depth == (1 if nested else 0)


def test_serial_syncs_after_every_recorded_call_and_async_never():
    recorder, _, syncs = make(timing=SERIAL)
    recorder.call(LAYER, lambda m: recorder.call(ADD, lambda: 1, (), {}), (object(),), {})
    recorder.call(ADD, lambda: 1, (), {})
    assert len(syncs) == 2        # one per recorded call; the nested add was not recorded
    recorder, _, syncs = make(timing=ASYNC)
    recorder.call(ADD, lambda: 1, (), {})
    assert syncs == [] and recorder.data().timing == ASYNC


def test_a_framework_with_nothing_to_sync_has_no_sync_in_its_windows(monkeypatch):
    """NO_SYNC (a CPU framework's adapter syncs nothing) is left out of the window: calling
    it there cost ~0.45 us a call on torch CPU."""
    # (opbench.trace is also the package's trace() function: import the module by name)
    recorder_module = importlib.import_module("opbench.trace.recorder")
    clock = TickClock()
    called = []
    monkeypatch.setattr(recorder_module, "NO_SYNC", lambda: called.append(1))
    recorder = Recorder(timing=SERIAL, clock=clock)
    recorder.add_framework("fake", sync=recorder_module.NO_SYNC, tensor_spec=fake_spec)
    recorder.start()
    recorder.call(ADD, lambda: clock.work(100), (), {})
    assert called == []
    [event] = recorder.data().events
    assert 100 <= event.duration_ns <= 102
    assert NO_SYNC() is None


def test_framework_calls_made_by_the_sync_itself_are_not_recorded():
    clock = TickClock()
    recorder = Recorder(clock=clock)
    recorder.add_framework("fake", sync=lambda: recorder.call(MUL, lambda: None, (), {}),
                           tensor_spec=fake_spec)
    recorder.start()
    recorder.call(ADD, lambda: 1, (), {})
    assert [e.api for e in recorder.data().events] == ["fake.add"]


class Boom(Exception):
    pass


def test_a_failing_call_is_recorded_as_failed_and_its_exception_propagates_unchanged():
    recorder, _, syncs = make()
    error = Boom("no")

    def fails():
        raise error

    with pytest.raises(Boom) as caught:
        recorder.call(ADD, fails, (), {})
    assert caught.value is error
    recorder.call(MUL, lambda: 2, (), {})           # later calls keep being recorded
    data = recorder.data()
    failed, later = data.events
    assert (failed.failed, failed.error) == (True, "Boom")
    assert (later.api, later.failed, later.depth) == ("fake.mul", False, 0)
    assert data.stats[next(k for k in data.stats if k.api == "fake.add")].failed == 1


def test_a_failure_inside_a_nested_call_marks_only_the_calls_it_escapes():
    recorder, _, _ = make(nested=True)

    def layer(module):
        try:
            recorder.call(ADD, lambda: 1 / 0, (), {})
        except ZeroDivisionError:
            pass
        return "ok"

    assert recorder.call(LAYER, layer, (object(),), {}) == "ok"
    parent, child = recorder.data().events
    assert (parent.failed, child.failed, child.error) == (False, True, "ZeroDivisionError")


def test_equal_signatures_are_stored_once_and_stats_count_every_call():
    recorder, _, _ = make()
    for _ in range(3):
        recorder.call(ADD, lambda a, b, alpha=1: 0, (FakeTensor(2), 1), {"alpha": 2})
    recorder.call(ADD, lambda a, b: 0, (FakeTensor(3), 1), {})
    data = recorder.data()
    assert len(data.signatures) == 2
    assert sorted(s.calls for s in data.stats.values()) == [1, 3]


def test_keyword_arguments_equal_to_their_default_are_left_out():
    site = CallSite("fake", "fake.f", FUNCTION,
                    defaults=frozenset({("reduction", str, "mean"), ("weight", type(None), None)}))
    recorder, _, _ = make()
    recorder.call(site, lambda *a, **k: 0, (FakeTensor(2),),
                  {"weight": None, "reduction": "sum", "extra": [1]})
    [signature] = recorder.data().signatures
    assert [name for name, _ in signature.kwargs] == ["reduction", "extra"]


def test_events_past_the_cap_are_dropped_but_still_counted():
    recorder, _, _ = make(max_events=2)
    for _ in range(5):
        recorder.call(ADD, lambda: 0, (), {})
    data = recorder.data()
    assert len(data.events) == 2 and data.dropped_events == 3
    assert sum(s.calls for s in data.stats.values()) == 5


def test_an_inactive_recorder_passes_calls_through():
    recorder, _, _ = make()
    recorder.stop()
    assert recorder.call(ADD, lambda: 7, (), {}) == 7
    assert recorder.data().events == []


def test_detached_calls_land_in_a_scratch_store():
    recorder, _, _ = make()
    recorder.call(ADD, lambda: 0, (), {})
    recorder.stop()
    with recorder.detached() as scratch:
        recorder.call(MUL, lambda: 0, (), {})
    assert [e.api for e in scratch.events] == ["fake.mul"]
    assert [e.api for e in recorder.data().events] == ["fake.add"]
    assert not recorder.active


def test_each_thread_has_its_own_nesting_and_name():
    recorder, _, _ = make(nested=True)
    seen = []

    def in_thread():
        recorder.call(ADD, lambda: 0, (), {})

    def layer(module):
        worker = threading.Thread(target=in_thread, name="worker")
        worker.start()
        worker.join()
        seen.append(worker.ident)
        return 0

    recorder.call(LAYER, layer, (object(),), {})
    data = recorder.data()
    by_api = {e.api: e for e in data.events}
    assert by_api["fake.add"].depth == 0 and by_api["fake.add"].parent is None
    assert by_api["fake.add"].thread_id == seen[0]
    assert data.thread_names[seen[0]] == "worker"


def test_bookkeeping_is_measured_per_recorded_call():
    recorder, _, _ = make()
    for _ in range(4):
        recorder.call(ADD, lambda: 0, (), {})
    data = recorder.data()
    assert data.recorded_calls == 4 and data.bookkeeping_ns_per_call > 0
    assert data.bookkeeping_median_ns > 0


def test_unknown_timing_is_rejected():
    with pytest.raises(ValueError, match="timing"):
        Recorder(timing="fast")


def test_a_tensor_method_site_keeps_its_receiver_as_an_input():
    recorder, _, _ = make()
    site = CallSite("fake", "fake.Tensor.sum", TENSOR_METHOD)
    recorder.call(site, lambda x, dim: 0, (FakeTensor(2, 2), 1), {})
    [signature] = recorder.data().signatures
    assert signature.args[0] == TensorSpec((2, 2), "float32")


def test_an_argument_that_cannot_be_described_does_not_break_the_call():
    def broken_spec(value):
        raise RuntimeError("odd tensor")

    recorder = Recorder(clock=TickClock())
    recorder.add_framework("fake", sync=lambda: None, tensor_spec=broken_spec)
    recorder.start()
    assert recorder.call(ADD, lambda a: "ran", (object(),), {}) == "ran"
    [signature] = recorder.data().signatures
    assert signature.args[0].type_name == "unreadable"

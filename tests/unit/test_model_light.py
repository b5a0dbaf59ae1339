"""The light timing pass (model/capture/light.py): the timing-only recorder, the rule that
matches its calls against the captured ones, the fallback and its note, the program's fields
in the capture file and in the traced times (steady.own_time_ns). Fake clock, fake framework."""
from __future__ import annotations

import gc
import json
from dataclasses import replace
from types import SimpleNamespace

import pytest

from opbench.model.capture.light import (SET_UP_SLACK, LightEnough, light_pass,
                                         match_light)
from opbench.model.program import Program
from opbench.model.steady import find_region, own_time_ns, step_program
from opbench.trace.events import FUNCTION, MODULE, SCOPE, SERIAL, CallSite
from opbench.trace.overhead import TracerOverhead
from opbench.trace.recorder import NO_SYNC, TimingRecorder, TimingSink
from tests.unit.test_model_steady import STEADY_NS, _set_up_and_steps
from trace_helpers import TickClock  # every reading 1 ns; work(n) makes a call n ns longer

ADD = CallSite("fake", "fake.add", FUNCTION)
MUL = CallSite("fake", "fake.mul", FUNCTION)
LAYER = CallSite("fake", "fake.nn.Layer", MODULE, skip=1)
USER = CallSite("fake", "MyModel", SCOPE, skip=1)




class FakeFramework:
    """Two functions and a layer that calls `add` inside, each through the recorder."""

    def __init__(self, recorder: TimingRecorder, clock: TickClock):
        self.recorder, self.clock = recorder, clock

    def add(self, ns: int = 100) -> str:
        return self.recorder.call(ADD, lambda: self.clock.work(ns) or "sum", (), {})

    def mul(self, ns: int = 300) -> str:
        return self.recorder.call(MUL, lambda: self.clock.work(ns) or "product", (), {})

    def layer(self) -> str:
        def forward(module: object) -> str:
            self.clock.work(1_000)
            return self.add(50)
        return self.recorder.call(LAYER, forward, (object(),), {})


def _timing(capacity: int, on_full=None, sync=NO_SYNC):
    clock = TickClock()
    sink = TimingSink(capacity, on_full)
    recorder = TimingRecorder(sink, timing=SERIAL, clock=clock)
    recorder.add_framework("fake", sync=sync, tensor_spec=lambda value: None)
    recorder.start()
    return FakeFramework(recorder, clock), sink


# -- the timing-only recorder ------------------------------------------------------------

def test_the_timing_recorder_keeps_each_top_level_call_s_api_and_window_only():
    fw, sink = _timing(4)
    fw.add(100)
    fw.layer()           # its inner add runs untouched: top-level calls only
    fw.mul(300)
    assert sink.count == 3 and sink.extra == 0
    assert sink.apis[:3] == ["fake.add", "fake.nn.Layer", "fake.mul"]
    # the window holds the call alone: one clock tick to close it, nothing else
    assert sink.durations[:3] == [101, 1_051, 301]
    assert fw.recorder.data().events == []          # no events, no statistics
    assert fw.recorder.data().stats == {}


def test_the_timing_recorder_syncs_inside_the_window_and_keeps_no_failed_call():
    synced = []
    fw, sink = _timing(4, sync=lambda: synced.append(1))
    fw.add(10)

    def boom() -> None:
        raise ValueError("boom")
    with pytest.raises(ValueError, match="boom"):
        fw.recorder.call(MUL, boom, (), {})
    assert synced == [1]
    assert sink.count == 1 and sink.apis[0] == "fake.add"


def test_user_scopes_are_not_timed_and_calls_inside_them_are():
    fw, sink = _timing(2)

    def model(self_: object) -> str:
        return fw.add(100)
    fw.recorder.call(USER, model, (object(),), {})
    assert sink.apis[:1] == ["fake.add"] and sink.count == 1


def test_calls_past_the_capacity_are_counted_and_the_full_sink_says_so_each_time():
    full = []
    fw, sink = _timing(2, on_full=lambda: full.append(sink.count))
    fw.add()
    assert full == []
    fw.mul()
    fw.add()
    fw.add()
    assert sink.count == 2 and sink.extra == 2
    assert full == [2, 2, 2]


def test_the_calibrations_calls_go_to_a_scratch_sink():
    fw, sink = _timing(4)
    fw.add(100)
    with fw.recorder.detached() as scratch:
        fw.add(20)
        fw.mul(30)
    assert scratch.durations_ns() == [21, 31]
    assert sink.count == 1


# -- the matching rule -------------------------------------------------------------------

def _sink(apis, durations, extra=0):
    sink = TimingSink(len(apis))
    for api, ns in zip(apis, durations):
        sink.add(api, ns)
    sink.extra = extra
    return sink


def test_the_same_calls_in_the_same_order_give_the_light_durations():
    durations, note = match_light(["a", "b", "a"], _sink(["a", "b", "a"], [5, 6, 7]), False)
    assert durations == (5, 6, 7) and note is None


def test_a_different_call_is_a_mismatch_that_names_it():
    durations, note = match_light(["a", "b", "a"], _sink(["a", "c", "a"], [5, 6, 7]), False)
    assert durations == ()
    assert note == ("its second run's call 1 was c where the captured run's was b (the "
                    "script's control flow differs between runs)")


def test_fewer_calls_at_the_end_is_a_mismatch_ended_early_or_not():
    for ended in (False, True):
        durations, note = match_light(["a", "b", "a"], _sink(["a", "b"], [5, 6]), ended)
        assert durations == ()
        assert note == "its second run made 2 framework calls where the captured run made 3"


STEPS = ["m", "r", "s"] * 4


def test_set_up_calls_made_in_the_first_run_only_keep_their_observed_times():
    # a library's once-per-process work: two torch.device calls before the first weight
    captured = ["seed", "device", "device", "empty", *STEPS]
    light = ["seed", "empty", *STEPS]
    durations, note = match_light(captured, _sink(light, range(10, 10 + len(light))), False)
    assert durations == (10, -1, -1, *range(11, 10 + len(light)))
    assert note == ("the captured run made 2 calls at call 1 the other did not (device); "
                    "their observed times are kept")


def test_set_up_calls_made_in_the_second_run_only_are_left_out():
    captured = ["seed", "empty", *STEPS]
    light = ["seed", "device", "empty", *STEPS]
    durations, note = match_light(captured, _sink(light, range(10, 10 + len(light))), False)
    assert durations == (10, *range(12, 10 + len(light)))
    assert note == "its second run made 1 calls at call 1 the other did not (device); left out"


def test_a_run_ended_early_may_go_on_past_a_set_up_block():
    captured = ["seed", "device", *STEPS]
    light = ["seed", *STEPS, "m", "r"]       # ended at the capacity: past the captured end
    durations, _ = match_light(captured, _sink(light, range(len(light))), True)
    assert durations == (0, -1, *range(1, 1 + len(STEPS)))


def test_a_block_longer_than_the_slack_or_among_the_steps_is_a_mismatch():
    captured = ["seed", *["device"] * 5, *STEPS]
    light = ["seed", *STEPS]
    assert match_light(captured, _sink(light, range(len(light))), False, slack=4)[0] == ()
    # a step call made in one run only, in the second half: the steps differ
    captured = ["seed", *STEPS, "extra", "m", "r", "s"]
    light = ["seed", *STEPS, "m", "r", "s"]
    durations, note = match_light(captured, _sink(light, range(len(light))), False)
    assert durations == ()
    assert note == ("its second run made 16 framework calls where the captured run "
                    "made 17")


def test_more_calls_is_a_mismatch_only_where_the_capture_ran_the_script_to_its_end():
    sink = _sink(["a", "b"], [5, 6], extra=3)
    assert match_light(["a", "b"], sink, ended_early=True) == ((5, 6), None)
    durations, note = match_light(["a", "b"], sink, ended_early=False)
    assert durations == ()
    assert note == "its second run made 5 framework calls where the captured run made 2"


def test_calls_the_capture_made_up_keep_the_observed_durations():
    durations, note = match_light(["a", None, "a"], _sink(["a", "a"], [5, 7]), False)
    assert durations == ()
    assert "1 of the captured calls were made up by the capture" in note


# -- the pass: the second run, its ending, its fallback ----------------------------------

class FakeTracer:
    """Stands for the timing-only Tracer: installs the fake framework on start; stop()
    returns the calibrated in-window cost, as Tracer.stop's overheads do."""

    def __init__(self, sink: TimingSink, in_window_ns: float = 30.0):
        self.clock = TickClock()
        self.recorder = TimingRecorder(sink, timing=SERIAL, clock=self.clock)
        self.recorder.add_framework("fake", sync=NO_SYNC, tensor_spec=lambda value: None)
        self.fw = FakeFramework(self.recorder, self.clock)
        self.in_window_ns = in_window_ns
        self.stopped = False

    def start(self) -> None:
        self.recorder.start()

    def stop(self) -> SimpleNamespace:
        self.recorder.stop()
        self.stopped = True
        return SimpleNamespace(overheads=[
            TracerOverhead("fake", "probe", 0.0, 0.0, in_window_ns_per_call=self.in_window_ns)])


def _pass(captured, script, ended_early=False):
    made = []

    def make(sink: TimingSink) -> FakeTracer:
        made.append(FakeTracer(sink))
        return made[0]

    def run() -> SimpleNamespace:
        status = 0
        try:
            script(made[0].fw)
        except SystemExit as exit_:      # as run_target takes it
            status = exit_.code or 0
        return SimpleNamespace(status=status)
    timing = light_pass(captured, run, "fake", ended_early, make_tracer=make,
                        clock=TickClock())
    assert made[0].stopped
    return timing


def test_a_second_run_making_the_captured_calls_gives_their_light_times():
    def script(fw: FakeFramework) -> None:
        print("the script's output")
        for _ in range(3):
            fw.add(100)
            fw.mul(300)
    timing = _pass(["fake.add", "fake.mul"] * 3, script)
    assert timing.note is None
    assert timing.durations_ns == (101, 301) * 3
    assert timing.in_window_ns_per_call == 30.0
    assert timing.wall_s > 0


def test_the_second_runs_output_is_discarded(capsys):
    def script(fw: FakeFramework) -> None:
        print("the script's output")
        fw.add()
    _pass(["fake.add"], script)
    assert capsys.readouterr().out == ""


def test_the_second_run_is_ended_where_the_capture_ended_the_first():
    ran = []

    def script(fw: FakeFramework) -> None:
        for step in range(100):
            ran.append(step)
            fw.add(100)
    timing = _pass(["fake.add"] * 5, script, ended_early=True)
    assert timing.note is None and timing.durations_ns == (101,) * 5
    # ended once it made the captured calls and room for set-up calls it might have missed
    assert ran == list(range(5 + SET_UP_SLACK))


def test_a_script_that_catches_the_ending_is_ended_again_at_its_next_call():
    def script(fw: FakeFramework) -> None:
        for _ in range(3):
            try:
                fw.add()
            except LightEnough:
                pass
        fw.mul()
    timing = _pass(["fake.add"], script, ended_early=True)
    assert timing.note is None and timing.durations_ns == (101,)


def test_a_script_that_fails_in_its_second_run_keeps_the_observed_times_and_says_why():
    def script(fw: FakeFramework) -> None:
        fw.add()
        raise RuntimeError("no data this time")
    timing = _pass(["fake.add", "fake.add"], script)
    assert timing.durations_ns == ()
    assert timing.note == ("the script failed in its second run (RuntimeError: no data "
                           "this time)")


def test_a_script_exiting_nonzero_in_its_second_run_says_so():
    def script(fw: FakeFramework) -> None:
        fw.add()
        raise SystemExit(3)
    timing = _pass(["fake.add"], script)
    assert timing.durations_ns == ()
    assert timing.note == "the script exited with status 3 in its second run"


def test_random_control_flow_falls_back_with_the_mismatch():
    def script(fw: FakeFramework) -> None:
        fw.mul()
        fw.add()
    timing = _pass(["fake.add", "fake.mul"], script)
    assert timing.durations_ns == ()
    assert timing.note.startswith("its second run's call 0 was fake.mul")


def test_the_collector_is_unfrozen_after_the_pass():
    frozen = []

    def script(fw: FakeFramework) -> None:
        frozen.append(gc.get_freeze_count())
        fw.add()
    _pass(["fake.add"], script)
    assert frozen[0] > 0                 # the objects from before the run were frozen
    assert gc.get_freeze_count() == 0


def test_a_program_with_calls_the_capture_made_up_is_not_run_again():
    def make(sink: TimingSink) -> FakeTracer:
        raise AssertionError("no second run")
    timing = light_pass(["a", None], lambda: None, "fake", False, make_tracer=make)
    assert timing.durations_ns == () and "made up by the capture" in timing.note


def test_no_captured_call_is_not_run_again():
    timing = light_pass([], lambda: None, "fake", False,
                        make_tracer=lambda sink: (_ for _ in ()).throw(AssertionError()))
    assert timing.note == "the script made no framework call that was recorded"


# -- the program: its fields in the traced times and in the capture file -----------------

def test_a_call_with_no_light_counterpart_keeps_its_observed_time():
    program, _ = _set_up_and_steps(2)
    light = (-1, *(500,) * (len(program.calls) - 1))
    own = own_time_ns(replace(program, light_ns=light, in_window_ns_per_call=300.0,
                              light_in_window_ns_per_call=100.0))
    assert own(program.calls[0]) == program.calls[0].duration_ns - 300
    assert own(program.calls[1]) == 400


def test_the_traced_times_come_from_the_light_durations_less_their_in_window_cost():
    program, _ = _set_up_and_steps(4)          # every steady call observed at 1,000 ns
    light = tuple(400 + k for k in range(len(program.calls)))
    lit = replace(program, light_ns=light, light_in_window_ns_per_call=50.0,
                  in_window_ns_per_call=300.0)
    assert lit.traced_base == "light" and program.traced_base == "observed"
    own = own_time_ns(lit)
    assert [own(c) for c in lit.calls] == [350 + k for k in range(len(lit.calls))]
    step = step_program(lit, find_region(lit))
    # the last steady step's calls, each the median over the three steady steps
    assert step.traced_ns == (350 + 9, 350 + 10, 350 + 11)
    assert step.traced_ns != (STEADY_NS - 300,) * 3


def test_a_light_duration_below_its_in_window_cost_reads_zero():
    program, _ = _set_up_and_steps(2)
    lit = replace(program, light_ns=(10,) * len(program.calls),
                  light_in_window_ns_per_call=50.0)
    assert {own_time_ns(lit)(c) for c in lit.calls} == {0}


def test_the_capture_file_keeps_the_light_fields_and_an_old_file_still_loads():
    program, _ = _set_up_and_steps(2)
    old = program.to_json()
    assert not {"light_ns", "light_note", "light_in_window_ns_per_call",
                "light_pass_s"} & set(old)          # absent where unused: as before
    assert Program.from_json(json.loads(json.dumps(old))) == program
    lit = replace(program, light_ns=tuple(range(len(program.calls))),
                  light_in_window_ns_per_call=12.5, light_pass_s=0.25)
    assert Program.from_json(json.loads(json.dumps(lit.to_json()))) == lit
    fell_back = replace(program, light_note="the script failed in its second run (x)")
    back = Program.from_json(json.loads(json.dumps(fell_back.to_json())))
    assert back.light_note == fell_back.light_note and back.traced_base == "observed"


def test_a_tracer_that_cannot_start_means_no_second_run_and_says_why():
    class Refusing:
        def start(self) -> None:
            raise RuntimeError("cannot trace torch: boom")

        def stop(self) -> None:
            raise AssertionError("never started")

    ran = []
    timing = light_pass(["a"], lambda: ran.append(1), "fake", False,
                        make_tracer=lambda sink: Refusing())
    assert ran == [] and timing.durations_ns == ()
    assert timing.note == "the timing-only tracer could not start (cannot trace torch: boom)"
    assert gc.get_freeze_count() == 0

"""The steady state of a captured program (opbench/model/steady.py), on synthetic programs
built from Call records: which calls are the repeated steps, what is left out as set-up and
warm-up, and the one step a replay runs (refs remapped, outside tensors made externals,
per-call traced time the median over the steady steps)."""
from __future__ import annotations

import pytest

from opbench.model.program import Call, Ext, ExternalTensor, Lit, Marker, Program, Ref, Seq
from opbench.model.steady import (RULE_AUTO, RULE_MARKERS, RULE_SKIP, RegionError,
                                  find_region, step_program)

HIDDEN = ("tensor", (4, 8), "float32")
SCALAR = ("tensor", (), "float32")
SET_UP_NS = 50_000        # a set-up call's traced time (cold: slow)
WARMUP_NS = 9_000         # a call of the first, cold step
STEADY_NS = 1_000         # a call of a later step


class ProgramBuilder:
    """Calls appended in order with refs to earlier calls; externals 0 (input) and 1
    (weight) exist from the start, as a script's data and parameter."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.markers: list[Marker] = []
        self.externals = [ExternalTensor(0, (4, 16), "float32", "input"),
                          ExternalTensor(1, (16, 8), "float32", "parameter", "w")]

    def add(self, api: str, *args, outputs=HIDDEN, ns: int = STEADY_NS, kwargs=(),
            alias_of=None) -> int:
        index = len(self.calls)
        self.calls.append(Call(index=index, framework="torch", api=api, kind="function",
                               replay_api=None if alias_of is not None else api,
                               args=tuple(args), kwargs=tuple(kwargs), outputs=outputs,
                               duration_ns=ns, start_ns=index * 10_000, alias_of=alias_of))
        return index

    def set_up(self) -> int:
        """Building the model: three calls unlike any step's."""
        self.add("torch.manual_seed", Lit(0), outputs=("other", "Generator"), ns=SET_UP_NS)
        self.add("torch.nn.init.normal_", Ext(1), ns=SET_UP_NS,
                 outputs=("tensor", (16, 8), "float32"))
        return self.add("torch.arange", Lit(4), ns=SET_UP_NS,
                        outputs=("tensor", (4,), "int64", 0.0, 3.0))

    def step(self, ns: int = STEADY_NS, mark: bool = False) -> range:
        """matmul -> relu -> sum: three calls, each using the previous one's output."""
        if mark:
            self.markers.append(Marker(len(self.calls)))
        first = self.add("torch.matmul", Ext(0), Ext(1), ns=ns)
        relu = self.add("torch.relu", Ref(first), ns=ns)
        last = self.add("torch.sum", Ref(relu), outputs=SCALAR, ns=ns)
        return range(first, last + 1)

    def program(self) -> Program:
        return Program(framework="torch", version="x", threads=2, launch="blocking",
                       device="cpu", timing="serial", calls=tuple(self.calls),
                       externals=tuple(self.externals), markers=tuple(self.markers))


def _set_up_and_steps(steps: int = 4) -> tuple[Program, list[range]]:
    b = ProgramBuilder()
    b.set_up()
    ranges = [b.step(ns=WARMUP_NS if k == 0 else STEADY_NS) for k in range(steps)]
    return b.program(), ranges


# -- automatic --------------------------------------------------------------------------------

def test_automatic_finds_the_period_and_leaves_out_set_up_and_the_first_step():
    program, ranges = _set_up_and_steps(4)
    region = find_region(program)
    assert region.rule == RULE_AUTO
    assert region.warmup == (ranges[0].start, ranges[0].stop) == (3, 6)
    assert region.steps == ((6, 9), (9, 12), (12, 15))
    assert region.calls == 9
    assert region.excluded_calls == 3 + 3
    assert region.excluded_ns == 3 * SET_UP_NS + 3 * WARMUP_NS


def test_a_trailing_call_after_the_loop_does_not_break_the_steps():
    b = ProgramBuilder()
    b.set_up()
    for k in range(4):
        b.step(ns=WARMUP_NS if k == 0 else STEADY_NS)
    b.add("torch.Tensor.item", Ref(len(b.calls) - 1), outputs=("other", "float"), ns=777)
    region = find_region(b.program())
    assert region.steps == ((6, 9), (9, 12), (12, 15))
    assert region.excluded_calls == 3 + 3 + 1
    assert region.excluded_ns == 3 * SET_UP_NS + 3 * WARMUP_NS + 777


def test_layers_repeated_inside_a_step_do_not_pass_for_the_step():
    """A step of four identical layers repeats with period 2 inside it; the whole step
    repeats over more calls, and the longest repeating stretch wins."""
    b = ProgramBuilder()
    b.set_up()
    for _ in range(3):
        x = b.add("torch.nn.functional.embedding", Ext(0), Ext(1))
        for _ in range(4):
            x = b.add("torch.relu", Ref(b.add("torch.matmul", Ref(x), Ext(1))))
        b.add("torch.sum", Ref(x), outputs=SCALAR)
    region = find_region(b.program())
    assert [end - start for start, end in region.steps] == [10, 10]
    assert region.warmup == (3, 13)


def test_calls_with_other_shapes_or_literals_are_not_the_same_step():
    """A different literal (another dim) or another output shape ends the repetition."""
    b = ProgramBuilder()
    for _ in range(3):
        b.add("torch.softmax", Ext(0), Lit(-1))
        b.add("torch.relu", Ext(0))
    b.add("torch.softmax", Ext(0), Lit(0))                         # another literal
    b.add("torch.relu", Ext(0), outputs=("tensor", (2, 8), "float32"))  # another shape
    region = find_region(b.program())
    assert region.warmup == (0, 2) and region.steps == ((2, 4), (4, 6))


def test_a_float_literal_a_schedule_changes_every_step_does_not_hide_the_steps():
    """Regression: the learning rate's value was part of a call's key, so the steps never
    repeated and the longest repeating stretch was a layer (period 2 inside the step)."""
    b = ProgramBuilder()
    b.set_up()
    for step in range(4):
        x = b.add("torch.nn.functional.embedding", Ext(0), Ext(1))
        for _ in range(3):
            x = b.add("torch.relu", Ref(b.add("torch.matmul", Ref(x), Ext(1))))
        b.add("torch.sum", Ref(x), outputs=SCALAR)
        b.add("torch.Tensor.add_", Ext(1), Ext(1), kwargs=(("alpha", Lit(-0.1 / (step + 1))),))
    region = find_region(b.program())
    assert region.warmup == (3, 12)
    assert region.steps == ((12, 21), (21, 30), (30, 39))


def test_an_integer_outputs_observed_range_does_not_make_steps_differ():
    """Each batch's labels have another max; the steps are still the same calls."""
    b = ProgramBuilder()
    for high in (3.0, 5.0, 2.0, 4.0):
        b.add("torch.randint", Lit(10), outputs=("tensor", (4,), "int64", 0.0, high))
        b.add("torch.relu", Ext(0))
    region = find_region(b.program())
    assert region.warmup == (0, 2) and region.steps == ((2, 4), (4, 6), (6, 8))


def test_shuffled_sample_indices_do_not_make_a_data_loaders_steps_differ():
    """Regression: a DataLoader over a TensorDataset indexes each tensor with shuffled
    sample numbers (x[17], y[17], x[3], ...), a new order every batch; with those integers in
    the key the steps never repeated. An integer index counts by its kind; an integer
    argument of another call (a dim) still counts by its value."""
    b = ProgramBuilder()
    order = [[5, 2, 7], [1, 0, 3], [6, 4, 2], [3, 7, 0]]
    row = ("tensor", (16,), "float32")
    for batch in order:
        rows = [b.add("torch.Tensor.__getitem__", Ext(0), Lit(i), outputs=row) for i in batch]
        stacked = b.add("torch.stack", Seq("list", tuple(Ref(r) for r in rows)), Lit(0))
        b.add("torch.relu", Ref(stacked))
    region = find_region(b.program())
    assert region.warmup == (0, 5) and region.steps == ((5, 10), (10, 15), (15, 20))
    b = ProgramBuilder()
    for dim in (0, 1, 0, 1):
        b.add("torch.softmax", Ext(0), Lit(dim))
    assert find_region(b.program()).steps == ((2, 4),)


def test_no_repetition_is_an_error_with_the_users_three_ways_out():
    b = ProgramBuilder()
    b.set_up()
    b.step()
    with pytest.raises(RegionError) as raised:
        find_region(b.program())
    message = str(raised.value)
    assert "no repeated step found" in message
    assert "opbench.model.step()" in message and "--skip-first-calls N" in message


def test_a_program_without_calls_is_an_error():
    with pytest.raises(RegionError, match="no framework call"):
        find_region(ProgramBuilder().program())


# -- markers -----------------------------------------------------------------------------------

def test_markers_make_the_steps_and_the_first_marked_step_is_the_warm_up():
    b = ProgramBuilder()
    b.set_up()
    for k in range(3):
        b.step(ns=WARMUP_NS if k == 0 else STEADY_NS, mark=True)
    region = find_region(b.program())
    assert region.rule == RULE_MARKERS
    assert region.warmup == (3, 6) and region.steps == ((6, 9), (9, 12))
    assert region.excluded_calls == 6
    assert region.excluded_ns == 3 * SET_UP_NS + 3 * WARMUP_NS
    assert region.note == ""


def test_markers_win_over_a_different_period_in_the_calls():
    """Marked steps of unlike calls (a step alternating two shapes) are taken as marked."""
    b = ProgramBuilder()
    for k in range(4):
        b.markers.append(Marker(len(b.calls)))
        b.add("torch.relu", Ext(0), outputs=HIDDEN if k % 2 else ("tensor", (2, 8), "float32"))
    region = find_region(b.program())
    assert region.rule == RULE_MARKERS
    assert region.steps == ((1, 2), (2, 3), (3, 4))


def test_one_marked_step_is_measured_cold_and_says_so():
    b = ProgramBuilder()
    b.set_up()
    b.step(mark=True)
    region = find_region(b.program())
    assert region.steps == ((3, 6),) and region.warmup is None
    assert region.excluded_calls == 3
    assert "one marked step only" in region.note


def test_a_marker_after_the_last_call_is_ignored():
    b = ProgramBuilder()
    b.step(mark=True)
    b.step(mark=True)
    b.markers.append(Marker(len(b.calls), "after the loop"))
    region = find_region(b.program())
    assert region.warmup == (0, 3) and region.steps == ((3, 6),)


def _marked_steps_then_evaluation(steps: int, eval_batches: int) -> ProgramBuilder:
    b = ProgramBuilder()
    b.set_up()
    for _ in range(steps):
        b.step(mark=True)
    for _ in range(eval_batches):          # the script's evaluation after its loop
        out = b.add("torch.matmul", Ext(0), Ext(1), ns=5_000)
        b.add("torch.argmax", Ref(out), outputs=SCALAR, ns=5_000)
    return b


def test_calls_after_the_last_marked_step_are_not_part_of_the_replayed_step():
    """Regression: nothing closes the last marked step, so it ran to the end of the capture
    and the replay (of the last step) counted a whole evaluation loop in every step."""
    b = _marked_steps_then_evaluation(steps=4, eval_batches=10)
    program = b.program()
    region = find_region(program)
    assert region.steps == ((6, 9), (9, 12), (12, 15))
    assert region.excluded_calls == 3 + 3 + 20
    assert region.excluded_ns == 3 * SET_UP_NS + 3 * STEADY_NS + 20 * 5_000
    assert "20 calls after the last marked step" in region.note
    step = step_program(program, region)
    assert [c.api for c in step.calls] == ["torch.matmul", "torch.relu", "torch.sum"]
    assert step.step_traced_ns == (3 * STEADY_NS,) * 3


def test_the_last_marked_step_is_cut_against_the_warm_up_when_only_two_are_marked():
    b = _marked_steps_then_evaluation(steps=2, eval_batches=1)
    region = find_region(b.program())
    assert region.warmup == (3, 6) and region.steps == ((6, 9),)


def test_a_last_marked_step_that_starts_differently_is_kept_whole():
    """Only a last step that begins like the step before it is cut: a step of other calls
    (another batch shape) is the script's own and stays as marked."""
    b = ProgramBuilder()
    b.step(mark=True)
    b.step(mark=True)
    b.markers.append(Marker(len(b.calls)))
    b.add("torch.matmul", Ext(0), Ext(1), outputs=("tensor", (2, 8), "float32"))
    b.add("torch.relu", Ref(len(b.calls) - 1))
    b.add("torch.relu", Ref(len(b.calls) - 1))
    b.add("torch.sum", Ref(len(b.calls) - 1), outputs=SCALAR)
    region = find_region(b.program())
    assert region.steps == ((3, 6), (6, 10)) and region.note == ""


def test_markers_enclosing_no_call_are_an_error():
    b = ProgramBuilder()
    b.step()
    b.markers.append(Marker(len(b.calls)))
    with pytest.raises(RegionError, match="enclose no framework call"):
        find_region(b.program())


# -- --skip-first-calls ------------------------------------------------------------------------

def test_skip_first_calls_keeps_every_period_after_the_skipped_calls():
    program, _ = _set_up_and_steps(4)
    region = find_region(program, skip_first_calls=6)
    assert region.rule == RULE_SKIP
    assert region.warmup is None
    assert region.steps == ((6, 9), (9, 12), (12, 15))
    assert region.excluded_calls == 6


def test_skip_first_calls_wins_over_markers():
    b = ProgramBuilder()
    b.set_up()
    for _ in range(3):
        b.step(mark=True)
    region = find_region(b.program(), skip_first_calls=3)
    assert region.rule == RULE_SKIP and region.steps == ((3, 6), (6, 9), (9, 12))


def test_skip_first_calls_without_repetition_replays_the_rest_as_one_step():
    b = ProgramBuilder()
    b.set_up()
    b.step()
    region = find_region(b.program(), skip_first_calls=3)
    assert region.steps == ((3, 6),) and region.warmup is None
    assert region.excluded_calls == 3 and region.excluded_ns == 3 * SET_UP_NS
    assert "replayed as one step" in region.note


def test_skip_first_calls_zero_takes_a_one_step_program_whole():
    b = ProgramBuilder()
    b.step()
    region = find_region(b.program(), skip_first_calls=0)
    assert region.rule == RULE_SKIP and region.steps == ((0, 3),)
    assert region.excluded_calls == 0


def test_skipping_every_call_is_an_error_naming_the_counts():
    program, _ = _set_up_and_steps(2)
    with pytest.raises(RegionError, match="skips all 9 calls"):
        find_region(program, skip_first_calls=9)


# -- the replayed step -------------------------------------------------------------------------

def _stateful_program() -> Program:
    """Set-up makes a mask (a seq output, used by every step through a path) and the
    token ids (integer); each step reads the previous step's state, feeds its own results
    forward, and has a dropout that is an alias of its input."""
    b = ProgramBuilder()
    b.add("torch.manual_seed", Lit(0), outputs=("other", "Generator"), ns=SET_UP_NS)
    masks = b.add("torch.chunk", Ext(0), Lit(2), ns=SET_UP_NS,
                  outputs=("seq", (("tensor", (2, 16), "float32"),
                                   ("tensor", (2, 16), "bool"))))
    ids = b.add("torch.randint", Lit(9), ns=SET_UP_NS,
                outputs=("tensor", (4,), "int64", 2.0, 9.0))
    state = b.add("torch.zeros", Lit(4), ns=SET_UP_NS)
    per_step_ns = [[9000, 9000, 9000, 9000, 9000],      # warm-up
                   [100, 10, 1000, 7, 50],
                   [300, 30, 3000, 7, 50],
                   [200, 20, 2000, 7, 90]]
    for ns in per_step_ns:
        emb = b.add("torch.nn.functional.embedding", Ref(ids), Ext(1), ns=ns[0])
        drop = b.add("torch.nn.Dropout", Ref(emb), alias_of=Ref(emb), ns=ns[1])
        mixed = b.add("torch.add", Ref(drop), Ref(state), ns=ns[2],
                      kwargs=(("mask", Seq("list", (Ref(masks, (1,)), Lit(1)))),))
        b.add("torch.Tensor.masked_fill", Ref(mixed), Ref(masks, (1,)), Lit(0.0), ns=ns[3])
        state = b.add("torch.tanh", Ref(mixed), ns=ns[4])
    return b.program()


def test_step_program_is_the_last_steady_step_with_refs_renumbered_from_zero():
    program = _stateful_program()
    region = find_region(program)
    assert region.warmup == (4, 9) and region.steps == ((9, 14), (14, 19), (19, 24))
    step = step_program(program, region)
    assert step.steps == 3
    assert step.source_index == (19, 20, 21, 22, 23)
    assert [c.index for c in step.calls] == [0, 1, 2, 3, 4]
    assert [c.api for c in step.calls] == [c.api for c in program.calls[19:24]]
    assert step.calls[1].args == (Ref(0),) and step.calls[1].alias_of == Ref(0)
    assert step.calls[2].args[0] == Ref(1)
    assert step.calls[4].args == (Ref(2),)


def test_refs_to_calls_before_the_step_become_externals_with_shape_dtype_and_range():
    program = _stateful_program()
    step = step_program(program, find_region(program))
    kept = len(program.externals)
    assert step.externals[:kept] == program.externals
    ids, prev_state, mask = step.externals[kept:]
    assert step.calls[0].args == (Ext(ids.id), Ext(1))
    assert (ids.shape, ids.dtype, ids.low, ids.high) == ((4,), "int64", 2.0, 9.0)
    assert ids.role == "input" and ids.name == "from torch.randint"
    # the previous step's state (tanh of step 2): shape and dtype of that output
    assert step.calls[2].args[1] == Ext(prev_state.id)
    assert (prev_state.shape, prev_state.dtype, prev_state.name) == ((4, 8), "float32",
                                                                    "from torch.tanh")
    # a path into a seq output picks that element; the same ref twice is one external
    assert (mask.shape, mask.dtype) == ((2, 16), "bool")
    assert step.calls[2].kwargs == (("mask", Seq("list", (Ext(mask.id), Lit(1)))),)
    assert step.calls[3].args[1] == Ext(mask.id)
    assert [e.id for e in step.externals] == list(range(len(step.externals)))


def test_per_call_traced_time_is_the_median_over_the_steady_steps():
    program = _stateful_program()
    step = step_program(program, find_region(program))
    # steps 1..3 (the warm-up's 9000s are left out)
    assert step.traced_ns == (200, 20, 2000, 7, 50)
    assert step.step_traced_ns == (1167, 3387, 2317)
    assert step.traced_step_ns == 2317.0


def test_the_tracers_calibrated_cost_inside_each_call_is_taken_out_of_its_traced_time():
    # 1,000 ns a steady call, 9,000 a warm-up one, 50,000 a set-up one, of which the capture
    # calibrated 400 ns as the tracer's own (trace/overhead.py calibrate_in_window)
    from dataclasses import replace
    program, _ = _set_up_and_steps(4)
    program = replace(program, in_window_ns_per_call=400.0)
    region = find_region(program)
    step = step_program(program, region)
    assert step.traced_ns == (600, 600, 600)
    assert step.step_traced_ns == (1800, 1800, 1800)
    assert region.excluded_ns == 3 * (SET_UP_NS - 400) + 3 * (WARMUP_NS - 400)


def test_a_call_shorter_than_the_calibrated_cost_reads_zero_not_negative():
    from dataclasses import replace
    program, _ = _set_up_and_steps(4)
    step = step_program(replace(program, in_window_ns_per_call=1_500.0),
                        find_region(program))
    assert step.traced_ns == (0, 0, 0)


def test_a_step_reading_a_non_tensor_output_from_before_the_step_is_an_error():
    b = ProgramBuilder()
    seed = b.add("torch.manual_seed", Lit(0), outputs=("other", "Generator"))
    for _ in range(3):
        b.add("torch.relu", Ref(seed))
    with pytest.raises(RegionError, match="non-tensor output of torch.manual_seed"):
        step_program(b.program(), find_region(b.program()))


# -- the automatic rule while the script runs (issue 32, item 6) ---------------------------------

from opbench.model.steady import repeated_tail  # noqa: E402


def test_a_tail_repeating_for_the_warmup_and_the_steps_gives_its_period():
    setup = list(range(100, 130))
    step = [1, 2, 3, 2]
    assert repeated_tail(setup + step * 12, steps=10, min_window=8) == 4
    # one period short: a warm-up and 9 steady steps only
    assert repeated_tail(setup + step * 11, steps=10, min_window=8) is None


def test_the_minimum_window_keeps_a_repeating_layer_from_passing_for_the_step():
    """Six identical layers of 3 calls inside a step of 20 calls: with steps=2 the layers
    alone repeat 4 times at the end of a forward; over 40 calls they do not."""
    step = [1, 2, 3] * 6 + [7, 8]
    forward_end = step * 2 + [1, 2, 3] * 6
    assert repeated_tail(forward_end, steps=2, min_window=1) == 3
    assert repeated_tail(forward_end, steps=2, min_window=40) is None
    assert repeated_tail(step * 5, steps=2, min_window=40) == 20


def test_too_few_calls_for_the_window_is_not_enough():
    assert repeated_tail([1, 1, 1], steps=1, min_window=512) is None
    assert repeated_tail([], steps=1) is None

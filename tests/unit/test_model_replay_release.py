"""A timed replay drops each call's result after its last reader in the step
(opbench/model/replay/release.py, executor.py's timed runs), as the script's Python frees
`h @ w.T` once `+ b` has read it; the probe keeps them all (it fingerprints them). The plan
on small programs, then the executor's runs on numpy fake adapters (runner_fakes.py), with a
weak reference telling whether a result is still alive."""
from __future__ import annotations

import weakref

import numpy as np
from runner_fakes import FakeAdapter, FakeClock

from opbench.frameworks.apimap import ApiMapping
from opbench.model.program import Call, Ext, ExternalTensor, Lit, Ref, Seq
from opbench.model.replay.executor import Differentiated, Replayer, _accumulating, _identity
from opbench.model.replay.release import (FORWARD, GRADIENTS, Block, Unit, per_call_order,
                                          read_before_written, refs_read, releases,
                                          step_order)
from opbench.model.steady import StepProgram

R = frozenset


# -- the plan ------------------------------------------------------------------------------------

def test_refs_read_walks_nested_sequences_and_paths_like_the_getters():
    args = (Ref(0), Seq("list", (Ref(1, (0,)), Seq("tuple", (Ref(2, (1, 0)), Ext(5))))),
            Lit(3), Ext(4))
    assert refs_read(args) == R({0, 1, 2})
    assert refs_read((Lit(1), Ext(0))) == R()


def test_each_result_goes_after_its_last_reader_and_an_unread_one_at_once():
    """0 -> 1 -> 2 -> 3 reading 0 again; 4 reads nothing and nothing reads it."""
    reads = [R(), R({0}), R({1}), R({2, 0}), R()]
    order = step_order(reads, ())
    assert [u.key for u in order] == [0, 1, 2, 3, 4]
    assert releases(order, keep=()) == {2: (1,), 3: (0, 2, 3), 4: (4,)}


def test_kept_results_are_never_dropped():
    reads = [R(), R({0}), R({1})]
    assert releases(step_order(reads, ()), keep={2}) == {1: (0,), 2: (1,)}
    assert releases(step_order(reads, ()), keep={0, 1, 2}) == {}


def test_calls_without_a_plan_entry_are_no_unit_and_their_results_are_not_dropped():
    """A call set once at the probe (None: no entry) is read but never set by the order."""
    reads = [None, R({0}), R({1})]
    order = step_order(reads, ())
    assert [u.key for u in order] == [1, 2]
    assert read_before_written(order) == R({0})
    assert 0 not in {r for drop in releases(order, keep=()).values() for r in drop}


def test_a_result_read_before_the_order_sets_it_is_the_last_steps_and_is_kept():
    order = [Unit(0, R({2}), R({0})), Unit(1, R({0}), R({1})), Unit(2, R({1}), R({2}))]
    assert read_before_written(order) == R({2})


def _ms_training_reads():
    """A MindSpore-style training step: 0 outside (a mask), 1-3 the forward the loss (3)
    depends on, 4 the backward (no plan entry), 5 an accuracy from 2, 6 the update reading
    the gradients (4) and the mask; the forward output the backward writes reads 5."""
    reads = [R(), R({0}), R({1}), R({2}), None, R({2}), R({4, 0})]
    block = Block(R({1, 2, 3}), 1, 4, outside_reads=R({5}))
    return reads, block


def test_a_differentiated_step_runs_its_forward_as_one_unit_and_drops_after_it():
    reads, block = _ms_training_reads()
    order = step_order(reads, [block])
    assert [u.key for u in order] == [0, 1, 5, 6]
    assert order[1] == Unit(1, R({0, 5}), R({1, 2, 3, 4}))
    # the accuracy the block writes out is read before it is set: the last step's
    early = read_before_written(order)
    assert early == R({5})
    assert releases(order, keep=early | {4}) == {1: (1, 3), 5: (2,), 6: (0, 6)}


def test_the_per_call_pass_runs_every_call_then_the_forward_and_the_gradients():
    reads, block = _ms_training_reads()
    order = per_call_order(reads, passed_through={5}, blocks=[block])
    assert [u.key for u in order] == [0, 1, 2, 3, 6, (FORWARD, 4), (GRADIENTS, 4)]
    # the update reads the gradients before the pass's GRADIENTS unit sets them
    assert read_before_written(order) == R({4, 5})


def test_two_blocks_run_each_at_its_first_call_and_the_second_reads_the_first_gradients():
    """Gradient accumulation: forward 0-1 and backward 2, forward 3-4 and backward 5 adding
    to 2's gradients (an outside read), the update 6 reading 5's sum."""
    reads = [R(), R({0}), None, R(), R({3}), None, R({5})]
    blocks = [Block(R({0, 1}), 0, 2, R()), Block(R({3, 4}), 3, 5, R({2}))]
    order = step_order(reads, blocks)
    assert [u.key for u in order] == [0, 3, 6]
    assert order[1] == Unit(3, R({2}), R({3, 4, 5}))
    assert releases(order, keep={2, 5}) == {0: (0, 1), 3: (3, 4), 6: (6,)}
    per_call = per_call_order(reads, passed_through=(), blocks=blocks)
    assert [u.key for u in per_call][-4:] == [(FORWARD, 2), (GRADIENTS, 2), (FORWARD, 5),
                                             (GRADIENTS, 5)]


# -- the executor's timed runs ---------------------------------------------------------------

HIDDEN = ("tensor", (4, 8), "float32")
EXTERNALS = (ExternalTensor(0, (4, 16), "float32", "input"),
             ExternalTensor(1, (16, 8), "float32", "parameter", "w"))


class _Made:
    """Weak references to every array the fake framework's calls return, per api."""

    def __init__(self):
        self.refs: dict[str, list[weakref.ref]] = {}

    def tracking(self, api: str, fn):
        def call(*args, **kwargs):
            value = fn(*args, **kwargs)
            for v in (value if isinstance(value, tuple) else (value,)):
                self.refs.setdefault(api, []).append(weakref.ref(v))
            return value
        return call

    def alive(self, api: str) -> bool:
        """Whether the last array `api` made is still referenced."""
        return self.refs[api][-1]() is not None


def _call(index, api, *args, outputs=HIDDEN, alias_of=None, replay_api="same"):
    return Call(index=index, framework="torch", api=api, kind="function",
                replay_api=api if replay_api == "same" else replay_api, args=tuple(args),
                kwargs=(), outputs=outputs, duration_ns=1000, start_ns=0,
                problem=None if replay_api else "no route", alias_of=alias_of)


def _step(*calls):
    n = len(calls)
    return StepProgram("torch", tuple(calls), EXTERNALS, steps=3, traced_ns=(1000,) * n,
                       step_traced_ns=(1000 * n,) * 3, source_index=tuple(range(n)))


def _replayer(step, made: _Made) -> Replayer:
    functions = {"torch.matmul": np.matmul, "torch.relu": lambda x: np.maximum(x, 0.0),
                 "torch.add": np.add,
                 "torch.split2": lambda x: tuple(np.split(x, 2, axis=1))}
    adapter = FakeAdapter("torch", FakeClock(),
                          functions={api: made.tracking(api, fn)
                                     for api, fn in functions.items()})
    return Replayer(step, "torch", adapter, ApiMapping([]), clock=adapter.clock)


def _linear_step():
    """matmul(x, w) -> add(h, h) -> relu: the script frees h once add has read it."""
    return _step(_call(0, "torch.matmul", Ext(0), Ext(1)),
                 _call(1, "torch.add", Ref(0), Ref(0)),
                 _call(2, "torch.relu", Ref(1)))


def test_the_probe_keeps_every_result_and_a_timed_step_frees_them_after_their_reader():
    made = _Made()
    replayer = _replayer(_linear_step(), made)
    replayer.probe()
    assert made.alive("torch.matmul") and made.alive("torch.add")
    replayer.time_step(1)
    assert not made.alive("torch.matmul") and not made.alive("torch.add")
    assert made.alive("torch.relu")              # the step's result, read back in a queue
    np.testing.assert_array_equal(replayer._results[2], np.maximum(
        2 * (replayer._externals[0] @ replayer._externals[1]), 0.0))


def test_every_timed_path_frees_and_each_still_reads_what_it_needs():
    made = _Made()
    replayer = _replayer(_linear_step(), made)
    replayer.probe()
    replayer.warm_up(2, 0.0)
    assert not made.alive("torch.matmul")
    replayer.time_step_to_host(2)
    assert not made.alive("torch.add")
    times = replayer.time_calls(2)
    assert all(t > 0 for per_call in times for t in per_call)
    assert not made.alive("torch.matmul") and not made.alive("torch.add")
    assert replayer._results[:2] == [None, None]


def test_an_element_read_by_path_frees_the_whole_result_after_its_last_reader():
    made = _Made()
    step = _step(_call(0, "torch.split2", Ext(1), outputs=("seq", (HIDDEN, HIDDEN))),
                 _call(1, "torch.relu", Ref(0, (1,))),
                 _call(2, "torch.add", Ref(1), Ref(0, (0,))))
    replayer = _replayer(step, made)
    replayer.probe()
    replayer.time_step(1)
    assert replayer._results[0] is None and replayer._results[1] is None
    assert not made.alive("torch.split2") and not made.alive("torch.relu")


def test_aliases_and_stand_ins_keep_their_results_and_their_readers_still_run():
    """An alias is passed through (time_calls does not rerun it); a stand-in's value is
    the probe's."""
    made = _Made()
    step = _step(_call(0, "torch.matmul", Ext(0), Ext(1)),
                 _call(1, "torch.dropout", Ref(0), alias_of=Ref(0)),
                 _call(2, "torch.unmappable", Ref(1), replay_api=None),
                 _call(3, "torch.add", Ref(1), Ref(2)),
                 _call(4, "torch.relu", Ref(3)))
    replayer = _replayer(step, made)
    replayer.probe()
    assert replayer._plan[1][0] is _identity and replayer.status[2].stand_in
    replayer.time_step(1)
    replayer.time_calls(1)
    replayer.time_step(1)
    assert replayer._results[1] is not None and replayer._results[2] is not None
    assert replayer._results[3] is None
    # the alias holds the matmul's array: dropping the matmul's own slot frees nothing
    assert replayer._results[0] is None and made.alive("torch.matmul")


def test_a_differentiated_step_keeps_its_gradients_and_what_its_block_reads():
    """MindSpore's value_and_grad (executor.differentiate) stood for by a fake block: the
    forward (0, 1) runs at 0, the backward (2) has no plan entry, the update (3) reads the
    gradients and the forward's hidden result."""
    made = _Made()
    step = _step(_call(0, "torch.matmul", Ext(0), Ext(1)),
                 _call(1, "torch.relu", Ref(0)),
                 _call(2, "torch.unmappable", Ref(1), replay_api=None,
                       outputs=("seq", (HIDDEN, HIDDEN))),
                 _call(3, "torch.add", Ref(2, (1,)), Ref(0)))
    replayer = _replayer(step, made)
    replayer.probe()
    plan, results = replayer._plan, replayer._results
    plan[2], replayer._reads[2] = None, None       # as the probe leaves a backward

    def forward():
        for i in (0, 1):
            fn, get_args, get_kwargs = plan[i]
            results[i] = fn(*get_args(), **get_kwargs())
        return results[1]
    replayer._blocks = [Differentiated(
        frozenset({0, 1}), 0, 2, lambda: (forward(), np.ones((4, 8), np.float32)), forward)]
    replayer._plan_releases()
    replayer.time_step(2)
    assert results[0] is None and results[1] is None
    assert results[2] is not None                         # the gradients stay
    np.testing.assert_array_equal(
        results[3], 1.0 + replayer._externals[0] @ replayer._externals[1])
    replayer.time_calls(1)
    assert results[2] is not None


# -- torch's grad mode in the timed runs ----------------------------------------------------------

def test_the_timed_runs_set_the_grad_mode_where_it_changes_not_around_each_call(monkeypatch):
    """A script enters no_grad once around its loop: the replay switches the mode before
    the first call made without grad and back on before the next made with it (and at the
    step's end), not around each call (~2.8 us a call more; executor._plan_grad_modes)."""
    from dataclasses import replace

    from opbench.model.replay import executor
    switched: list[bool] = []
    monkeypatch.setattr(executor, "grad_mode_setter", lambda: switched.append)
    made = _Made()
    off = [replace(c, grad_enabled=False) for c in (
        _call(0, "torch.matmul", Ext(0), Ext(1)), _call(1, "torch.add", Ref(0), Ref(0)))]
    step = _step(*off, _call(2, "torch.relu", Ref(1)),
                 replace(_call(3, "torch.relu", Ref(2)), grad_enabled=False))
    replayer = _replayer(step, made)
    monkeypatch.setattr(executor, "without_grad", lambda fn: fn)     # the probe's, per call
    replayer.probe()
    replayer.time_step(2)
    assert switched == [False, True, False, True] * 2
    switched.clear()
    replayer.time_calls(1)
    assert switched == [False, True, False, True]


def test_a_step_in_one_grad_mode_switches_nothing():
    made = _Made()
    replayer = _replayer(_linear_step(), made)
    replayer.probe()
    assert replayer._grad_at == {} and not replayer._grad_restore
    replayer.time_step(1)                       # no setter needed (none was made)


def test_a_calls_arguments_are_read_afresh_as_one_tuple_for_any_count():
    from opbench.model.replay.executor import gathered
    values = list(range(5))
    for n in range(6):
        get = gathered([lambda i=i: values[i] for i in range(n)])
        assert get() == tuple(range(n))
    get = gathered([lambda: values[0], lambda: values[1]])
    values[0] = "changed"
    assert get() == ("changed", 1)


def test_a_step_with_two_backwards_runs_both_blocks_and_the_update_reads_their_sum():
    """Gradient accumulation in MindSpore's replay (executor.differentiate): two fake
    value_and_grad blocks over the same weight, the second made by `_accumulating` onto the
    first; every timed path runs both, and the update reads gradient 1 + gradient 2."""
    made = _Made()
    grads = ("seq", (HIDDEN, ("seq", (("tensor", (16, 8), "float32"),))))
    step = _step(_call(0, "torch.matmul", Ext(0), Ext(1)),
                 _call(1, "torch.relu", Ref(0)),
                 _call(2, "torch.unmappable", Ref(1), replay_api=None, outputs=grads),
                 _call(3, "torch.matmul", Ext(0), Ext(1)),
                 _call(4, "torch.relu", Ref(3)),
                 _call(5, "torch.unmappable", Ref(4), replay_api=None, outputs=grads),
                 _call(6, "torch.relu", Ref(5, (1, 0))))
    replayer = _replayer(step, made)
    replayer.probe()
    plan, results = replayer._plan, replayer._results
    for i in (2, 5):                                  # as the probe leaves a backward
        plan[i], replayer._reads[i] = None, None
    ran = []

    def forward(inside):
        def run():
            ran.append(inside)
            for i in inside:
                fn, get_args, get_kwargs = plan[i]
                results[i] = fn(*get_args(), **get_kwargs())
            return results[inside[-1]]
        return run
    ones = np.ones((16, 8), np.float32)
    first = Differentiated(frozenset({0, 1}), 0, 2,
                           lambda: (forward((0, 1))(), (ones,)), forward((0, 1)), weights=(1,))
    second = _accumulating(first, lambda: (forward((3, 4))(), (2 * ones,)), (1,), (3, 4), 5,
                           forward((3, 4)), results, frozenset())
    assert second.weights == (1,) and second.outside_reads == {2}
    results[2] = first.run()
    replayer._blocks = [first, second]
    replayer._plan_releases()
    assert replayer._compiled is None                 # the loop runs the blocks
    ran.clear()
    replayer.time_step(2)
    assert ran == [(0, 1), (3, 4)] * 2
    np.testing.assert_array_equal(results[6], 3 * ones)
    assert results[2] is not None and results[5] is not None
    ran.clear()
    times = replayer.time_calls(1)
    # each block's forward alone, then with its gradients
    assert ran == [(0, 1), (0, 1), (3, 4), (3, 4)]
    assert times[2][0] >= 0 and times[5][0] >= 0
    np.testing.assert_array_equal(results[5][1][0], 3 * ones)


def test_an_accumulating_block_sums_the_weights_both_read_and_keeps_the_others():
    """The second block's loss reads weights 1 and 2, the first's 0 and 1: the sum runs over
    0, 1, 2 (the first block's order first), 1's two gradients added."""
    results = [None, (0.5, (np.full(2, 1.0), np.full(2, 10.0)))]
    earlier = Differentiated(frozenset({0}), 0, 1, lambda: None, lambda: None, weights=(0, 1))
    block = _accumulating(earlier, lambda: (0.25, (np.full(2, 100.0), np.full(2, 1000.0))),
                          (1, 2), (2,), 3, lambda: None, results, frozenset({7}))
    loss, summed = block.run()
    assert loss == 0.25 and block.weights == (0, 1, 2) and block.outside_reads == {1, 7}
    assert [float(g[0]) for g in summed] == [1.0, 110.0, 1000.0]

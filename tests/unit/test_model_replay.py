"""Replaying one step (opbench/model/replay/executor.py) with numpy fake adapters (runner_fakes.py:
names resolve to numpy functions, each call advances a fake clock by its cost): external
tensors are the same everywhere, the probe keeps the first route that runs, what cannot run
is stood in for so the rest still runs, skipped calls and aliases, the timing passes'
counts and sums, and the output fingerprints the frameworks are compared by
(opbench/model/impact/pipeline.py _compare)."""
from __future__ import annotations

import sys
from dataclasses import replace
import types

import numpy as np
import pytest
from runner_fakes import FakeAdapter, FakeClock

from opbench.frameworks.apimap import ApiMapping, MappingEntry
from opbench.model.impact.pipeline import _compare
from opbench.model.program import (Call, Dtype, Ext, ExternalTensor, Lit, Opaque, Ref, Seq,
                                   SliceOf)
from opbench.model.replay.executor import (FINGERPRINT_POINTS, Replayer, clearing_grads,
                                           external_array, fingerprint, stand_in_arrays,
                                           stand_in_function)
from opbench.model.steady import StepProgram

HIDDEN = ("tensor", (4, 8), "float32")
COSTS = {"torch.matmul": 3e-4, "torch.relu": 1e-4, "Tensor.sum": 2e-4}
EXTERNALS = (ExternalTensor(0, (4, 16), "float32", "input"),
             ExternalTensor(1, (16, 8), "float32", "parameter", "w"),
             ExternalTensor(2, (4,), "int64", "input", "ids", 1.0, 3.0))
TORCH_FUNCTIONS = {
    "torch.matmul": np.matmul,
    "torch.relu": lambda x: np.maximum(x, 0.0),
    "Tensor.sum": lambda x, dim=None: np.sum(x, axis=dim),
    "torch.flip": lambda x, dims: np.flip(x, axis=tuple(dims)),
    "torch.take_rows": lambda table, ids: table[ids],
    "torch.split": lambda x, size, dim=0: tuple(np.split(x, x.shape[dim] // size, axis=dim)),
    "torch.getitem": lambda x, index: x[index],
    "torch.cast": lambda x, dtype: x.astype(dtype),
}


def _call(index: int, api: str, *args, outputs=HIDDEN, kwargs=(), replay_api="same",
          alias_of=None, problem=None) -> Call:
    return Call(index=index, framework="torch", api=api, kind="function",
                replay_api=api if replay_api == "same" else replay_api, args=tuple(args),
                kwargs=tuple(kwargs), outputs=outputs, duration_ns=1000, start_ns=0,
                problem=problem, alias_of=alias_of)


def _step(*calls: Call, externals=EXTERNALS) -> StepProgram:
    n = len(calls)
    return StepProgram("torch", tuple(calls), tuple(externals), steps=3,
                       traced_ns=(1000,) * n, step_traced_ns=(1000 * n,) * 3,
                       source_index=tuple(range(n)))


def _mlp_step() -> StepProgram:
    """matmul(x, w) -> relu -> sum(dim=1)"""
    return _step(_call(0, "torch.matmul", Ext(0), Ext(1)),
                 _call(1, "torch.relu", Ref(0)),
                 _call(2, "torch.Tensor.sum", Ref(1), kwargs=(("dim", Lit(1)),),
                       outputs=("tensor", (4,), "float32")))


def _torch(clock: FakeClock | None = None, functions=None, costs=None) -> FakeAdapter:
    return FakeAdapter("torch", clock or FakeClock(), costs={**COSTS, **(costs or {})},
                       functions={**TORCH_FUNCTIONS, **(functions or {})})


def _replayer(step: StepProgram, adapter: FakeAdapter, framework: str = "torch",
              mapping: ApiMapping | None = None, **options) -> Replayer:
    return Replayer(step, framework, adapter, mapping or ApiMapping([]), clock=adapter.clock,
                    **options)


# -- external tensors ---------------------------------------------------------------------------

def test_external_arrays_depend_only_on_id_shape_and_dtype():
    a = external_array(ExternalTensor(7, (3, 5), "float32", "input"))
    again = external_array(ExternalTensor(7, (3, 5), "float32", "input", "renamed"))
    other_id = external_array(ExternalTensor(8, (3, 5), "float32", "input"))
    np.testing.assert_array_equal(a, again)
    assert not np.array_equal(a, other_id)
    assert a.dtype == np.float32 and a.shape == (3, 5)


def test_every_replay_process_and_framework_gets_the_same_externals():
    first = _replayer(_mlp_step(), _torch())
    second = _replayer(_mlp_step(), FakeAdapter("mindspore", FakeClock()), "mindspore")
    for ext in EXTERNALS:
        np.testing.assert_array_equal(first._externals[ext.id], second._externals[ext.id])


def test_integer_externals_stay_in_their_observed_range_and_reach_both_ends():
    ids = external_array(ExternalTensor(0, (2000,), "int64", "input", "", 3.0, 7.0))
    assert ids.dtype == np.int64
    assert ids.min() == 3 and ids.max() == 7


def test_bool_externals_are_booleans():
    mask = external_array(ExternalTensor(0, (100,), "bool", "input"))
    assert mask.dtype == np.bool_ and 0 < mask.sum() < 100


def test_weights_are_scaled_by_their_fan_in_and_inputs_are_not():
    weight = external_array(ExternalTensor(0, (64, 256), "float32", "parameter"))
    data = external_array(ExternalTensor(0, (64, 256), "float32", "input"))
    assert np.abs(weight).max() <= 1 / 16            # uniform(-1, 1) / sqrt(256)
    assert np.abs(data).max() > 0.9
    conv = external_array(ExternalTensor(1, (8, 4, 3, 3), "float32", "parameter"))
    assert np.abs(conv).max() <= 1 / 6               # fan-in 4 x 3 x 3 = 36


def test_one_dimensional_float_externals_are_positive_and_moderate():
    """A norm's scale or a running variance: a sqrt or log of it stays finite."""
    scale = external_array(ExternalTensor(0, (512,), "float32", "parameter"))
    assert scale.min() >= 0.5 and scale.max() <= 1.5


# -- the probe ---------------------------------------------------------------------------------

def test_the_probe_runs_every_call_and_fingerprints_its_output():
    adapter = _torch()
    replayer = _replayer(_mlp_step(), adapter)
    prints = replayer.probe()
    assert [s.ok for s in replayer.status] == [True, True, True]
    assert [s.api for s in replayer.status] == ["torch.matmul", "torch.relu", "torch.Tensor.sum"]
    x, w = (external_array(e) for e in EXTERNALS[:2])
    expected = np.maximum(x @ w, 0.0).sum(axis=1)
    assert prints[2] == fingerprint(expected)
    assert adapter.calls == {"torch.matmul": 1, "torch.relu": 1, "Tensor.sum": 1}


GELU_MAPPING = ApiMapping([])        # gelu has an explicit rule: ops.gelu, then mint


def _gelu_step() -> StepProgram:
    return _step(_call(0, "torch.nn.functional.gelu", Ext(0)),
                 _call(1, "torch.relu", Ref(0)))


def _ms_adapter(functions: dict) -> FakeAdapter:
    return FakeAdapter("mindspore", FakeClock(), functions={
        "mindspore.mint.nn.functional.relu": lambda x: np.maximum(x, 0), **functions})


def _relu_mapping() -> ApiMapping:
    return ApiMapping([MappingEntry("torch.relu", "mindspore.mint.nn.functional.relu",
                                    "function", "same")])


def _no_cpu_kernel(*args, **kwargs):
    raise RuntimeError("no CPU kernel for this op\n  C++ stack")


def test_the_probe_keeps_the_first_fallback_that_works():
    adapter = _ms_adapter({"mindspore.ops.gelu": _no_cpu_kernel,
                           "mindspore.mint.nn.functional.gelu": lambda x, approximate: x * 2})
    replayer = _replayer(_gelu_step(), adapter, "mindspore", _relu_mapping())
    prints = replayer.probe()
    gelu = replayer.status[0]
    assert gelu.ok and gelu.route == 1 and not gelu.stand_in
    assert gelu.api == "mindspore.mint.nn.functional.gelu"
    # why the route before it did not run is kept (a missing CPU kernel, typically)
    assert gelu.problem == "mindspore.ops.gelu: RuntimeError: no CPU kernel for this op"
    assert prints[0] == fingerprint(external_array(EXTERNALS[0]) * 2)
    assert replayer.status[1].ok and replayer.status[1].problem is None


def test_when_every_route_fails_their_messages_are_recorded_and_a_stand_in_runs():
    adapter = _ms_adapter({"mindspore.ops.gelu": _no_cpu_kernel})    # mint gelu missing
    replayer = _replayer(_gelu_step(), adapter, "mindspore", _relu_mapping())
    prints = replayer.probe()
    gelu = replayer.status[0]
    assert not gelu.ok and gelu.stand_in and prints[0] is None
    assert "mindspore.ops.gelu: RuntimeError: no CPU kernel for this op" in gelu.problem
    assert "C++ stack" not in gelu.problem                     # the first line only
    assert "mindspore.mint.nn.functional.gelu: UnknownAPI" in gelu.problem
    # the call after it ran on the stand-in, shaped as the traced output
    assert replayer.status[1].ok and prints[1]["shape"] == [4, 8]


def test_chosen_routes_are_taken_without_trying_the_others():
    adapter = _ms_adapter({"mindspore.ops.gelu": lambda x, approximate: x,
                           "mindspore.mint.nn.functional.gelu": lambda x, approximate: x * 2})
    replayer = _replayer(_gelu_step(), adapter, "mindspore", _relu_mapping(),
                         routes_chosen={0: 1})
    replayer.probe()
    assert replayer.status[0].route == 1
    assert adapter.calls["mindspore.ops.gelu"] == 0
    assert adapter.calls["mindspore.mint.nn.functional.gelu"] == 1


def test_an_unmapped_call_is_stood_in_for_and_the_calls_after_it_still_run():
    step = _step(_call(0, "torch.special_thing", Ext(0), replay_api=None,
                       problem="no function form for the layer torch.nn.Special here",
                       outputs=("tensor", (4, 16), "float32")),
                 _call(1, "torch.matmul", Ref(0), Ext(1)),
                 _call(2, "torch.relu", Ref(1)))
    replayer = _replayer(step, _torch())
    prints = replayer.probe()
    assert replayer.status[0].stand_in and not replayer.status[0].ok
    assert replayer.status[0].problem.startswith("no function form")
    assert prints[0] is None
    assert [s.ok for s in replayer.status[1:]] == [True, True]
    assert prints[2]["shape"] == [4, 8]


def test_a_stand_in_for_a_tuple_result_can_be_indexed_and_keeps_integer_ranges():
    outputs = ("seq", (("tensor", (4, 16), "float32"), ("tensor", (6,), "int64", 0.0, 3.0)))
    step = _step(_call(0, "torch.unmappable", Ext(0), replay_api=None, problem="no",
                       outputs=outputs),
                 _call(1, "torch.take_rows", Ref(0, (0,)), Ref(0, (1,)),
                       outputs=("tensor", (6, 16), "float32")))
    replayer = _replayer(step, _torch())
    prints = replayer.probe()
    assert replayer.status[1].ok and prints[1]["shape"] == [6, 16]
    table, ids = stand_in_arrays(outputs, 0)
    assert table.shape == (4, 16) and ids.min() >= 0 and ids.max() <= 3


def test_skipped_calls_are_left_out_of_every_run():
    adapter = _torch()
    replayer = _replayer(_mlp_step(), adapter, skip=[1])
    replayer.probe()
    replayer.time_step(3)
    replayer.time_calls(2)
    relu = replayer.status[1]
    assert relu.stand_in and not relu.ok and "left out" in relu.problem
    assert adapter.calls["torch.relu"] == 0
    assert adapter.calls["Tensor.sum"] == 1 + 3 + 2


def test_an_alias_passes_its_input_through():
    step = _step(_call(0, "torch.matmul", Ext(0), Ext(1)),
                 _call(1, "torch.nn.Dropout", Ref(0), replay_api=None, alias_of=Ref(0)),
                 _call(2, "torch.relu", Ref(1)))
    replayer = _replayer(step, _torch())
    prints = replayer.probe()
    assert replayer.status[1].ok and replayer.status[1].api == "alias"
    assert replayer._results[1] is replayer._results[0]
    assert prints[1] == prints[0]
    times = replayer.time_calls(2)
    assert times[1] == [0.0, 0.0]


def test_an_alias_of_an_external_tensor_is_that_tensor():
    step = _step(_call(0, "torch.nn.Identity", Ext(0), replay_api=None, alias_of=Ext(0)),
                 _call(1, "torch.matmul", Ref(0), Ext(1)))
    replayer = _replayer(step, _torch())
    replayer.probe()
    assert replayer._results[0] is replayer._externals[0]


def test_an_alias_of_a_tuple_passes_each_element_through():
    """The grad reducer's Identity on a TrainOneStepCell's gradients' tuple: the alias is the
    tuple of its inputs, and a later call reading one element reads that input."""
    pair = ("seq", (HIDDEN, ("tensor", (4, 16), "float32")))
    grads = Seq("tuple", (Ref(0), Ext(0)))
    step = _step(_call(0, "torch.matmul", Ext(0), Ext(1)),
                 _call(1, "mindspore.mint.nn.Identity", grads, replay_api=None,
                       alias_of=grads, outputs=pair),
                 _call(2, "torch.relu", Ref(1, (0,))))
    replayer = _replayer(step, _torch())
    replayer.probe()
    assert all(s.ok for s in replayer.status) and replayer.status[1].api == "alias"
    first, second = replayer._results[1]
    assert first is replayer._results[0] and second is replayer._externals[0]
    np.testing.assert_array_equal(replayer._results[2], np.maximum(replayer._results[0], 0))
    assert replayer.time_calls(2)[1] == [0.0, 0.0]


def test_literals_slices_sequences_and_dtypes_reach_the_call(monkeypatch):
    """Dtype names resolve in the replay framework's module: a fake `torch` here."""
    fake_torch = types.ModuleType("torch")
    fake_torch.float16 = np.float16
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    step = _step(_call(0, "torch.getitem", Ext(0),
                       Seq("tuple", (SliceOf(1, None, 2), Opaque("ellipsis", "..."))),
                       outputs=("tensor", (2, 16), "float32")),
                 _call(1, "torch.split", Ref(0), Lit(1), kwargs=(("dim", Lit(0)),),
                       outputs=("seq", (("tensor", (1, 16), "float32"),) * 2)),
                 _call(2, "torch.cast", Ref(1, (1,)), Dtype("float16"),
                       outputs=("tensor", (1, 16), "float16")))
    replayer = _replayer(step, _torch())
    replayer.probe()
    assert all(s.ok for s in replayer.status)
    x = external_array(EXTERNALS[0])
    np.testing.assert_array_equal(replayer._results[2], x[1::2][1:2].astype(np.float16))
    assert replayer._results[2].dtype == np.float16


def test_a_sequence_holding_tensors_is_rebuilt_on_every_run():
    step = _step(_call(0, "torch.matmul", Ext(0), Ext(1)),
                 _call(1, "torch.stack", Seq("list", (Ref(0), Ref(0))),
                       outputs=("tensor", (2, 4, 8), "float32")))
    adapter = _torch(functions={"torch.stack": lambda tensors: np.stack(tensors)})
    replayer = _replayer(step, adapter)
    replayer.probe()
    replayer._results[0] = np.zeros((4, 8), np.float32)
    replayer._run()
    # the stack read the matmul the run recomputed (whose result it then let go: release.py)
    x, w = (external_array(e) for e in EXTERNALS[:2])
    np.testing.assert_array_equal(replayer._results[1], np.stack([x @ w, x @ w]))
    assert replayer._results[0] is None


# -- timing ------------------------------------------------------------------------------------

STEP_COST = 3e-4 + 1e-4 + 2e-4
TICK = 1e-9


def test_time_step_returns_one_sample_per_request_each_the_whole_step():
    replayer = _replayer(_mlp_step(), _torch())
    replayer.probe()
    samples = replayer.time_step(4)
    assert len(samples) == 4
    for sample in samples:
        assert sample == pytest.approx(STEP_COST, abs=3 * TICK)


def test_time_calls_returns_each_calls_latency_per_pass_and_they_add_up_to_the_step():
    replayer = _replayer(_mlp_step(), _torch())
    replayer.probe()
    times = replayer.time_calls(3)
    assert len(times) == 3 and all(len(t) == 3 for t in times)
    for call_times, cost in zip(times, (3e-4, 1e-4, 2e-4)):
        assert call_times == pytest.approx([cost] * 3, abs=3 * TICK)
    step = replayer.time_step(1)[0]
    for p in range(3):
        assert sum(t[p] for t in times) == pytest.approx(step, abs=10 * TICK)


def test_a_stand_in_costs_only_its_own_work_in_the_per_call_pass_and_in_a_step():
    """A stand-in runs no framework API (numpy here: no fake cost): the skipped matmul's
    3e-4 s is not in the step, and the stand-in reads what it took (0 on the fake clock)."""
    replayer = _replayer(_mlp_step(), _torch(), skip=[0])
    replayer.probe()
    times = replayer.time_calls(2)
    assert times[0] == pytest.approx([0.0, 0.0], abs=3 * TICK)
    assert replayer.time_step(1)[0] == pytest.approx(1e-4 + 2e-4, abs=3 * TICK)


class _Tracked(np.ndarray):
    """An array that counts how often its mean is taken (a stand-in reading its input)."""
    means = 0

    def mean(self, *args, **kwargs):
        _Tracked.means += 1
        return np.asarray(self).mean(*args, **kwargs)


def test_a_stand_in_keeps_its_drawn_values_and_depends_on_its_floating_inputs():
    constant = stand_in_arrays(("tensor", (2, 3), "float32"), 7)
    stand_in = stand_in_function(constant, "fake")
    _Tracked.means = 0
    floats = np.ones((4, 4), np.float32).view(_Tracked)
    ints = np.arange(4).view(_Tracked)
    out = stand_in(floats, ints, 2.5)
    np.testing.assert_array_equal(out, constant)      # plus s - stop_gradient(s) == 0
    assert _Tracked.means == 1                        # the float input, not the ids
    # an input that is NaN reaches the output: the output is computed from the inputs
    assert np.isnan(stand_in(np.full((2,), np.nan, np.float32))).all()


def test_a_stand_in_for_integers_or_nothing_is_its_drawn_value():
    ids = stand_in_arrays(("tensor", (6,), "int64", 0.0, 3.0), 1)
    np.testing.assert_array_equal(stand_in_function(ids, "fake")(np.ones(3, np.float32)), ids)
    assert stand_in_function(None, "fake")(np.ones(3, np.float32)) is None


def _stand_in_step(backward: bool) -> StepProgram:
    """matmul -> (a call with no route: a stand-in) -> relu -> sum [-> backward of the sum]"""
    calls = [_call(0, "torch.matmul", Ext(0), Ext(1)),
             _call(1, "torch.unmappable", Ref(0), replay_api=None, problem="no"),
             _call(2, "torch.relu", Ref(1)),
             _call(3, "torch.Tensor.sum", Ref(2), outputs=("tensor", (), "float32"))]
    if backward:
        calls.append(replace(_call(4, "torch.Tensor.backward", Ref(3), outputs=("none",)),
                             backward=True))
    data = (ExternalTensor(0, (4, 16), "float32", "input"),
            ExternalTensor(1, (16, 8), "float32", "input"))
    return _step(*calls, externals=data)


def _rerun_with_nan_input(replayer: Replayer) -> np.ndarray:
    replayer._results[0] = np.full((4, 8), np.nan, np.float32)
    replayer._plan[0] = None                          # keep the NaN input for this run
    replayer._reads[0] = None
    replayer._plan_releases()                         # the timed step made anew
    replayer._run()
    return replayer._results[1]


def test_a_stand_in_a_loss_depends_on_runs_in_every_step_from_its_inputs():
    """So a backward through it reaches the calls before it (MindSpore's value_and_grad
    differentiates the plan's forward calls: a stand-in without a plan entry stopped it)."""
    adapter = _torch(functions={"Tensor.backward": lambda loss: None})
    replayer = _replayer(_stand_in_step(backward=True), adapter)
    replayer.probe()
    assert replayer.status[1].stand_in and replayer._plan[1] is not None
    assert all(s.ok for i, s in enumerate(replayer.status) if i != 1)
    np.testing.assert_allclose(replayer._results[1], stand_in_arrays(HIDDEN, 1))
    assert np.isnan(_rerun_with_nan_input(replayer)).all()     # recomputed from its input


def test_a_stand_in_no_loss_depends_on_is_its_drawn_values_alone():
    """No gradient reaches it: it adds no ops (each costs ~1 ms in MindSpore's queue)."""
    replayer = _replayer(_stand_in_step(backward=False), _torch())
    replayer.probe()
    drawn = stand_in_arrays(HIDDEN, 1)
    np.testing.assert_array_equal(replayer._results[1], drawn)
    np.testing.assert_array_equal(_rerun_with_nan_input(replayer), drawn)


def test_torch_backward_in_its_own_replay_clears_the_weights_gradients_first():
    class Weight:
        grad = "last step's"
    weights = [Weight(), Weight()]
    seen = []
    backward = clearing_grads(lambda loss: seen.append([w.grad for w in weights]), weights)
    backward("loss")
    assert seen == [[None, None]]


def test_warm_up_runs_until_both_its_minimum_runs_and_time_are_reached():
    replayer = _replayer(_mlp_step(), _torch())
    replayer.probe()
    assert replayer.warm_up(min_runs=3, min_time_s=0.0) == 3
    assert replayer.warm_up(min_runs=1, min_time_s=1e-3) == 2     # 2 x 6e-4 s > 1 ms


# -- fingerprints ------------------------------------------------------------------------------

def test_fingerprints_of_equal_arrays_agree():
    x = np.random.default_rng(0).standard_normal((64, 48)).astype(np.float32)
    assert _compare(fingerprint(x), fingerprint(x.copy())) is None
    # float32 kernels differ in summation order: far below the tolerance
    assert _compare(fingerprint(x), fingerprint(x * (1 + 1e-6))) is None


def test_fingerprints_of_permuted_arrays_differ():
    """A wrong transpose or axis keeps the values, the mean and the mean |x|: the sampled
    points tell them apart."""
    x = np.random.default_rng(1).standard_normal((48, 48)).astype(np.float32)
    for permuted in (x.T, x[::-1], np.roll(x, 1, axis=1)):
        found = _compare(fingerprint(x), fingerprint(np.ascontiguousarray(permuted)))
        assert found and found.startswith("values differ"), found


def test_fingerprints_of_other_shapes_differ_by_shape():
    x = np.ones((4, 6))
    assert _compare(fingerprint(x), fingerprint(x.reshape(6, 4))) == "shape [4, 6] against [6, 4]"


def test_a_fingerprint_samples_a_fixed_number_of_points():
    fp = fingerprint(np.arange(10_000, dtype=np.float32))
    assert len(fp["points"]) == FINGERPRINT_POINTS
    assert fp["points"][0] == 0.0 and fp["points"][-1] == 9999.0
    assert fingerprint(np.zeros((0, 3))) == {"shape": [0, 3], "n": 0}


def test_complex_externals_are_drawn_from_one_seed_in_real_and_imaginary_parts():
    """torch.fft's complex64 tensors: the same complex values in every process and framework,
    with real and imaginary parts both drawn (not a real tensor cast to complex)."""
    weight = external_array(ExternalTensor(3, (3, 32, 17), "complex64", "input"))
    again = external_array(ExternalTensor(3, (3, 32, 17), "complex64", "input"))
    assert weight.dtype == np.complex64 and np.array_equal(weight, again)
    assert np.abs(weight.imag).mean() > 0.4 and np.abs(weight.real).mean() > 0.4
    wide = external_array(ExternalTensor(3, (3, 32, 17), "complex128", "input"))
    assert wide.dtype == np.complex128


def test_complex_fingerprints_compare_by_the_magnitude_of_the_difference():
    rng = np.random.default_rng(2)
    z = (rng.standard_normal((16, 9)) + 1j * rng.standard_normal((16, 9))).astype(np.complex64)
    fp = fingerprint(z)
    assert len(fp["imag_points"]) == FINGERPRINT_POINTS
    assert fp["mean_abs"] == pytest.approx(float(np.abs(z).mean()), rel=1e-6)
    # float32 rounding in either part, 1e-6 relative: far below the tolerance
    rounded = z * np.complex64(1 + 1e-6j)
    assert _compare(fp, fingerprint(rounded)) is None
    # the conjugate: equal real parts, equal magnitudes, the imaginary parts' sign flipped
    found = _compare(fp, fingerprint(np.conj(z)))
    assert found and found.startswith("values differ"), found
    # a complex result where the traced call returned real values (MindSpore's abs of a
    # complex tensor is complex: its magnitude in the real part)
    assert _compare(fingerprint(np.abs(z)), fingerprint(np.abs(z).astype(np.complex64))) == \
        "complex values against real ones"


def test_the_probes_of_two_frameworks_agree_for_the_same_op_and_not_for_a_wrong_one():
    step = _step(_call(0, "torch.matmul", Ext(0), Ext(1)),
                 _call(1, "torch.flip", Ref(0), Seq("list", (Lit(1),))))
    mapping = ApiMapping([MappingEntry("torch.matmul", "mindspore.mint.matmul", "function",
                                       "same"),
                          MappingEntry("torch.flip", "mindspore.mint.flip", "function",
                                       "same")])
    reference = _replayer(step, _torch()).probe()
    right = FakeAdapter("mindspore", FakeClock(), functions={
        "mindspore.mint.matmul": np.matmul,
        "mindspore.mint.flip": lambda x, dims: np.flip(x, axis=tuple(dims))})
    wrong = FakeAdapter("mindspore", FakeClock(), functions={
        "mindspore.mint.matmul": np.matmul,
        "mindspore.mint.flip": lambda x, dims: np.flip(x, axis=0)})      # the wrong axis
    agreeing = _replayer(step, right, "mindspore", mapping).probe()
    differing = _replayer(step, wrong, "mindspore", mapping).probe()
    assert [_compare(a, b) for a, b in zip(reference, agreeing)] == [None, None]
    assert _compare(reference[0], differing[0]) is None
    assert _compare(reference[1], differing[1]).startswith("values differ")


def test_tuple_outputs_are_compared_element_by_element():
    a = [fingerprint(np.ones(3)), fingerprint(np.arange(3.0))]
    b = [fingerprint(np.ones(3)), fingerprint(np.arange(3.0)[::-1].copy())]
    assert _compare(a, a) is None
    assert _compare(a, b).startswith("values differ")
    assert _compare(a, a[:1]) == "different numbers of outputs"
    assert _compare(None, a) is None          # a call one side did not run is not compared


# -- a queued launch's step ends with its result read back ---------------------------------------

class _QueuedAdapter(FakeAdapter):
    """A queued launch whose sync also waits for work a read of the last result does not
    (MindSpore 2.10's CPU queue: executor_sync_tail_s after a run of calls); counts reads."""

    def __init__(self, clock: FakeClock, tail_s: float, blocking: bool = False):
        super().__init__("torch", clock, costs=COSTS, functions=TORCH_FUNCTIONS)
        self.tail_s, self.blocking = tail_s, blocking
        self.pending = False
        self.read: list[np.ndarray] = []

    def resolve(self, api):
        if api == "torch.manual_seed":         # paired.py seeds each program's probe
            return lambda seed: None
        timed = super().resolve(api)

        def queued(*args, **kwargs):
            self.pending = True
            return timed(*args, **kwargs)
        return queued

    def sync(self) -> None:
        if self.pending:
            self.clock.advance(self.tail_s)
        self.pending = False

    def to_numpy(self, value):
        self.read.append(np.asarray(value))
        return super().to_numpy(value)

    def launch(self) -> str:
        return "blocking" if self.blocking else "queued"


def test_a_queued_step_ends_with_its_last_result_read_not_with_the_sync():
    """The executor's sync waited 22 ms more than reading the result on a MindSpore step
    (time_step_to_host's docstring): the sample is the calls and the read, the tail after
    the read is drained before the next sample, untimed."""
    adapter = _QueuedAdapter(FakeClock(), tail_s=5e-4)
    replayer = _replayer(_mlp_step(), adapter)
    replayer.probe()
    adapter.read.clear()
    assert replayer.time_step(2) == pytest.approx([STEP_COST + 5e-4] * 2, abs=3 * TICK)
    assert replayer.time_step_to_host(3) == pytest.approx([STEP_COST] * 3, abs=3 * TICK)
    assert len(adapter.read) == 3
    np.testing.assert_array_equal(adapter.read[-1], replayer._results[2])


def test_the_result_read_is_the_last_call_that_ran_with_a_tensor_output():
    """A last call standing in (or not a tensor) is not what the read waits on: the call
    before it is; with none, the sample ends with the sync."""
    adapter = _QueuedAdapter(FakeClock(), tail_s=5e-4)
    replayer = _replayer(_mlp_step(), adapter, skip=[2])
    replayer.probe()
    assert replayer._last_tensor_result() == 1
    only_stand_ins = _replayer(_mlp_step(), _QueuedAdapter(FakeClock(), tail_s=5e-4),
                               skip=[0, 1, 2])
    only_stand_ins.probe()
    assert only_stand_ins._last_tensor_result() is None
    assert only_stand_ins.time_step_to_host(1) == pytest.approx([0.0], abs=3 * TICK)


@pytest.mark.parametrize("blocking, used", [(False, "time_step_to_host"), (True, "time_step")])
def test_paired_replays_time_a_queued_launch_to_the_host_and_a_blocking_one_synced(
        monkeypatch, blocking, used):
    from opbench.model.replay import executor
    from opbench.model.replay.paired import serve_paired
    from opbench.runner import ipc

    called = []
    for name in ("time_step", "time_step_to_host"):
        monkeypatch.setattr(executor.Replayer, name,
                            lambda self, samples, name=name: called.append(name) or [1e-3])
    adapter = _QueuedAdapter(FakeClock(), tail_s=5e-4, blocking=blocking)
    request = ipc.ReplayPaired(framework="torch", programs=(_mlp_step(), _mlp_step()),
                               fingerprints=False, rounds=2, samples=1, warmup_runs=0,
                               warmup_s=0.0)
    result = serve_paired(request, adapter, ApiMapping([]))
    assert called == [used] * 4
    assert [len(s) for s in result.samples_s] == [2, 2]


@pytest.mark.parametrize("blocking, expected_tail", [(False, 0.0), (True, 5e-4)])
def test_the_projections_step_ends_as_the_scripts_step_in_its_launch_mode(blocking,
                                                                          expected_tail):
    """The replay's step samples (the projection, replay/main.py) and the suggestions'
    (paired.py) share time_script_steps: a queued launch ends with the result read back,
    a blocking one with the sync, whose tail it then includes."""
    adapter = _QueuedAdapter(FakeClock(), tail_s=5e-4, blocking=blocking)
    replayer = _replayer(_mlp_step(), adapter)
    replayer.probe()
    assert replayer.time_script_steps(2) == pytest.approx([STEP_COST + expected_tail] * 2,
                                                          abs=3 * TICK)

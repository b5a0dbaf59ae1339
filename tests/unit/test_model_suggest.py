"""Measured affinity suggestions (opbench/model/affinity/) on synthetic steps, no framework:
each family is found from the data flow (and not where an intermediate is read elsewhere),
the swapped program's Refs are rewired, a swap that changes outputs is dropped and listed
with its difference, a replacement that does not run is listed, and the saving's interval
decides faster / slower / no measurable gain (fake replay processes)."""
from __future__ import annotations

import json
from pathlib import Path
import math

import jsonschema
import pytest

from opbench.runner import ipc
from opbench.model.affinity.measure import (DID_NOT_RUN, OUTPUTS_DIFFER, SuggestSettings,
                                            measure_one, outputs_check, sort_rows)
from opbench.model.affinity.patterns import ROUTE_FAMILY, New
from opbench.model.affinity.run import candidates_of
from opbench.model.affinity.saving import (FASTER, NO_GAIN, RESOLUTION_SHARE, SLOWER,
                                           saving_from, verdict_of)
from opbench.model.affinity.swap import swapped_step
from opbench.model.impact.record import ModelRecord, SuggestionRow, model_schema
from opbench.model.program import Call, Ext, ExternalTensor, Lit, Ref, Seq, Site
from opbench.model.replay.executor import CallStatus
from opbench.model.steady import StepProgram
from opbench.report.suggestions import CSV_COLUMNS, csv_text

T = "torch.Tensor."
F = "torch.nn.functional."


def tensor(shape=(4, 8), dtype="float32"):
    return ("tensor", tuple(shape), dtype)


class StepBuilder:
    """Calls appended one by one; each returns the Ref of its output. Externals: x (4x8),
    w (8x6), b (6,), mask (4x8 bool), wt (6x8)."""

    def __init__(self, framework="torch"):
        self.framework = framework
        self.calls: list[Call] = []
        self.externals = (ExternalTensor(0, (4, 8), "float32", "input"),
                          ExternalTensor(1, (8, 6), "float32", "parameter"),
                          ExternalTensor(2, (6,), "float32", "parameter"),
                          ExternalTensor(3, (4, 8), "bool", "input"),
                          ExternalTensor(4, (6, 8), "float32", "parameter"))

    def __call__(self, api, *args, kwargs=(), out=None, line=None, kind=None):
        index = len(self.calls)
        site = Site("model.py", line or 10 + index, line or 10 + index)
        self.calls.append(Call(index=index, framework=self.framework, api=api,
                               kind=kind or ("tensor_method" if ".Tensor." in api
                                             else "function"),
                               replay_api=api, args=tuple(args), kwargs=tuple(kwargs),
                               outputs=out or tensor(), duration_ns=1000, start_ns=0,
                               site=site))
        return Ref(index)

    def step(self) -> StepProgram:
        n = len(self.calls)
        return StepProgram(self.framework, tuple(self.calls), self.externals, 3,
                           (1000,) * n, (1000 * n,) * 3, tuple(range(n)))


X, W, B, MASK, WT = Ext(0), Ext(1), Ext(2), Ext(3), Ext(4)


def families(step):
    return [(c.family, c.calls) for c in candidates_of(step)]


def test_silu_composed_is_found_with_its_site_and_calls():
    s = StepBuilder()
    sig = s("torch.sigmoid", X, line=20)
    y = s(T + "__mul__", X, sig, line=20)
    s("torch.relu", y, line=21)
    found = candidates_of(s.step())
    assert [(c.family, c.calls, c.affinity_api) for c in found] == [
        ("torch.silu_formula", 2, F + "silu")]
    assert (found[0].site.file, found[0].site.first_line) == ("model.py", 20)


def test_gelu_tanh_and_erf_formulas_are_found():
    s = StepBuilder()
    half = s(T + "__rmul__", X, Lit(0.5), line=5)
    cube = s("torch.pow", X, Lit(3), line=5)
    small = s(T + "__rmul__", cube, Lit(0.044715), line=5)
    inner = s(T + "__add__", X, small, line=5)
    scaled = s(T + "__rmul__", inner, Lit(math.sqrt(2 / math.pi)), line=5)
    th = s("torch.tanh", scaled, line=5)
    one = s(T + "__radd__", th, Lit(1.0), line=5)
    g = s(T + "__mul__", half, one, line=5)
    d = s(T + "__truediv__", g, Lit(math.sqrt(2.0)), line=6)
    e = s("torch.erf", d, line=6)
    e1 = s(T + "__radd__", e, Lit(1.0), line=6)
    h = s(T + "__mul__", g, e1, line=6)
    s(T + "__rmul__", h, Lit(0.5), line=6)
    found = candidates_of(s.step())
    assert [(c.family, c.calls) for c in found] == [("torch.gelu_formula", 8),
                                                   ("torch.gelu_formula", 5)]
    assert "approximate='tanh'" in found[0].replacement
    assert "approximate" not in found[1].replacement


def test_softplus_softmax_and_log_softmax_are_found():
    s = StepBuilder()
    e = s("torch.exp", X, line=1)
    s("torch.log", s(T + "__radd__", e, Lit(1), line=1), line=1)
    e2 = s("torch.exp", X, line=2)
    total = s(T + "sum", e2, kwargs=(("dim", Lit(-1)), ("keepdim", Lit(True))), line=2)
    s(T + "__truediv__", e2, total, line=2)
    sm = s("torch.softmax", X, Lit(-1), line=3)
    s("torch.log", sm, line=3)
    assert families(s.step()) == [("torch.softplus_formula", 3),
                                  ("torch.softmax_composed", 3),
                                  ("torch.log_softmax_composed", 2)]


def test_a_softmax_summed_without_keepdim_is_not_a_softmax():
    s = StepBuilder()
    e = s("torch.exp", X)
    total = s(T + "sum", e, kwargs=(("dim", Lit(-1)),))
    s(T + "__truediv__", e, total)
    assert families(s.step()) == []


def test_layer_norm_and_rms_norm_composed_are_found():
    s = StepBuilder()
    mean = s(T + "mean", X, Lit(-1), kwargs=(("keepdim", Lit(True)),), line=1)
    centred = s(T + "__sub__", X, mean, line=1)
    var = s(T + "var", X, Lit(-1), kwargs=(("keepdim", Lit(True)),), line=1)
    root = s("torch.sqrt", s(T + "__add__", var, Lit(1e-5), line=1), line=1)
    s(T + "__truediv__", centred, root, line=1)
    sq = s(T + "pow", X, Lit(2), line=2)
    ms = s(T + "mean", sq, Lit(-1), kwargs=(("keepdim", Lit(True)),), line=2)
    r = s("torch.rsqrt", s(T + "__add__", ms, Lit(1e-6), line=2), line=2)
    s(T + "__mul__", X, r, line=2)
    found = candidates_of(s.step())
    assert [(c.family, c.calls) for c in found] == [("torch.layer_norm_composed", 6),
                                                   ("torch.rms_norm_composed", 5)]
    assert "eps=1e-06" in found[1].replacement


def test_linear_from_matmul_plus_bias_and_from_a_transposed_weight():
    s = StepBuilder()
    m = s("torch.matmul", X, W, out=tensor((4, 6)), line=1)
    s(T + "__add__", m, B, out=tensor((4, 6)), line=1)
    t = s(T + "t", WT, out=tensor((8, 6)), line=2)
    m2 = s(T + "__matmul__", X, t, out=tensor((4, 6)), line=2)
    s(T + "__add__", B, m2, out=tensor((4, 6)), line=2)
    t3 = s(T + "t", WT, out=tensor((8, 6)), line=3)
    s(T + "__matmul__", X, t3, out=tensor((4, 6)), line=3)
    found = candidates_of(s.step())
    assert [(c.family, c.calls) for c in found] == [("torch.linear_composed", 2),
                                                   ("torch.linear_composed", 3),
                                                   ("torch.transpose_matmul", 2)]
    # matmul by an untransposed weight: the swap transposes it (a view) and calls linear
    assert [n.api for n in found[0].swaps[0].new_calls] == [T + "t", F + "linear"]
    assert [n.api for n in found[1].swaps[0].new_calls] == [F + "linear"]
    assert found[1].swaps[0].new_calls[0].args == (X, WT, B)


@pytest.mark.parametrize("prop", ["T", "mT"])
def test_linear_through_a_recorded_transposing_property_reads_the_weight_itself(prop):
    # `h @ w.T + b`: the capture records the property read (torch.Tensor.T) on the weight; the
    # swap takes it in and is the fixed script's F.linear(h, w, b), not F.linear(h, w.T.t(), b)
    s = StepBuilder()
    t = s(T + prop, WT, out=tensor((8, 6)), line=45)
    m = s(T + "__matmul__", X, t, out=tensor((4, 6)), line=45)
    s(T + "__add__", m, B, out=tensor((4, 6)), line=45)
    found = candidates_of(s.step())
    assert [(c.family, c.calls) for c in found] == [("torch.linear_composed", 3)]
    swap = found[0].swaps[0]
    assert swap.removed == (0, 1, 2)
    assert [(n.api, n.args) for n in swap.new_calls] == [(F + "linear", (X, WT, B))]


def test_a_transposing_property_of_a_3d_tensor_is_not_taken_for_a_transpose():
    # .T of a 3-D tensor reverses all three dimensions: not the weight's .t()
    s = StepBuilder()
    cube = s("torch.reshape", WT, Seq("tuple", (Lit(2), Lit(3), Lit(8))), out=tensor((2, 3, 8)))
    t = s(T + "T", cube, out=tensor((8, 3, 2)))
    s(T + "__matmul__", X, t, out=tensor((4, 6)))
    assert families(s.step()) == []


def test_a_read_back_float_a_later_call_reads_is_swapped_for_its_tensor():
    """`h = h / h.abs().max().item()`: the capture linked the division's float to the
    `.item()` (capture/synced_float.py); the swap removes the sync and the division reads the
    tensor it read back, as the fixed script's `h / h.abs().max()`."""
    s = StepBuilder()
    h = s("torch.relu", X, line=1)
    peak = s(T + "max", s(T + "abs", h, line=2), out=tensor(()), line=2)
    value = s(T + "item", peak, out=("other", "float"), line=2)
    s(T + "__truediv__", h, value, line=3)
    found = candidates_of(s.step())
    assert [(c.family, c.calls) for c in found] == [("torch.host_sync_in_loop", 1)]
    swap = found[0].swaps[0]
    assert swap.removed == (3,) and swap.new_calls == () and swap.reads_instead == peak
    assert "pass the tensor" in found[0].replacement
    swapped = swapped_step(s.step(), found[0]).step
    assert [c.api for c in swapped.calls] == ["torch.relu", T + "abs", T + "max",
                                              T + "__truediv__"]
    assert swapped.calls[3].args == (Ref(0), Ref(2))      # the tensor, renumbered


def test_a_read_back_of_an_external_goes_to_the_external_and_asnumpy_is_not_rewired():
    s = StepBuilder()
    value = s(T + "item", X, out=("other", "float"), line=1)
    s(T + "__mul__", X, value, line=2)
    found = candidates_of(s.step())
    assert found[0].swaps[0].reads_instead == X
    assert swapped_step(s.step(), found[0]).step.calls[0].args == (X, X)
    # a numpy array read back and used (MindSpore's float(t.asnumpy()) is made outside any
    # call; a call reading the array itself would take an array, not the tensor)
    m = StepBuilder("mindspore")
    array = m("mindspore.Tensor.asnumpy", X, out=("other", "ndarray"), line=1)
    m("mindspore.Tensor.__mul__", X, array, line=2)
    assert [c.family for c in candidates_of(m.step())] == []


def test_masked_write_where_and_a_host_sync_are_found():
    s = StepBuilder()
    z = s("torch.zeros_like", X, line=1)
    y = s("torch.where", MASK, z, X, line=1)
    loss = s(T + "mean", y, out=tensor(()), line=2)
    s(T + "item", loss, out=("other", "float"), line=3)
    found = candidates_of(s.step())
    assert [(c.family, c.calls) for c in found] == [("torch.masked_write_where", 2),
                                                   ("torch.host_sync_in_loop", 1)]
    assert found[0].swaps[0].new_calls[0].args == (X, MASK, Lit(0.0))
    assert found[1].swaps[0].new_calls == ()


def test_a_mindspore_route_swap_and_mindspore_patterns():
    s = StepBuilder("mindspore")
    sig = s("mindspore.ops.sigmoid", X, line=1)
    y = s("mindspore.Tensor.__mul__", X, sig, line=1)
    s("mindspore.ops.relu", y, line=2)
    s("mindspore.mint.nn.functional.relu", y, line=3)
    s("mindspore.ops.relu", y, kwargs=(("x", Lit(1)),), line=4)   # keywords: not swapped
    found = candidates_of(s.step())
    assert [(c.family, c.affinity_api) for c in found] == [
        ("mindspore.silu_formula", "mindspore.mint.nn.functional.silu"),
        (ROUTE_FAMILY, "mindspore.mint.nn.functional.relu"),
        (ROUTE_FAMILY, "mindspore.ops.relu")]


def test_an_intermediate_read_outside_the_pattern_stops_the_match():
    s = StepBuilder()
    sig = s("torch.sigmoid", X)
    s(T + "__mul__", X, sig)
    s("torch.relu", sig)           # the sigmoid is needed on its own: no silu swap
    assert families(s.step()) == []


def test_the_occurrences_at_one_site_are_one_candidate():
    s = StepBuilder()
    for _ in range(3):
        sig = s("torch.sigmoid", X, line=7)
        s(T + "__mul__", X, sig, line=7)
    found = candidates_of(s.step())
    assert [(c.family, c.calls, len(c.swaps)) for c in found] == [
        ("torch.silu_formula", 6, 3)]


def test_the_swapped_program_rewires_refs_and_renumbers():
    s = StepBuilder()
    first = s("torch.relu", X)
    sig = s("torch.sigmoid", first)
    y = s(T + "__mul__", first, sig)
    s(T + "__add__", y, first)
    s(T + "sum", y, kwargs=(("dim", Lit(0)),))
    step = s.step()
    [candidate] = candidates_of(step)
    swapped = swapped_step(step, candidate)
    apis = [c.api for c in swapped.step.calls]
    assert apis == ["torch.relu", F + "silu", T + "__add__", T + "sum"]
    assert swapped.step.calls[1].args == (Ref(0),)
    assert swapped.step.calls[2].args == (Ref(1), Ref(0))
    assert swapped.step.calls[3].args == (Ref(1),)
    assert [c.index for c in swapped.step.calls] == [0, 1, 2, 3]
    assert swapped.roots == {2: 1} and swapped.kept == {0: 0, 3: 2, 4: 3}
    assert swapped.step.calls[1].site == step.calls[2].site


def test_a_transposed_helper_is_referenced_by_the_replacement():
    s = StepBuilder()
    m = s("torch.matmul", X, W, out=tensor((4, 6)))
    out = s(T + "__add__", m, B, out=tensor((4, 6)))
    s("torch.relu", out, out=tensor((4, 6)))
    step = s.step()
    swapped = swapped_step(step, candidates_of(step)[0]).step
    assert [c.api for c in swapped.calls] == [T + "t", F + "linear", "torch.relu"]
    assert swapped.calls[0].outputs == ("tensor", (6, 8), "float32")
    assert swapped.calls[1].args == (X, Ref(0), B)
    assert swapped.calls[2].args == (Ref(1),)


# -- measuring, with a fake replay process ----------------------------------------------------
def _print(value: float, n: int = 4) -> dict:
    return {"shape": [n], "n": n, "mean": value, "mean_abs": abs(value),
            "points": [value] * n}


class FakeReplay:
    """Answers paired requests: fingerprints per program, and step samples (the original
    `now` seconds, the swapped `after`) per round."""

    def __init__(self, now, after, differ=0.0, fail=None):
        self.now, self.after, self.differ, self.fail = now, after, differ, fail
        self.requests = []

    def __call__(self, request):
        self.requests.append(request)
        steps = request.programs
        prints = [[_print(1.0) for _ in steps[0].calls],
                  [_print(1.0 + self.differ) for _ in steps[1].calls]]
        status = [[CallStatus(i, c.api, True) for i, c in enumerate(st.calls)]
                  for st in steps]
        if self.fail:
            status[1][1] = CallStatus(1, steps[1].calls[1].api, False, problem=self.fail)
        rounds = request.rounds
        n = len(self.requests)
        return ipc.PairedResult(
            framework=request.framework, launch=request.launch or "queued", pid=1,
            status=tuple(map(tuple, status)), fingerprints=tuple(prints),
            samples_s=(tuple((self.now + 1e-6 * n,) * 5 for _ in range(rounds)),
                       tuple((self.after + 1e-6 * n * (r % 2),) * 5 for r in range(rounds))))


def _silu_step():
    s = StepBuilder()
    sig = s("torch.sigmoid", X, line=3)
    y = s(T + "__mul__", X, sig, line=3)
    s("torch.relu", y, line=4)
    return s.step()


SETTINGS = SuggestSettings(framework="torch", launch="blocking", processes=3, rounds=4)


def test_a_faster_swap_is_timed_in_every_process_interleaved_and_called_faster():
    step = _silu_step()
    replay = FakeReplay(now=0.010, after=0.008)
    row = measure_one(step, candidates_of(step)[0], SETTINGS, replay)
    assert len(replay.requests) == 3
    assert all(isinstance(r, ipc.ReplayPaired) and r.launch == "blocking"
               for r in replay.requests)
    assert replay.requests[0].fingerprints and not replay.requests[1].fingerprints
    # every timed process goes on past its rounds until they took the settings' seconds
    assert all(r.rounds == 4 and r.min_timed_s == SETTINGS.seconds > 0
               for r in replay.requests)
    assert row.verdict == FASTER and row.outputs_equal is True
    assert row.saving_s["estimate"] == pytest.approx(0.002, rel=0.01)
    assert row.saving_s["ci_low"] > 0
    assert row.share == pytest.approx(0.2, rel=0.01)
    assert (row.file, row.start_line, row.end_line, row.calls) == ("model.py", 3, 3, 2)


def test_a_swap_that_changes_the_outputs_is_dropped_and_listed_with_its_difference():
    step = _silu_step()
    replay = FakeReplay(now=0.010, after=0.001, differ=0.5)
    row = measure_one(step, candidates_of(step)[0], SETTINGS, replay)
    assert row.verdict == OUTPUTS_DIFFER and row.outputs_equal is False
    # the model's one output check (impact/output_check.compare) says what differs
    assert "differ by up to 0.33 (relative)" in row.detail
    assert row.saving_s is None and len(replay.requests) == 1


def test_a_replacement_that_does_not_run_is_listed_not_timed():
    step = _silu_step()
    replay = FakeReplay(now=0.010, after=0.001, fail="AttributeError: no silu")
    row = measure_one(step, candidates_of(step)[0], SETTINGS, replay)
    assert row.verdict == DID_NOT_RUN and "no silu" in row.detail
    assert row.saving_s is None


def test_the_interval_decides_faster_slower_or_no_measurable_gain():
    def processes(pairs):
        return [([[a] * 5, [a] * 5], [[b] * 5, [b] * 5]) for a, b in pairs]

    faster = saving_from(processes([(10.0, 8.0), (11.0, 9.1), (10.5, 8.4)]))
    assert verdict_of(faster) == FASTER and faster.units == 3
    assert faster.time_now_s == pytest.approx(10.5)
    slower = saving_from(processes([(8.0, 10.0), (9.1, 11.0), (8.4, 10.5)]))
    assert verdict_of(slower) == SLOWER
    noise = saving_from(processes([(10.0, 8.0), (10.0, 12.0), (10.0, 10.5)]))
    assert verdict_of(noise) == NO_GAIN and noise.ci_low < 0 < noise.ci_high


def test_a_saving_below_the_replays_resolution_is_no_measurable_gain():
    # the torch optimizer loop's claim of 2026-11-28: 0.010 ms [0.0005, 0.019] on a 1.2 ms
    # step, where the script pair measured the swap 0.006 ms slower
    def processes(saved):
        return [([[1.2e-3] * 5] * 2, [[1.2e-3 - s] * 5] * 2) for s in saved]

    tiny = saving_from(processes([0.008e-3, 0.010e-3, 0.012e-3, 0.009e-3, 0.011e-3, 0.010e-3]))
    assert tiny.ci_low > 0 and tiny.estimate < RESOLUTION_SHARE * tiny.time_now_s
    assert verdict_of(tiny) == NO_GAIN
    clear = saving_from(processes([0.020e-3, 0.025e-3, 0.030e-3]))   # ~2% of the step
    assert verdict_of(clear) == FASTER
    assert verdict_of(saving_from(processes([-0.008e-3, -0.010e-3, -0.012e-3, -0.009e-3]))) == NO_GAIN
    assert verdict_of(saving_from(processes([-0.020e-3, -0.025e-3, -0.030e-3]))) == SLOWER


def test_one_process_uses_its_rounds_and_one_round_has_no_interval():
    one = saving_from([([[10.0] * 3, [10.2] * 3, [9.9] * 3], [[9.0] * 3, [9.1] * 3,
                                                            [8.8] * 3])])
    assert one.units == 3 and verdict_of(one) == FASTER
    single = saving_from([([[10.0]], [[9.0]])])
    assert math.isinf(single.ci_low) and verdict_of(single) == NO_GAIN


def test_a_positive_estimate_whose_interval_crosses_zero_is_not_a_suggestion():
    rows = [SuggestionRow("a.py", 1, 1, "pattern", "x", "y", "f", "", 2, NO_GAIN,
                          saving_s={"estimate": 5.0, "ci_low": -1.0, "ci_high": 11.0}),
            SuggestionRow("a.py", 2, 2, "pattern", "x", "y", "f", "", 2, FASTER,
                          saving_s={"estimate": 1.0, "ci_low": 0.5, "ci_high": 1.5}),
            SuggestionRow("a.py", 3, 3, "pattern", "x", "y", "f", "", 2, OUTPUTS_DIFFER)]
    assert [r.start_line for r in sort_rows(rows)] == [2, 1, 3]


# -- the record and the CSV ---------------------------------------------------------------------
def test_rows_round_trip_through_the_model_record_and_its_schema():
    step = _silu_step()
    row = measure_one(step, candidates_of(step)[0], SETTINGS, FakeReplay(0.010, 0.008))
    record = {"model": {"format": 1, "reference": "torch", "target": "mindspore",
                        "traced_framework": "torch", "traced_s": 1.0, "projected_s": {},
                        "coverage": 1.0, "apis": [], "region": {"rule": "markers", "steps": 3},
                        "suggestions": [row.to_json()]}}
    jsonschema.validate(json.loads(json.dumps(record)), model_schema())
    back = ModelRecord.from_json(json.loads(json.dumps(record)))
    assert back.suggestions == (row,)


def test_the_csv_starts_with_the_ascend_columns():
    step = _silu_step()
    row = measure_one(step, candidates_of(step)[0], SETTINGS, FakeReplay(0.010, 0.008))
    lines = csv_text([row]).splitlines()
    assert CSV_COLUMNS[:6] == ("File", "Start Line", "End Line", "Api Type",
                               "Api Call Name", "Affinity Api Name")
    assert lines[0].split(",")[:6] == list(CSV_COLUMNS[:6])
    assert lines[1].startswith("model.py,3,3,pattern,torch.sigmoid + torch.Tensor.__mul__,"
                               "torch.nn.functional.silu,2,")


def test_the_library_call_returns_the_rows_of_the_measured_suggestions(monkeypatch):
    import opbench.model
    from opbench.model.affinity import run

    seen = {}

    def fake(command, processes, **options):
        seen.update(command=command, processes=processes, **options)
        return ["row"]

    monkeypatch.setattr(run, "suggest", fake)
    assert opbench.model.suggest(["python", "t.py"], skip_first_calls=5) == ["row"]
    assert seen == {"command": ["python", "t.py"], "processes": 3, "skip_first_calls": 5}


def test_the_model_views_show_the_suggestions():
    import io

    from rich.console import Console

    from opbench.report.model import (render_model_html, render_model_markdown,
                                      render_model_terminal)

    step = _silu_step()
    row = measure_one(step, candidates_of(step)[0], SETTINGS, FakeReplay(0.010, 0.008))
    record = ModelRecord.from_json({
        "reference": "torch", "target": "mindspore", "traced_framework": "torch",
        "traced_s": 1.0, "projected_s": {}, "coverage": 1.0, "apis": [],
        "region": {"rule": "markers", "steps": 3}, "suggestions": [row.to_json()]})
    buffer = io.StringIO()
    render_model_terminal(record, Console(file=buffer, width=200))
    text = buffer.getvalue()
    assert "Suggestions" in text and "model.py:3" in text and "faster" in text
    assert "torch.nn.functional.silu" in render_model_markdown(record)
    assert 'id="suggestions"' in render_model_html(record)


# -- issue 34's pairs: the patterns their first comparison missed or swapped wrong -----------
def test_a_softmax_that_computes_exp_twice_is_found():
    # exp(x) / exp(x).sum(-1, keepdim=True): examples/affinity/torch/softmax_composed
    s = StepBuilder()
    top = s("torch.exp", X, line=5)
    bottom = s(T + "sum", s("torch.exp", X, line=5), Lit(-1),
               kwargs=(("keepdim", Lit(True)),), line=5)
    s(T + "__truediv__", top, bottom, line=5)
    [found] = candidates_of(s.step())
    assert (found.family, found.calls, found.affinity_api) == (
        "torch.softmax_composed", 4, "torch.softmax")
    assert found.swaps[0].new_calls[0].args == (X, Lit(-1))


def test_an_exp_of_another_value_in_the_denominator_is_not_a_softmax():
    s = StepBuilder()
    top = s("torch.exp", X, line=5)
    bottom = s(T + "sum", s("torch.exp", s("torch.relu", X)), Lit(-1),
               kwargs=(("keepdim", Lit(True)),), line=5)
    s(T + "__truediv__", top, bottom, line=5)
    assert families(s.step()) == []


def _layer_norm_step(framework, api_prefix, affine=True):
    s = StepBuilder(framework)
    gamma = s(api_prefix + "ones", Lit(8), out=tensor((8,)))
    beta = s(api_prefix + "zeros", Lit(8), out=tensor((8,)))
    mean = s(api_prefix + "mean", X, Lit(-1), kwargs=(("keepdim", Lit(True)),), line=3)
    var = s(api_prefix + "var", X, Lit(-1), kwargs=(("keepdim", Lit(True)),), line=3)
    normed = s(api_prefix + "div", s(api_prefix + "sub", X, mean, line=5),
               s(api_prefix + "sqrt", s(api_prefix + "add", var, Lit(1e-5), line=5), line=5),
               line=5)
    if affine:
        normed = s(api_prefix + "add", s(api_prefix + "mul", normed, gamma, line=5), beta,
                   line=5)
    s(api_prefix + "relu", normed, line=6)
    return s.step()


def test_a_layer_norms_gamma_and_beta_go_into_the_one_call():
    # (h - mean) / sqrt(var + eps) * gamma + beta -> F.layer_norm(h, (H,), gamma, beta, eps):
    # the fixed script saves the two elementwise calls too (the first comparison priced the
    # swap without them: 0.886 claimed against 3.559 ms measured)
    step = _layer_norm_step("torch", "torch.")
    [found] = [c for c in candidates_of(step) if c.family == "torch.layer_norm_composed"]
    assert (found.family, found.calls) == ("torch.layer_norm_composed", 8)
    assert (found.site.first_line, found.site.last_line) == (3, 5)   # mean and var: line 3
    [new] = found.swaps[0].new_calls
    assert new.api == F + "layer_norm"
    assert new.args[2:] == (Ref(0), Ref(1)) and new.kwargs == (("eps", Lit(1e-5)),)
    assert "gamma, beta" in found.replacement
    swapped = swapped_step(step, found).step
    assert [c.api for c in swapped.calls] == ["torch.ones", "torch.zeros", F + "layer_norm",
                                             "torch.relu"]
    assert swapped.calls[3].args == (Ref(2),)


def test_a_mindspore_layer_norm_is_the_primitive_and_its_first_output_is_read():
    # MindSpore 2.10 on CPU has no LayerNormExt kernel (mint's and ops.layer_norm fail): the
    # swap is ops.LayerNorm(-1, -1, eps)(x, gamma, beta)[0]
    step = _layer_norm_step("mindspore", "mindspore.ops.")
    [found] = [c for c in candidates_of(step) if c.family == "mindspore.layer_norm_composed"]
    [new] = found.swaps[0].new_calls
    assert (new.api, new.kind, new.args) == ("mindspore.ops.LayerNorm", "primitive",
                                             (X, Ref(0), Ref(1)))
    assert dict(new.init) == {"begin_norm_axis": -1, "begin_params_axis": -1,
                              "epsilon": 1e-5}
    swapped = swapped_step(step, found)
    norm = swapped.step.calls[2]
    assert norm.outputs[0] == "seq" and norm.outputs[1][0] == tensor()
    assert swapped.step.calls[3].args == (Ref(2, (0,)),)
    assert swapped.picks == {found.swaps[0].root: (0,)}
    # the output check compares the primitive's first output with the pattern's
    original = [_print(1.0) for _ in step.calls]
    after = [_print(1.0) for _ in swapped.step.calls]
    after[2] = [_print(1.0, 8), _print(5.0, 4), _print(7.0, 4)]
    original[found.swaps[0].root] = _print(1.0, 8)
    assert outputs_check(step, swapped, original, after) == (True, "")
    after[2] = [_print(2.0, 8), _print(5.0, 4), _print(7.0, 4)]
    equal, differs = outputs_check(step, swapped, original, after)
    assert not equal and "differ by up to" in differs


def test_a_mindspore_layer_norm_without_gamma_and_beta_is_left_alone():
    found = families(_layer_norm_step("mindspore", "mindspore.ops.", affine=False))
    assert found and all(family == ROUTE_FAMILY for family, _ in found)


# -- the script's step, not a layer's ----------------------------------------------------------
def _layered_program(steps=6, layers=4, fresh_input=False):
    """`steps` steps of `layers` identical layers (linear + relu), each layer with its own
    weight: the calls repeat per layer, the externals they read per step."""
    from opbench.model.program import Program
    calls, externals = [], []

    def ext(shape):
        externals.append(ExternalTensor(len(externals), shape, "float32", "parameter"))
        return Ext(len(externals) - 1)

    weights = [ext((8, 8)) for _ in range(layers)]
    x = ext((4, 8))
    for _ in range(steps):
        h = ext((4, 8)) if fresh_input else x
        for w in weights:
            for api, args in (("torch.nn.functional.linear", (h, w)), ("torch.relu", None)):
                index = len(calls)
                calls.append(Call(index=index, framework="torch", api=api, kind="function",
                                  replay_api=api, args=args or (Ref(index - 1),), kwargs=(),
                                  outputs=tensor(), duration_ns=1000, start_ns=0))
            h = Ref(len(calls) - 1)
    return Program("torch", "2", 1, "blocking", "cpu", "serial", tuple(calls),
                   tuple(externals))


def test_a_layer_period_is_widened_to_the_step_by_the_weights_each_layer_reads():
    from opbench.model.affinity.script_step import script_step_region
    from opbench.model.steady import find_region
    program = _layered_program()
    region = find_region(program)
    assert region.steps[0] == (2, 4)          # the automatic rule: one layer's two calls
    widened = script_step_region(program, region)
    assert widened.warmup == (0, 8)
    assert widened.steps == tuple((8 * k, 8 * k + 8) for k in range(1, 6))
    assert widened.excluded_calls == 8 and "step is 8 calls" in widened.note


def test_a_fresh_input_each_step_still_marks_the_step():
    from opbench.model.affinity.script_step import script_step_region
    from opbench.model.steady import find_region
    program = _layered_program(fresh_input=True)      # a new input tensor every step
    assert script_step_region(program, find_region(program)).steps[0] == (8, 16)


def test_a_period_the_externals_agree_with_is_kept():
    from opbench.model.affinity.script_step import script_step_region
    from opbench.model.steady import find_region
    program = _layered_program(layers=1)               # one layer: the layer is the step
    region = find_region(program)
    assert script_step_region(program, region) is region


# -- the unified diff of a mechanical swap -----------------------------------------------------
SOURCE = '''import torch
import torch.nn.functional as F

SCALE = 2.0


def step(x, w):
    h = x @ w
    y = h * torch.sigmoid(h)
    z = torch.relu(h * torch.sigmoid(h))
    p = torch.exp(h) / torch.exp(h).sum(-1, keepdim=True)
    return y, z, p
'''


def _diff_of(line, build):
    from opbench.model.affinity.graph import op_of
    from opbench.model.affinity.source_diff import mechanical_diff
    s = StepBuilder()
    build(s, line)
    step = s.step()
    [candidate] = candidates_of(step)
    root = step.calls[candidate.swaps[0].root]
    return mechanical_diff(candidate, op_of(root.api), SOURCE, "/somewhere/model.py")


def _silu(s, line):
    s(T + "__mul__", X, s("torch.sigmoid", X, line=line), line=line)


def test_a_one_line_formula_gets_a_diff_spelled_with_the_scripts_imports():
    diff = _diff_of(9, _silu)
    assert diff.startswith("--- a/model.py\n+++ b/model.py\n")
    assert "-    y = h * torch.sigmoid(h)\n+    y = F.silu(h)\n" in diff


def test_a_softmax_diff_keeps_its_dim():
    def softmax(s, line):
        top = s("torch.exp", X, line=line)
        bottom = s(T + "sum", s("torch.exp", X, line=line), Lit(-1),
                   kwargs=(("keepdim", Lit(True)),), line=line)
        s(T + "__truediv__", top, bottom, line=line)
    assert "+    p = torch.softmax(h, -1)\n" in _diff_of(11, softmax)


def test_a_formula_inside_a_larger_expression_gets_no_diff():
    assert _diff_of(10, _silu) == ""


def test_spelled_uses_the_longest_imported_module():
    from opbench.model.affinity.source_diff import spelled
    imports = {"torch": "torch", "torch.nn.functional": "F", "mindspore": "ms"}
    assert spelled("torch.nn.functional.gelu", imports) == "F.gelu"
    assert spelled("torch.softmax", imports) == "torch.softmax"
    assert spelled("mindspore.ops.softmax", imports) == "ms.ops.softmax"
    assert spelled("numpy.exp", imports) == "numpy.exp"


def test_the_gelu_pairs_formula_with_its_module_constant_gets_a_diff():
    # examples/affinity/torch/gelu_formula/naive.py:47 reads GELU_C, a module constant
    from opbench.model.affinity.patterns import Candidate, NewCall, Swap
    from opbench.model.affinity.source_diff import mechanical_diff
    path = Path(__file__).resolve().parents[2] / "examples/affinity/torch/gelu_formula/naive.py"
    gelu = NewCall(F + "gelu", (X,), (("approximate", Lit("tanh")),))
    candidate = Candidate("torch.gelu_formula", "torch", "mul + tanh", F + "gelu", "pattern",
                          Site(str(path), 47, 47), (Swap((0, 1, 2), 2, (gelu,)),), "")
    diff = mechanical_diff(candidate, "mul", path.read_text(encoding="utf-8"), str(path))
    assert "+        h = F.gelu(h, approximate='tanh')\n" in diff


# -- attention composed ---------------------------------------------------------------------
QKV = (2, 4, 16, 8)


class AttentionBuilder(StepBuilder):
    """Externals: q, k, v (2x4x16x8), an additive float mask (2x1x16x16), a bool keep mask
    (16x16)."""

    def __init__(self):
        super().__init__()
        self.externals = (ExternalTensor(0, QKV, "float32", "input"),
                          ExternalTensor(1, QKV, "float32", "input"),
                          ExternalTensor(2, QKV, "float32", "input"),
                          ExternalTensor(3, (2, 1, 16, 16), "float32", "input"),
                          ExternalTensor(4, (16, 16), "bool", "input"))


Q, K, V, ADD_MASK, KEEP = Ext(0), Ext(1), Ext(2), Ext(3), Ext(4)
SCORES = tensor((2, 4, 16, 16))


def _hf_eager_attention(s, dropout_training=False, weights_read=False):
    """transformers' eager_attention_forward: matmul(q, k.transpose(2, 3)) * scaling +
    mask, softmax(dim=-1, dtype=float32).to(q.dtype), dropout, matmul(p, v)."""
    kt = s(T + "transpose", K, Lit(2), Lit(3), out=tensor((2, 4, 8, 16)), line=30)
    scores = s("torch.matmul", Q, kt, out=SCORES, line=30)
    scaled = s(T + "__mul__", scores, Lit(0.35), out=SCORES, line=30)
    masked = s(T + "__add__", scaled, ADD_MASK, out=SCORES, line=32)
    probs = s(F + "softmax", masked, kwargs=(("dim", Lit(-1)),), out=SCORES, line=33)
    cast = s(T + "to", probs, out=SCORES, line=33)
    dropped = s(F + "dropout", cast, kwargs=(("p", Lit(0.1)), ("training",
                                                               Lit(dropout_training))),
                out=SCORES, line=34)
    out = s("torch.matmul", dropped, V, out=tensor(QKV), line=35)
    if weights_read:
        s(T + "sum", probs, out=tensor(()), line=36)
    s("torch.relu", out, out=tensor(QKV), line=37)


def test_transformers_eager_attention_is_one_sdpa_call_with_its_mask_and_scale():
    s = AttentionBuilder()
    _hf_eager_attention(s)
    found = [c for c in candidates_of(s.step()) if c.family == "torch.attention_composed"]
    assert len(found) == 1 and found[0].calls == 8
    assert (found[0].site.first_line, found[0].site.last_line) == (30, 35)
    (new,) = found[0].swaps[0].new_calls
    assert new.api == F + "scaled_dot_product_attention" and new.args == (Q, K, V)
    assert dict(new.kwargs) == {"attn_mask": ADD_MASK, "scale": Lit(0.35)}


def test_attention_weights_read_elsewhere_or_a_training_dropout_stop_the_match():
    for options in ({"weights_read": True}, {"dropout_training": True}):
        s = AttentionBuilder()
        _hf_eager_attention(s, **options)
        assert "torch.attention_composed" not in [f for f, _ in families(s.step())], options


def test_a_causal_masked_fill_of_an_inverted_keep_mask_passes_the_keep_mask_itself():
    """functional_attention_inference.py: (q @ k.transpose(-2, -1)) / sqrt(d),
    .masked_fill(~causal, -inf), F.softmax(dim=-1), @ v."""
    s = AttentionBuilder()
    kt = s(T + "transpose", K, Lit(-2), Lit(-1), out=tensor((2, 4, 8, 16)), line=29)
    scores = s(T + "__matmul__", Q, kt, out=SCORES, line=29)
    scaled = s(T + "__truediv__", scores, Lit(2.0), out=SCORES, line=29)
    dropped = s(T + "__invert__", KEEP, out=tensor((16, 16), "bool"), line=30)
    filled = s(T + "masked_fill", scaled, dropped, Lit(float("-inf")), out=SCORES, line=30)
    probs = s(F + "softmax", filled, kwargs=(("dim", Lit(-1)),), out=SCORES, line=31)
    s(T + "__matmul__", probs, V, out=tensor(QKV), line=32)
    (found,) = candidates_of(s.step())
    assert found.family == "torch.attention_composed" and found.calls == 7
    (new,) = found.swaps[0].new_calls
    assert dict(new.kwargs) == {"attn_mask": KEEP, "scale": Lit(0.5)}


def test_a_finite_fill_of_a_drop_mask_inverts_it_in_a_helper_call():
    s = AttentionBuilder()
    kt = s(T + "transpose", K, Lit(-1), Lit(-2), out=tensor((2, 4, 8, 16)))
    scores = s("torch.matmul", Q, kt, out=SCORES)
    filled = s(T + "masked_fill", scores, KEEP, Lit(-1e9), out=SCORES)
    probs = s("torch.softmax", filled, Lit(-1), out=SCORES)
    root = s("torch.matmul", probs, V, out=tensor(QKV))
    (found,) = candidates_of(s.step())
    helper, sdpa = found.swaps[0].new_calls
    assert helper.api == "torch.logical_not" and helper.args == (KEEP,)
    assert dict(sdpa.kwargs) == {"attn_mask": New(0), "scale": Lit(1.0)}
    swapped = swapped_step(s.step(), found).step
    assert [c.api for c in swapped.calls] == ["torch.logical_not",
                                              F + "scaled_dot_product_attention"]
    assert swapped.calls[0].outputs == ("tensor", (16, 16), "bool")
    assert dict(swapped.calls[1].kwargs)["attn_mask"] == Ref(0)
    assert swapped.calls[1].outputs == s.step().calls[root.call].outputs
    # a fill that leaves the position in (a small negative) is not a mask
    s2 = AttentionBuilder()
    kt = s2(T + "transpose", K, Lit(-1), Lit(-2), out=tensor((2, 4, 8, 16)))
    filled = s2(T + "masked_fill", s2("torch.matmul", Q, kt, out=SCORES), KEEP, Lit(-5.0),
                out=SCORES)
    s2("torch.matmul", s2("torch.softmax", filled, Lit(-1), out=SCORES), V, out=tensor(QKV))
    assert families(s2.step()) == []


def test_a_transpose_of_other_dimensions_is_not_k_transposed():
    s = AttentionBuilder()
    kt = s(T + "transpose", K, Lit(1), Lit(2), out=tensor((2, 16, 4, 8)))
    scores = s("torch.matmul", Q, kt, out=SCORES)
    s("torch.matmul", s("torch.softmax", scores, Lit(-1), out=SCORES), V, out=tensor(QKV))
    assert "torch.attention_composed" not in [f for f, _ in families(s.step())]

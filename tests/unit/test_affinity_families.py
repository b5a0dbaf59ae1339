"""The affinity families issue 34 names that `opbench suggest` measures since 2026-11-28
(a boolean-mask write `x[cond] = v`, a tensor made from constants every step) and the one
rule for "a transpose of the last two dims" the linear, transpose-matmul and attention
matchers share: each on a built StepGraph, framework-free."""
from __future__ import annotations

import pytest

from opbench.model.affinity.patterns import NewCall
from opbench.model.affinity.run import candidates_of
from opbench.model.affinity.swap import swapped_step
from opbench.model.program import Dtype, Ext, ExternalTensor, Lit, Ref, Seq

from test_model_suggest import B, MASK, W, WT, X, StepBuilder, T, F, families, tensor

NONE = ("none",)


# -- masked_write_index: x[cond] = v ---------------------------------------------------------
def _torch_masked_write(cond_shape=(4, 8), value=Lit(0.0)):
    s = StepBuilder()
    h = s("torch.tanh", X, line=48)
    small = s(T + "__lt__", s(T + "abs", h, line=49), Lit(0.1),
              out=tensor(cond_shape, "bool"), line=49)
    s(T + "__setitem__", h, small, value, out=NONE, line=49)
    s("torch.relu", h, line=50)          # torch's setitem returns nothing: h is read on
    return s.step()


def test_a_torch_boolean_mask_write_is_an_in_place_masked_fill_on_the_same_tensor():
    step = _torch_masked_write()
    [found] = candidates_of(step)
    assert (found.family, found.calls, found.affinity_api) == (
        "torch.masked_write_index", 1, "torch.Tensor.masked_fill_")
    assert (found.site.first_line, found.site.last_line) == (49, 49)
    assert found.swaps[0].new_calls == (
        NewCall("torch.Tensor.masked_fill_", (Ref(0), Ref(2), Lit(0.0)), kind="tensor_method"),)
    assert found.replacement == "x.masked_fill_(cond, 0.0)"
    swapped = swapped_step(step, found).step
    assert [c.api for c in swapped.calls] == ["torch.tanh", T + "abs", T + "__lt__",
                                             T + "masked_fill_", "torch.relu"]
    assert swapped.calls[3].args == (Ref(0), Ref(2), Lit(0.0))
    assert swapped.calls[4].args == (Ref(0),)         # the written tensor, as before


@pytest.mark.parametrize("cond_shape, value", [
    ((8,), Lit(0.0)),               # a mask of another shape selects rows: not a fill
    ((4, 8), Lit(True)),            # a bool is no fill value here
    ((4, 8), Lit("x")),
])
def test_a_mask_of_another_shape_or_a_value_that_is_no_number_is_left_alone(cond_shape, value):
    assert families(_torch_masked_write(cond_shape, value)) == []


def test_a_write_of_a_tensor_value_or_by_an_integer_index_is_left_alone():
    s = StepBuilder()
    h = s("torch.tanh", X)
    s(T + "__setitem__", h, MASK, s(T + "sum", h, out=tensor(())), out=NONE)
    s(T + "__setitem__", h, Lit(0), Lit(0.0), out=NONE)
    assert families(s.step()) == []


def _ms_masked_write(read_x_after=False):
    s = StepBuilder("mindspore")
    h = s("mindspore.ops.tanh", X, line=51)
    small = s("mindspore.Tensor.__lt__", s("mindspore.Tensor.abs", h, line=52), Lit(0.1),
              out=tensor((4, 8), "bool"), line=52)
    written = s("mindspore.Tensor.__setitem__", h, small, Lit(0.0), line=52)
    s("mindspore.ops.relu", h if read_x_after else written, line=53)
    return s.step()


def test_a_mindspore_boolean_mask_write_is_ops_masked_fill_standing_for_its_output():
    # MindSpore's __setitem__ returns the written tensor, and the capture reads it from there
    # on (seen on a captured `h[cond] = 0.0`: the next call reads the setitem's Ref)
    step = _ms_masked_write()
    found = [c for c in candidates_of(step) if c.family == "mindspore.masked_write_index"]
    assert len(found) == 1 and found[0].calls == 1
    assert found[0].swaps[0].new_calls == (
        NewCall("mindspore.ops.masked_fill", (Ref(0), Ref(2), Lit(0.0))),)
    assert found[0].replacement == "x = mindspore.ops.masked_fill(x, cond, 0.0)"
    swapped = swapped_step(step, found[0]).step
    assert swapped.calls[3].api == "mindspore.ops.masked_fill"
    assert swapped.calls[4].args == (Ref(3),)


def test_a_mindspore_write_whose_tensor_is_read_itself_afterwards_is_left_alone():
    # the out-of-place fill would leave that read with the unwritten tensor
    found = [c.family for c in candidates_of(_ms_masked_write(read_x_after=True))]
    assert "mindspore.masked_write_index" not in found


# -- one rule for a transpose of the last two dims --------------------------------------------
def _linear_through(api, *args, weight=WT):
    """x @ transpose(weight) + b, the transpose written as `api(weight, *args)`."""
    s = StepBuilder()
    t = s(api, weight, *args, out=tensor((8, 6)), line=45)
    m = s(T + "__matmul__", X, t, out=tensor((4, 6)), line=45)
    s(T + "__add__", m, B, out=tensor((4, 6)), line=45)
    return s.step()


@pytest.mark.parametrize("api, args", [
    (T + "transpose", (Lit(0), Lit(1))),      # refused before: read as an identity permute
    (T + "transpose", (Lit(1), Lit(0))),
    (T + "transpose", (Lit(-2), Lit(-1))),
    (T + "T", ()),
    (T + "t", ()),
    (T + "permute", (Lit(1), Lit(0))),
    (T + "permute", (Seq("tuple", (Lit(1), Lit(0))),)),
    ("mindspore.ops.transpose", (Seq("tuple", (Lit(1), Lit(0))),)),
])
def test_each_spelling_of_a_2d_transpose_is_taken_into_the_linear(api, args):
    [found] = candidates_of(_linear_through(api, *args))
    assert (found.family, found.calls) == ("torch.linear_composed", 3)
    assert [(n.api, n.args) for n in found.swaps[0].new_calls] == [(F + "linear", (X, WT, B))]


@pytest.mark.parametrize("api, args", [
    (T + "permute", (Lit(0), Lit(1))),                        # the identity permute
    (T + "permute", (Seq("tuple", (Lit(0), Lit(1))),)),
    (T + "transpose", (Lit(0), Lit(0))),
])
def test_an_identity_permute_is_no_transpose(api, args):
    # W (8x6) itself reaches the matmul: the linear swap transposes it first (a helper
    # call), where a transposed weight is taken in whole
    [found] = candidates_of(_linear_through(api, *args, weight=W))
    assert found.family == "torch.linear_composed" and found.calls == 2
    assert [n.api for n in found.swaps[0].new_calls] == [T + "t", F + "linear"]


def test_the_transpose_matmul_and_attention_matchers_share_the_rule():
    from opbench.model.affinity.graph import StepGraph
    from opbench.model.affinity.patterns import _last_two_swapped
    s = StepBuilder()
    cube = ExternalTensor(5, (2, 8, 6), "float32", "input")
    s.externals = (*s.externals, cube)
    calls = [s(T + "transpose", Ext(5), Lit(1), Lit(2), out=tensor((2, 6, 8))),
             s(T + "transpose", Ext(5), Lit(0), Lit(1), out=tensor((8, 2, 6))),
             s(T + "permute", Ext(5), Lit(0), Lit(2), Lit(1), out=tensor((2, 6, 8))),
             s(T + "permute", Ext(5), Lit(1), Lit(0), Lit(2), out=tensor((8, 2, 6))),
             s(T + "mT", Ext(5), out=tensor((2, 6, 8))),
             s(T + "T", Ext(5), out=tensor((6, 8, 2)))]
    g = StepGraph.of(s.step())
    assert [_last_two_swapped(g, c.call, 3) for c in calls] == [True, False, True, False,
                                                               True, False]
    # the transpose-matmul matcher: torch.matmul(x, w.transpose(0, 1)) -> F.linear(x, w)
    s2 = StepBuilder()
    t = s2(T + "transpose", WT, Lit(0), Lit(1), out=tensor((8, 6)))
    s2("torch.matmul", X, t, out=tensor((4, 6)))
    assert families(s2.step()) == [("torch.transpose_matmul", 2)]


# -- tensor_creation_in_loop: a tensor made from constants every step --------------------------
def _reading(s, created, line):
    return s(T + "__mul__", X, created, line=line)


def test_tensors_made_from_constants_each_step_are_made_once_with_their_values():
    s = StepBuilder()
    _reading(s, s("torch.tensor", Seq("list", (Lit(0.5), Lit(2.0))), out=tensor((2,)),
                  line=20), 20)
    _reading(s, s("torch.arange", Lit(2), Lit(10), out=tensor((8,), "int64"), line=21), 21)
    _reading(s, s("torch.ones", Lit(4), Lit(8), kwargs=(("dtype", Dtype("float32")),),
                  line=22), 22)
    _reading(s, s("torch.full", Seq("tuple", (Lit(2),)), Lit(0.25), out=tensor((2,)),
                  line=23), 23)
    found = candidates_of(s.step())
    assert [(c.family, c.calls, c.site.first_line) for c in found] == [
        ("torch.tensor_creation_in_loop", 1, line) for line in (20, 21, 22, 23)]
    made = [c.swaps[0].made_once for c in found]
    assert [(m.shape, m.dtype) for m in made] == [((2,), "float32"), ((8,), "int64"),
                                                  ((4, 8), "float32"), ((2,), "float32")]
    assert made[0].values == (0.5, 2.0) and made[1].values == tuple(range(2, 10))
    assert made[2].values == (1.0,) * 32 and made[3].values == (0.25, 0.25)
    assert all(c.swaps[0].new_calls == () for c in found)
    assert found[0].affinity_api == "(create once before the loop, or on the device)"
    assert found[0].replacement.startswith(
        "create it once before the loop: t = torch.tensor([0.5, 2.0])")
    assert "torch.ones(4, 8, dtype=torch.float32)" in found[2].replacement


def test_the_swapped_step_reads_the_tensor_made_once_as_an_external():
    s = StepBuilder()
    for _ in range(2):                      # one line inside a layer loop: two occurrences
        made = s("torch.arange", Lit(8), out=tensor((8,), "int64"), line=30)
        _reading(s, made, 31)
    step = s.step()
    [found] = candidates_of(step)
    assert found.calls == 2 and len(found.swaps) == 2
    swapped = swapped_step(step, found)
    assert [c.api for c in swapped.step.calls] == [T + "__mul__"] * 2
    # one external for the one tensor the fixed script makes, with its values
    [ext] = swapped.step.externals[len(step.externals):]
    assert (ext.id, ext.shape, ext.dtype, ext.values) == (
        len(step.externals), (8,), "int64", tuple(range(8)))
    assert [c.args for c in swapped.step.calls] == [(X, Ext(ext.id))] * 2
    assert swapped.roots == {0: None, 2: None}


@pytest.mark.parametrize("build", [
    lambda s: s("torch.zeros_like", X),                               # reads a step value
    lambda s: s("torch.ones", Lit(4), Lit(8), kwargs=(("requires_grad", Lit(True)),)),
    lambda s: s("torch.randn", Lit(4), Lit(8)),                       # not the same each step
    lambda s: s("torch.zeros", Lit(512), Lit(512), out=tensor((512, 512))),   # too large
])
def test_a_creation_that_reads_a_tensor_draws_takes_a_gradient_or_is_large_is_left_alone(build):
    s = StepBuilder()
    _reading(s, build(s), 40)
    assert "torch.tensor_creation_in_loop" not in [f for f, _ in families(s.step())]


@pytest.mark.parametrize("write", [T + "add_", T + "__setitem__"])
def test_a_created_tensor_written_in_the_step_is_left_alone(write):
    # a buffer filled each step is not the same tensor every step
    s = StepBuilder()
    buffer = s("torch.zeros", Lit(4), Lit(8))
    s(write, buffer, MASK, Lit(1.0), out=("none",))
    _reading(s, buffer, 41)
    assert "torch.tensor_creation_in_loop" not in [f for f, _ in families(s.step())]


def test_mindspore_creations_from_constants_are_made_once():
    s = StepBuilder("mindspore")
    shape = Seq("tuple", (Lit(4), Lit(8)))
    s("mindspore.Tensor.__mul__", X, s("mindspore.ops.fill", Dtype("float32"), shape,
                                       Lit(1.5), line=50), line=50)
    s("mindspore.Tensor.__add__", X, s("mindspore.mint.ones", shape, line=51), line=51)
    s("mindspore.Tensor.__add__", X, s("mindspore.ops.arange", Lit(0), Lit(8), Lit(2),
                                       out=tensor((4,), "int64"), line=52), line=52)
    found = [c for c in candidates_of(s.step())
             if c.family == "mindspore.tensor_creation_in_loop"]
    assert [c.swaps[0].made_once.values for c in found] == [(1.5,) * 32, (1.0,) * 32,
                                                           (0, 2, 4, 6)]
    assert found[0].affinity_api == "(create once before the loop)"
    assert "mindspore.ops.fill(mindspore.float32, (4, 8), 1.5)" in found[0].replacement


def test_the_replay_makes_a_float_external_with_the_values_it_holds():
    from opbench.model.replay.executor import external_array
    made = external_array(ExternalTensor(9, (2, 2), "float32", "input", values=(0.5, 2.0,
                                                                                 -1.0, 3.0)))
    assert made.tolist() == [[0.5, 2.0], [-1.0, 3.0]]
    drawn = external_array(ExternalTensor(9, (2, 2), "float32", "input"))
    assert drawn.tolist() != made.tolist()

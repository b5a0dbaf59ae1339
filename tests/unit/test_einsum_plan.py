"""The einsum planner (model/replay/einsum_plan.py): every plan run with numpy's kernels gives
numpy.einsum's values; the steps are the ones a porting team writes (no identity permutes,
one matrix product per pair); diagonals and malformed equations are refused with a reason."""
from __future__ import annotations

import numpy as np
import pytest

from opbench.model.replay.einsum_plan import (EinsumKernels, EinsumRefused, MatMul, Multiply,
                                              Permute, Reshape, Sum, parse_equation,
                                              plan_einsum, run_plan)

NUMPY = EinsumKernels(permute=np.transpose, reshape=np.reshape,
                      sum=lambda x, dims: np.sum(x, axis=dims), bmm=np.matmul,
                      matmul=np.matmul, multiply=np.multiply)


def _checked_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    assert a.ndim == 2 and b.ndim == 2, "matmul step on operands that are not matrices"
    return a @ b


def _checked_bmm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    assert a.ndim == 3 and b.ndim == 3, "bmm step on operands that are not batches"
    return np.matmul(a, b)


def _checked_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    assert a.ndim == b.ndim, "multiply step on operands of different ranks"
    return a * b


# the kernels as MindSpore's: bmm takes three dimensions, matmul two (the route calls them so)
STRICT = EinsumKernels(permute=NUMPY.permute, reshape=NUMPY.reshape, sum=NUMPY.sum,
                       bmm=_checked_bmm, matmul=_checked_matmul,
                       multiply=_checked_multiply)

CASES = [
    # the corpus script's three (tests/conformance/mha_einsum_padding_inference.py)
    ("bld,de,bme->blm", [(4, 24, 64), (64, 64), (4, 24, 64)]),
    ("bhqk,bhkd->bhqd", [(4, 4, 24, 24), (4, 4, 24, 16)]),
    ("bhqd->bqd", [(4, 4, 24, 16)]),
    # the rest of the rule
    ("...ij,...jk->...ik", [(2, 3, 4, 5), (2, 3, 5, 6)]),
    ("...ij,...jk->...ik", [(2, 3, 4, 5), (3, 5, 6)]),          # fewer ellipsis dims
    ("...ij,...jk->...ik", [(2, 1, 4, 5), (3, 5, 6)]),          # a broadcast one
    ("...ij,...jk", [(2, 3, 4, 5), (2, 3, 5, 6)]),              # implicit output
    ("i,j->ij", [(5,), (7,)]),                                  # outer product
    ("i,i->", [(9,)]*2),                                        # dot product
    ("i,i->i", [(9,)]*2),                                       # elementwise
    ("ij->ji", [(3, 4)]),
    ("ij", [(3, 4)]),                                           # implicit: identity
    ("ji", [(3, 4)]),                                           # implicit: transposed
    ("ij->", [(3, 4)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ij,jk->ki", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),             # torch's bilinear
    ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 6)]),
    ("abcd,dcef->abef", [(2, 3, 4, 5), (5, 4, 6, 7)]),          # two contracted, reordered
    ("ijk,jil->kl", [(3, 4, 5), (4, 3, 6)]),
    ("bqhd,bkhd->bhqk", [(2, 5, 3, 8), (2, 7, 3, 8)]),
    ("ab,cd->", [(2, 3), (4, 5)]),                              # summed first, both sides
    ("abc,b->a", [(2, 3, 4), (3,)]),                            # one side's label summed
    ("A,Ab->b", [(3,), (3, 4)]),                                # upper-case labels
    (" i j , j k -> i k ", [(3, 4), (4, 5)]),                   # spaces
    ("i,j,k->ijk", [(2,), (3,), (4,)]),
    ("bi,b->bi", [(4, 6), (4,)]),                               # a scaling
    ("bi,bj->bji", [(4, 6), (4, 3)]),                           # batched outer product
    ("...,...->...", [(2, 3), (2, 3)]),
    ("bij,jk->bik", [(0, 3, 4), (4, 5)]),                       # an empty batch
]


@pytest.mark.parametrize("equation, shapes", CASES)
def test_the_plan_computes_numpys_einsum(equation: str, shapes: list) -> None:
    rng = np.random.default_rng(len(equation))
    operands = [rng.standard_normal(s) for s in shapes]
    plan = plan_einsum(equation, shapes)
    got = run_plan(plan, operands, STRICT)
    expected = np.einsum(equation, *operands)
    assert got.shape == expected.shape == plan.output_shape
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)


def test_batched_attention_is_one_bmm_between_reshapes_without_a_permute() -> None:
    """'bhqk,bhkd->bhqd': already in (batch, free, contracted) order: reshape both to three
    dimensions, one bmm, reshape back; nothing permuted."""
    plan = plan_einsum("bhqk,bhkd->bhqd", [(4, 4, 24, 24), (4, 4, 24, 16)])
    assert plan.steps == (Reshape(0, (16, 24, 24)), Reshape(1, (16, 24, 16)),
                          MatMul(2, 3, batched=True), Reshape(4, (4, 4, 24, 16)))
    assert plan.result == 5 and plan.output_shape == (4, 4, 24, 16)


def test_a_reduction_of_one_operand_is_one_sum() -> None:
    plan = plan_einsum("bhqd->bqd", [(4, 4, 24, 16)])
    assert plan.steps == (Sum(0, (1,)),) and plan.result == 1


def test_a_transpose_is_one_permute_and_an_identity_no_step() -> None:
    assert plan_einsum("ij->ji", [(3, 4)]).steps == (Permute(0, (1, 0)),)
    identity = plan_einsum("ij->ij", [(3, 4)])
    assert identity.steps == () and identity.result == 0


def test_three_operands_contract_left_to_right_pairwise() -> None:
    """'bld,de,bme->blm': (y @ W) first (d contracted, a plain matmul over b*l rows), then
    the batched product with the third operand over e."""
    plan = plan_einsum("bld,de,bme->blm", [(4, 24, 64), (64, 64), (4, 24, 64)])
    products = [s for s in plan.steps if isinstance(s, MatMul)]
    assert [p.batched for p in products] == [False, True]
    assert plan.steps[0] == Reshape(0, (96, 64))


def test_a_label_of_one_operand_only_is_summed_before_the_product() -> None:
    plan = plan_einsum("abc,b->a", [(2, 3, 4), (3,)])
    assert plan.steps[0] == Sum(0, (2,))


def test_an_outer_product_is_a_broadcast_multiply() -> None:
    plan = plan_einsum("i,j->ij", [(5,), (7,)])
    assert plan.steps == (Reshape(0, (5, 1)), Reshape(1, (1, 7)), Multiply(2, 3))


def test_a_scaling_is_a_multiply_without_a_matrix_product() -> None:
    plan = plan_einsum("bi,b->bi", [(4, 6), (4,)])
    assert plan.steps == (Reshape(1, (4, 1)), Multiply(0, 2))


@pytest.mark.parametrize("equation, shapes, reason", [
    ("ii->i", [(3, 3)], "repeats i in one operand"),
    ("ii", [(3, 3)], "repeats i in one operand"),
    ("bii,bj->bj", [(2, 3, 3), (2, 4)], "repeats i"),
    ("ij,jk->ik", [(3, 4)], "names 2 operand(s), the call passes 1"),
    ("ij->ik", [(3, 4)], "output label(s) k in no operand"),
    ("ij->ii", [(3, 4)], "output label(s) i repeated"),
    ("ij,jk->ik", [(3, 4), (5, 6)], "label j is 4 in one operand and 5 in another"),
    ("ijk->i", [(3, 4)], "subscripts 'ijk' for an operand of shape (3, 4)"),
    ("ij->i->j", [(3, 4)], "more than one '->'"),
    ("i1->i", [(3,)], "'1' is not a subscript"),
    ("......->", [(3,)], "two ellipses"),
])
def test_what_the_rule_does_not_write_out_is_refused_with_the_reason(
        equation: str, shapes: list, reason: str) -> None:
    with pytest.raises(EinsumRefused, match=None) as refused:
        plan_einsum(equation, shapes)
    assert reason in str(refused.value)


def test_the_equation_alone_is_parsed_and_a_diagonal_refused_before_any_shape() -> None:
    parsed = parse_equation("...ij,...jk->...ik")
    assert parsed.inputs == (("...", "i", "j"), ("...", "j", "k"))
    assert parsed.output == ("...", "i", "k")
    with pytest.raises(EinsumRefused, match="diagonal or trace"):
        parse_equation("ii->i")

"""Output comparison: the gate before any timing (a fast wrong answer is a MISMATCH)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from opbench.runner.check import SHAPE, compare_outputs, flatten, select_outputs

RTOL, ATOL = 1e-4, 1e-5


def test_equal_arrays_agree_with_zero_error():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    result = compare_outputs(a, a.copy(), RTOL, ATOL)
    assert result.ok
    assert result.max_abs_err == 0.0 and result.max_rel_err == 0.0
    assert result.detail == ""
    assert (result.rtol, result.atol) == (RTOL, ATOL)


def test_differences_within_tolerance_agree_and_report_the_worst_error():
    ref = np.array([1.0, 100.0, 0.0])
    # each difference sits just inside atol + rtol*|ref|
    tgt = ref + np.array([5e-5, 5e-3, 5e-6])
    result = compare_outputs(ref, tgt, RTOL, ATOL)
    assert result.ok, result.detail
    assert result.max_abs_err == pytest.approx(5e-3)
    assert result.max_rel_err == pytest.approx(5e-5)


def test_tolerance_is_measured_against_the_reference():
    # |t - r| <= atol + rtol*|r|: the same gap of 1 passes against r=2 (1 <= 1.2) and
    # fails against r=1 (1 > 0.6), so the check is not symmetric by design
    assert compare_outputs(np.array([2.0]), np.array([1.0]), 0.6, 0.0).ok
    assert not compare_outputs(np.array([1.0]), np.array([2.0]), 0.6, 0.0).ok


def test_relative_error_ignores_zero_references():
    # relu-like outputs: a rounding difference next to an exact 0 has no relative size, and
    # must not report an absurd 1e300 relative error
    result = compare_outputs(np.array([0.0, 2.0]), np.array([1e-7, 2.0 + 2e-6]), RTOL, ATOL)
    assert result.ok
    assert result.max_rel_err == pytest.approx(1e-6)
    assert result.max_abs_err == pytest.approx(2e-6)


def test_beyond_tolerance_names_the_worst_index_and_the_values():
    ref = np.zeros((2, 3), dtype=np.float32)
    tgt = ref.copy()
    tgt[0, 1] = 0.1
    tgt[1, 2] = 0.5
    result = compare_outputs(ref, tgt, RTOL, ATOL)
    assert not result.ok
    assert "2 of 6 values differ" in result.detail
    assert "worst at [1,2]" in result.detail
    assert "0.5" in result.detail
    assert result.max_abs_err == pytest.approx(0.5)


def test_nan_equals_nan_but_not_a_number():
    ref = np.array([np.nan, 1.0])
    assert compare_outputs(ref, np.array([np.nan, 1.0]), RTOL, ATOL).ok
    result = compare_outputs(ref, np.array([0.0, 1.0]), RTOL, ATOL)
    assert not result.ok
    assert "worst at [0]" in result.detail
    # an unbounded error cannot be written to JSON as a number
    assert math.isinf(result.max_abs_err)
    assert result.as_dict()["max_abs_err"] is None
    assert math.isinf(result.max_rel_err)
    assert not compare_outputs(np.array([1.0]), np.array([np.nan]), RTOL, ATOL).ok


def test_inf_equals_same_sign_inf_only():
    ref = np.array([np.inf, -np.inf, 1.0])
    assert compare_outputs(ref, ref.copy(), RTOL, ATOL).ok
    flipped = compare_outputs(ref, np.array([-np.inf, -np.inf, 1.0]), RTOL, ATOL)
    assert not flipped.ok and "worst at [0]" in flipped.detail
    against_finite = compare_outputs(np.array([np.inf]), np.array([1e30]), RTOL, ATOL)
    assert not against_finite.ok
    assert math.isinf(against_finite.max_abs_err) and math.isinf(against_finite.max_rel_err)
    assert not compare_outputs(np.array([1e30]), np.array([np.inf]), RTOL, ATOL).ok


def test_overflowing_difference_is_a_mismatch_not_a_warning():
    with np.errstate(all="raise"):
        result = compare_outputs(np.array([1e308]), np.array([-1e308]), RTOL, ATOL)
    assert not result.ok
    assert result.as_dict()["max_abs_err"] is None


def test_shape_mismatch_fails_with_both_shapes():
    result = compare_outputs(np.zeros((2, 3)), np.zeros((3, 2)), RTOL, ATOL)
    assert not result.ok
    assert "(2, 3)" in result.detail and "(3, 2)" in result.detail
    assert math.isinf(result.max_abs_err)


def test_dtype_difference_is_noted_but_not_a_failure():
    # torch returns int64 indices where MindSpore returns int32: same answer
    ref = np.array([3, 1, 2], dtype=np.int64)
    result = compare_outputs(ref, ref.astype(np.int32), 0.0, 0.0)
    assert result.ok
    assert "int64" in result.detail and "int32" in result.detail


def test_integers_are_compared_exactly():
    result = compare_outputs(np.array([1, 2, 3]), np.array([1, 2, 4]), 0.0, 0.0)
    assert not result.ok and "worst at [2]" in result.detail


def test_bool_outputs_count_differing_values():
    ref = np.array([True, False, True, True])
    assert compare_outputs(ref, ref.copy(), RTOL, ATOL).ok
    result = compare_outputs(ref, np.array([True, True, False, True]), RTOL, ATOL)
    assert not result.ok
    assert "2 of 4 boolean values differ" in result.detail


def test_zero_dim_and_empty_outputs():
    assert compare_outputs(np.float32(1.5), np.array(1.5, dtype=np.float32), RTOL, ATOL).ok
    zero_d = compare_outputs(np.array(1.0), np.array(2.0), RTOL, ATOL)
    assert not zero_d.ok and "worst at []" in zero_d.detail
    assert compare_outputs(np.zeros((0, 3)), np.zeros((0, 3)), RTOL, ATOL).ok


def test_tuple_outputs_are_compared_item_by_item_and_labelled():
    values = np.array([3.0, 2.0])
    indices = np.array([0, 1], dtype=np.int64)
    ok = compare_outputs((values, indices), (values.copy(), indices.astype(np.int32)), RTOL, ATOL)
    assert ok.ok
    assert "output 1: dtype int64 against int32" in ok.detail
    bad = compare_outputs((values, indices), (values + 1.0, indices), RTOL, ATOL)
    assert not bad.ok
    assert bad.detail.startswith("output 0: ")


def test_output_count_mismatch_fails():
    a = np.zeros(2)
    result = compare_outputs((a, a), (a,), RTOL, ATOL)
    assert not result.ok
    assert "2 outputs against 1" in result.detail


def test_shape_mode_ignores_values_but_not_shapes():
    # random ops (dropout): the values cannot agree, the shape must
    rng = np.random.default_rng(0)
    ref, tgt = rng.normal(size=(4, 5)), rng.normal(size=(4, 5))
    assert compare_outputs(ref, tgt, RTOL, ATOL, mode=SHAPE).ok
    assert not compare_outputs(ref, tgt, RTOL, ATOL).ok
    assert not compare_outputs(ref, rng.normal(size=(5, 4)), RTOL, ATOL, mode=SHAPE).ok


def test_shape_mode_requires_the_same_kind_of_dtype():
    ref = np.zeros((2, 2), dtype=np.float32)
    assert compare_outputs(ref, np.zeros((2, 2), dtype=np.float64), RTOL, ATOL, mode=SHAPE).ok
    result = compare_outputs(ref, np.zeros((2, 2), dtype=np.int64), RTOL, ATOL, mode=SHAPE)
    assert not result.ok
    assert "float32" in result.detail and "int64" in result.detail


def test_as_dict_is_plain_json_data():
    d = compare_outputs(np.array([1.0]), np.array([1.0]), RTOL, ATOL).as_dict()
    assert d == {"ok": True, "max_abs_err": 0.0, "max_rel_err": 0.0, "rtol": RTOL,
                 "atol": ATOL, "detail": ""}


def test_flatten_walks_nested_sequences_in_order():
    a, b, c = np.zeros(1), np.ones(2), np.full(3, 2.0)
    flat = flatten((a, [b, (c,)]))
    assert [x.size for x in flat] == [1, 2, 3]


def test_select_outputs():
    a, b, c = np.zeros(1), np.ones(1), np.full(1, 2.0)
    assert select_outputs(a, None) is a
    assert select_outputs((a, b, c), 1) is b
    picked = select_outputs((a, b, c), (2, 0))
    assert isinstance(picked, tuple) and picked[0] is c and picked[1] is a


def test_select_outputs_accepts_a_list():
    # numpy.split and friends return lists, not tuples
    a, b = np.zeros(1), np.ones(1)
    assert select_outputs([a, b], 1) is b
    assert select_outputs([a, b], (1,))[0] is b


def test_select_outputs_from_a_single_tensor_is_an_error():
    with pytest.raises(ValueError, match="selects from a tuple"):
        select_outputs(np.zeros(3), 0)


def test_a_mismatch_records_which_output_and_element_differ():
    ref = (np.zeros((2, 3), np.float32), np.ones((2, 3), np.float32))
    tgt = (ref[0].copy(), ref[1].copy())
    tgt[1][0, 1] += 0.25
    tgt[1][1, 2] += 0.75           # the larger difference: the one named
    res = compare_outputs(ref, tgt, rtol=1e-4, atol=1e-5)
    assert not res.ok and (res.worst_output, res.worst_index) == (1, (1, 2))
    assert res.as_dict()["worst_index"] == [1, 2] and "output 1: " in res.detail
    flags = compare_outputs(np.array([True, False, True]), np.array([True, True, False]),
                            rtol=0, atol=0)
    assert (flags.worst_output, flags.worst_index) == (0, (1,))   # the first that differs
    agree = compare_outputs(ref, ref, rtol=1e-4, atol=1e-5)
    assert agree.worst_index is None and "worst_index" not in agree.as_dict()


def test_a_failure_the_case_expects_carries_its_reason_last():
    failed = compare_outputs(np.array([1.0, 2.0]), np.array([1.0, 3.0]), 1e-5, 1e-8)
    expected = failed.expected_by("known offset")
    assert failed.expected_mismatch is None and expected.expected_mismatch == "known offset"
    assert list(expected.as_dict())[-1] == "expected_mismatch"
    assert list(expected.as_dict())[:-1] == list(failed.as_dict())
    agreeing = compare_outputs(np.array([1.0]), np.array([1.0]), 1e-5, 1e-8)
    assert agreeing.expected_by("known offset") is agreeing       # nothing failed
    assert failed.expected_by(None) is failed                      # the case expects nothing


def test_complex_outputs_are_compared_as_complex():
    # issue 45: the imaginary part of a complex output (an rfft2) was cast away, with
    # numpy's ComplexWarning, and never checked
    import warnings
    ref = np.array([1 + 2j, 3 - 1j], dtype=np.complex64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")       # no ComplexWarning: nothing is cast away
        assert compare_outputs(ref, ref.copy(), rtol=1e-5, atol=1e-6).ok
        differs = compare_outputs(ref, np.array([1 - 2j, 3 - 1j], dtype=np.complex64),
                                  rtol=1e-5, atol=1e-6)
    assert not differs.ok
    assert differs.worst_index == (0,)
    assert differs.max_abs_err == 4.0          # |(1-2j) - (1+2j)|


def test_complex_against_real_compares_the_imaginary_part_with_zero():
    result = compare_outputs(np.array([1 + 1j]), np.array([1.0]), rtol=1e-5, atol=1e-6)
    assert not result.ok and result.max_abs_err == 1.0

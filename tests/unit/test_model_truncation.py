"""Integers truncated from floating values (opbench/model/replay/truncation.py): the calls
whose outputs two right replays may show one integer apart, and the output check that
allows that step and no more."""
from __future__ import annotations

import numpy as np

from opbench.model.impact.output_check import CHECK_ATOL, compare
from opbench.model.program import Call, Dtype, Ext, Lit, Ref
from opbench.model.replay.executor import fingerprint
from opbench.model.replay.truncation import ONE_INTEGER_STEP, truncation_tolerances


def _call(index: int, api: str, args: tuple, dtype: str) -> Call:
    return Call(index=index, framework="torch", api=api, kind="function", replay_api=api,
                args=args, kwargs=(), outputs=("tensor", (16, 16), dtype),
                duration_ns=1, start_ns=0)


# T5's relative-position buckets (transformers modeling_t5.py, lines 242-262), as captured
T5_BUCKETS = [
    _call(0, "torch.abs", (Ext(0),), "int64"),
    _call(1, "torch.Tensor.float", (Ref(0),), "float32"),
    _call(2, "torch.log", (Ref(1),), "float32"),
    _call(3, "torch.Tensor.to", (Ref(2), Dtype("int64")), "int64"),       # truncation
    _call(4, "torch.Tensor.__radd__", (Ref(3), Lit(8)), "int64"),
    _call(5, "torch.Tensor.__lt__", (Ref(0), Lit(8)), "bool"),
    _call(6, "torch.where", (Ref(5), Ref(0), Ref(4)), "int64"),
    _call(7, "torch.Tensor.float", (Ref(6),), "float32"),
]


def test_a_truncation_and_the_integers_computed_from_it_may_differ_by_one_step():
    assert truncation_tolerances(T5_BUCKETS) == {3: ONE_INTEGER_STEP, 4: ONE_INTEGER_STEP,
                                                 6: ONE_INTEGER_STEP}


def test_integer_arithmetic_on_integer_inputs_is_not_allowed_a_step():
    """torch.abs of an int64 input and the bool comparison read no truncated value."""
    assert not {0, 1, 2, 5, 7} & set(truncation_tolerances(T5_BUCKETS))


def test_one_integer_apart_passes_the_check_with_the_step_and_fails_without_it():
    """MindSpore 2.10's log(1/8) / log(16) * 8 is -5.9999986 where torch's is -6.0:
    truncated, -5 against -6 (checked on CPU)."""
    torch_values = np.trunc(np.log(np.arange(1, 257) / 8.0) / np.log(16.0) * 8).astype(np.int64)
    ms_values = torch_values.copy()
    ms_values[::7] += 1                           # one step at some of the compared points
    assert compare(fingerprint(torch_values), fingerprint(ms_values), CHECK_ATOL)
    assert compare(fingerprint(torch_values), fingerprint(ms_values), ONE_INTEGER_STEP) is None
    # a wrong conversion (rounding instead of truncating, or a wrong scale) is off by more
    wrong = (torch_values * 2)
    assert compare(fingerprint(torch_values), fingerprint(wrong), ONE_INTEGER_STEP)

"""Describing call arguments, and formatting them for people."""
from __future__ import annotations

from opbench.trace.events import Literal, Opaque, Sequence, Signature, TensorSpec
from opbench.trace.signature import (
    MAX_SEQUENCE_ITEMS,
    MAX_STRING_CHARS,
    describe_call,
    describe_value,
    format_inputs,
    format_signature,
    opaque_in,
    tensors_in,
)


class FakeTensor:
    def __init__(self, *shape, dtype="float32"):
        self.shape, self.dtype = shape, dtype


def spec(value):
    return TensorSpec(value.shape, value.dtype) if isinstance(value, FakeTensor) else None


def test_literals_stay_literal_and_keep_their_type():
    assert [describe_value(v, spec) for v in (None, True, 3, 2.5, "mean")] == \
        [Literal(None), Literal(True), Literal(3), Literal(2.5), Literal("mean")]
    assert describe_value(True, spec) != describe_value(1, spec) or \
        type(describe_value(True, spec).value) is bool


def test_tensors_inside_sequences_are_found_in_order():
    described = describe_call(([FakeTensor(2), FakeTensor(3, dtype="int64")], 0), {}, spec)
    assert described.args[0] == Sequence("list", (TensorSpec((2,), "float32"),
                                                   TensorSpec((3,), "int64")))
    assert [t.shape for t in tensors_in(described)] == [(2,), (3,)]


def test_values_a_case_cannot_hold_are_opaque():
    long_list = list(range(MAX_SEQUENCE_ITEMS + 1))
    described = describe_call((slice(None, 2), long_list, "x" * (MAX_STRING_CHARS + 1),
                               object()), {}, spec)
    assert described.args[0] == Opaque("slice", "slice(None, 2, None)")
    assert described.args[1] == Opaque("list", f"len={MAX_SEQUENCE_ITEMS + 1}")
    assert described.args[2] == Opaque("str", "")
    assert described.args[3] == Opaque("object", "")   # arbitrary objects: type name only
    assert [o.type_name for o in opaque_in(described)] == ["slice", "list", "str", "object"]


def test_a_broken_repr_does_not_break_the_program():
    class dtype:                      # a "cheap repr" type name whose repr raises
        def __repr__(self):
            raise RuntimeError("no")

    assert describe_value(dtype(), spec) == Opaque("dtype", "")


def test_signatures_are_hashable_and_equal_when_calls_look_alike():
    one = describe_call((FakeTensor(2, 3), [1, 2]), {"dim": -1}, spec)
    two = describe_call((FakeTensor(2, 3), [1, 2]), {"dim": -1}, spec)
    assert one == two and hash(one) == hash(two)
    assert one != describe_call((FakeTensor(2, 3), (1, 2)), {"dim": -1}, spec)


def test_formatting():
    signature = describe_call((FakeTensor(8, 16), FakeTensor(16, dtype="bfloat16"), (1,)),
                              {"dim": -1, "mode": "x"}, spec)
    assert format_inputs(signature) == "f32[8,16], bf16[16]"
    assert format_signature(signature) == "f32[8,16], bf16[16], (1,), dim=-1, mode='x'"
    assert format_inputs(Signature((Literal(1),), ())) == "-"
    assert format_signature(describe_call((FakeTensor(),), {}, spec)) == "f32[]"

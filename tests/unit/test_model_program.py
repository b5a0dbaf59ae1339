"""The captured program's JSON file (opbench/model/program.py): every argument kind, the
markers and the external tensors survive a round trip through real JSON text; another
format number is refused; refs_in / exts_in / opaque_in find the leaves however deeply
they are nested."""
from __future__ import annotations

from dataclasses import replace

import json

import pytest

from opbench.model.program import (PROGRAM_FORMAT, Call, Dtype, Ext, ExternalTensor, Lit,
                                   Marker, Opaque, Program, Ref, Seq, SliceOf, args_from_json,
                                   args_to_json, exts_in, opaque_in, refs_in)

FLOAT_OUT = ("tensor", (2, 8), "float32")


def _call(index: int, api: str, args: tuple, kwargs: tuple = (), **extra) -> Call:
    fields = dict(index=index, framework="torch", api=api, kind="function", replay_api=api,
                  args=args, kwargs=kwargs, outputs=FLOAT_OUT, duration_ns=1000 + index,
                  start_ns=10_000 * index)
    fields.update(extra)
    return Call(**fields)


# Every argument kind, nested the way real calls nest them: a tuple result indexed by a
# path, a list of tensors inside a tuple, x[..., 1:5:2, None], a dtype keyword, and an
# argument the capture could not describe.
EVERY_KIND_ARGS = (
    Ref(0),
    Ref(1, (1,)),
    Ref(2, (0, 3)),
    Ext(0),
    Lit(None), Lit(True), Lit(3), Lit(1e-5), Lit("same"),
    Dtype("float16"),
    SliceOf(1, 5, 2), SliceOf(None, None, None),
    Seq("list", (Ext(1), Seq("tuple", (Lit(2), Ref(0))), Lit(-1))),
    Seq("tuple", ()),
    Opaque("ellipsis", "..."),
    Opaque("device", ""),
)


def _program() -> Program:
    calls = (
        _call(0, "torch.nn.functional.linear", (Ext(0), Ext(1), Ext(2))),
        _call(1, "torch.split", (Ref(0), Lit(4)), (("dim", Lit(-1)),),
              outputs=("seq", (FLOAT_OUT, FLOAT_OUT))),
        _call(2, "torch.argmax", (Ref(1, (0,)),), (("dim", Lit(1)),),
              outputs=("tensor", (2,), "int64", 0.0, 7.0)),
        _call(3, "torch.nn.Dropout", (Ref(0),), kind="module", replay_api=None,
              alias_of=Ref(0)),
        _call(4, "torch.Tensor.to", (Ref(0),), (("dtype", Dtype("bfloat16")),),
              kind="tensor_method", grad_enabled=False),
        _call(5, "torch.Tensor.backward", (Ref(4),), kind="tensor_method", backward=True,
              outputs=("none",)),
        _call(6, "torch.whatever", EVERY_KIND_ARGS,
              (("mask", Seq("list", (Ext(3), Opaque("object", "")))), ("scale", Lit(0.5))),
              replay_api=None, problem="an argument a replay cannot rebuild (device)",
              outputs=("other", "int")),
    )
    externals = (
        ExternalTensor(0, (2, 16), "float32", "input"),
        ExternalTensor(1, (8, 16), "float32", "parameter", "fc.weight"),
        ExternalTensor(2, (8,), "float32", "parameter", "fc.bias"),
        ExternalTensor(3, (2, 8), "int64", "input", "", 0.0, 30521.0),
        ExternalTensor(4, (2,), "bool", "buffer", "mask", 0.0, 1.0),
    )
    return Program(framework="torch", version="2.5.1", threads=2, launch="blocking",
                   device="cpu", timing="serial", calls=calls, externals=externals,
                   markers=(Marker(0, "step 0"), Marker(4, "")), wall_ns=123_456,
                   overhead_ns_per_call=850.5, notes=("serial: synced",), dropped_calls=7,
                   script_status=1, script_error="RuntimeError: boom",
                   frameworks_imported=("torch",))


def _through_text(program: Program) -> Program:
    """As the capture process writes it and opbench reads it: real JSON text."""
    return Program.from_json(json.loads(json.dumps(program.to_json())))


def test_program_round_trip_keeps_every_field_and_argument_kind():
    program = _program()
    again = _through_text(program)
    assert again == program
    # the described outputs come back as tuples (what steady.py compares and indexes)
    assert again.calls[1].outputs == ("seq", (FLOAT_OUT, FLOAT_OUT))
    assert again.calls[2].outputs == ("tensor", (2,), "int64", 0.0, 7.0)


def test_round_trip_keeps_paths_aliases_and_flags():
    again = _through_text(_program())
    assert again.calls[2].args == (Ref(1, (0,)),)
    assert again.calls[6].args[2] == Ref(2, (0, 3))
    assert again.calls[3].alias_of == Ref(0) and again.calls[3].replayable
    assert again.calls[5].backward and not again.calls[4].backward
    assert not again.calls[4].grad_enabled and again.calls[5].grad_enabled
    assert again.calls[6].problem.startswith("an argument") and not again.calls[6].replayable


def test_externals_keep_shape_role_name_and_integer_range():
    again = _through_text(_program())
    ids = again.externals[3]
    assert (ids.shape, ids.dtype, ids.role, ids.low, ids.high) == ((2, 8), "int64", "input",
                                                                   0.0, 30521.0)
    assert again.externals[1].name == "fc.weight" and again.externals[1].role == "parameter"
    assert again.externals[0].low is None and again.externals[0].high is None


def test_a_primitives_constructor_and_a_picked_output_round_trip():
    call = Call(index=0, framework="mindspore", api="mindspore.nn.LayerNorm",
                kind="module", replay_api="mindspore.ops.LayerNorm", args=(Ext(0),),
                kwargs=(), outputs=FLOAT_OUT, duration_ns=5, start_ns=1,
                init=(("begin_norm_axis", -1), ("epsilon", 1e-7), ("shape", (2, 3))),
                pick=0)
    program = replace(_program(), calls=(call,))
    again = _through_text(program).calls[0]
    assert again.init == call.init and again.pick == 0       # lists back to tuples
    plain = _through_text(_program()).calls[0]
    assert plain.init == () and plain.pick is None


def test_markers_round_trip_with_positions_and_labels():
    assert _through_text(_program()).markers == (Marker(0, "step 0"), Marker(4, ""))


@pytest.mark.parametrize("argument", EVERY_KIND_ARGS, ids=lambda a: type(a).__name__)
def test_each_argument_kind_round_trips_alone(argument):
    assert args_from_json(json.loads(json.dumps(args_to_json(argument)))) == argument


def test_a_wrong_format_number_is_refused_saying_both_numbers():
    data = _program().to_json()
    data["format"] = PROGRAM_FORMAT + 1
    with pytest.raises(ValueError) as raised:
        Program.from_json(data)
    message = str(raised.value)
    assert f"capture format {PROGRAM_FORMAT + 1}" in message
    assert f"expected {PROGRAM_FORMAT}" in message and "another opbench version" in message


def test_a_file_without_a_format_is_refused():
    data = _program().to_json()
    del data["format"]
    with pytest.raises(ValueError, match="capture format None"):
        Program.from_json(data)


def test_a_value_that_is_no_program_argument_is_refused_both_ways():
    with pytest.raises(TypeError, match="not a program argument"):
        args_to_json(object())
    with pytest.raises(ValueError, match="not a program argument"):
        args_from_json({"unknown": 1})


def test_refs_exts_and_opaques_are_found_in_args_kwargs_and_nested_sequences():
    call = _program().calls[6]
    assert refs_in(call) == [Ref(0), Ref(1, (1,)), Ref(2, (0, 3)), Ref(0)]
    assert exts_in(call) == [Ext(0), Ext(1), Ext(3)]
    assert opaque_in(call) == [Opaque("ellipsis", "..."), Opaque("device", ""),
                               Opaque("object", "")]


def test_an_alias_target_is_not_an_argument():
    """alias_of says where a no-op call's output comes from; it is not read as an input."""
    dropout = _program().calls[3]
    assert refs_in(dropout) == [Ref(0)]          # its one argument, once
    bare = _call(0, "torch.nn.Identity", (), alias_of=Ext(5))
    assert refs_in(bare) == [] and exts_in(bare) == []


def test_an_alias_of_a_tuple_of_tensors_survives_a_round_trip():
    """The grad reducer's Identity on a TrainOneStepCell's gradients: alias_of a Seq."""
    grads = Seq("tuple", (Ref(0), Ext(2)))
    identity = _call(1, "mindspore.mint.nn.Identity", (grads,), kind="module",
                     replay_api=None, alias_of=grads,
                     outputs=("seq", (FLOAT_OUT, FLOAT_OUT)))
    program = replace(_program(), calls=(_program().calls[0], identity))
    again = _through_text(program)
    assert again.calls[1].alias_of == grads and again.calls[1].replayable
    assert again == program

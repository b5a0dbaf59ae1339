"""The model's JSON records (opbench/model/json_records.py, and the capture file of
opbench/model/program.py read through it): a capture file as the previous reader's code
wrote it (format 2, before the field-driven codec) reads into the same Program and is
written back as the same JSON; missing keys and wrong shapes are named; optional fields at
their default stay out of the file; and the codec imports the standard library only (the
capture runs it in the user's interpreter)."""
from __future__ import annotations

import ast
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import opbench.model.json_records as json_records
from opbench.model.json_records import (JsonRecordError, each, from_object, from_row,
                                        json_field, optional, row_of, to_object, to_row,
                                        tuple_of)
from opbench.model.program import (Call, Dtype, Ext, ExternalTensor, Lit, Marker, Opaque,
                                   Program, Ref, Seq, Site, SliceOf)

# Written by program.py's hand-written to_json (main 520c545) for the program below: the
# on-disk format the capture writes and this opbench must go on reading.
FORMAT_2_FILE = (
    '{"format": 2, "framework": "torch", "version": "2.5.1", "threads": 2, "launch": '
    '"blocking", "device": "cpu", "timing": "serial", "wall_ns": 5, "overhead_ns_per_call": '
    '1.5, "in_window_ns_per_call": 0.5, "notes": ["n"], "dropped_calls": 1, "script_status": '
    '0, "script_error": null, "frameworks_imported": ["torch"], "cpus": [0, 1], '
    '"ended_early": "steps", "markers": [[0, "step 0"]], "externals": [[0, [2, 16], '
    '"float32", "input", "", null, null], [1, [8, 16], "int64", "parameter", "w", 0.0, 9.0]],'
    ' "calls": [{"i": 0, "fw": "torch", "api": "torch.nn.functional.linear", "kind": '
    '"function", "replay": "torch.nn.functional.linear", "args": {"t": [{"ext": 0}, {"ext": '
    '1}]}, "kwargs": [["bias", {"lit": null}]], "out": ["tensor", [2, 8], "float32"], "ns": '
    '1500, "t": 0, "site": ["train.py", 12, 13]}, {"i": 1, "fw": "mindspore", "api": '
    '"mindspore.nn.SGD", "kind": "module", "replay": null, "args": {"t": [{"seq": "tuple", '
    '"items": [{"ext": 1}]}, {"ref": [0, [1]]}]}, "kwargs": [], "out": ["seq", [["tensor", '
    '[8], "float32"]]], "ns": 900, "t": 2000, "problem": "cannot", "alias": {"ext": 1}, '
    '"backward": true, "no_grad": true, "init": [["momentum", 0.9], ["shape", [2, 3]]], '
    '"pick": 0}, {"i": 2, "fw": "torch", "api": "torch.Tensor.__getitem__", "kind": '
    '"tensor_method", "replay": "torch.Tensor.__getitem__", "args": {"t": [{"ref": [0, []]},'
    ' {"t": [{"slice": [null, 2, null]}, {"lit": 0}]}]}, "kwargs": [["dtype", {"dtype": '
    '"float16"}], ["o", {"opaque": "object", "text": "x"}]], "out": ["tensor", [2], '
    '"float32"], "ns": 100, "t": 3000}]}')

EXPECTED = Program(
    framework="torch", version="2.5.1", threads=2, launch="blocking", device="cpu",
    timing="serial",
    calls=(
        Call(0, "torch", "torch.nn.functional.linear", "function",
             "torch.nn.functional.linear", (Ext(0), Ext(1)), (("bias", Lit(None)),),
             ("tensor", (2, 8), "float32"), 1500, 0, site=Site("train.py", 12, 13)),
        Call(1, "mindspore", "mindspore.nn.SGD", "module", None,
             (Seq("tuple", (Ext(1),)), Ref(0, (1,))), (),
             ("seq", (("tensor", (8,), "float32"),)), 900, 2000, problem="cannot",
             alias_of=Ext(1), backward=True, grad_enabled=False,
             init=(("momentum", 0.9), ("shape", (2, 3))), pick=0),
        Call(2, "torch", "torch.Tensor.__getitem__", "tensor_method",
             "torch.Tensor.__getitem__", (Ref(0), (SliceOf(None, 2, None), Lit(0))),
             (("dtype", Dtype("float16")), ("o", Opaque("object", "x"))),
             ("tensor", (2,), "float32"), 100, 3000)),
    externals=(ExternalTensor(0, (2, 16), "float32", "input"),
               ExternalTensor(1, (8, 16), "int64", "parameter", "w", 0.0, 9.0)),
    markers=(Marker(0, "step 0"),), wall_ns=5, overhead_ns_per_call=1.5,
    in_window_ns_per_call=0.5, notes=("n",), dropped_calls=1, script_status=0,
    script_error=None, frameworks_imported=("torch",), cpus=(0, 1), ended_early="steps")


def test_a_capture_file_of_format_2_reads_into_the_same_program():
    assert Program.from_json(json.loads(FORMAT_2_FILE)) == EXPECTED


def test_a_program_is_written_as_the_same_json_the_previous_writer_wrote():
    assert json.loads(json.dumps(EXPECTED.to_json())) == json.loads(FORMAT_2_FILE)


def test_a_missing_key_of_a_call_is_named_with_its_place():
    data = json.loads(FORMAT_2_FILE)
    del data["calls"][1]["ns"]
    with pytest.raises(ValueError, match=r"capture file: calls/1: the required key 'ns'"):
        Program.from_json(data)


def test_an_external_of_the_wrong_length_is_named():
    data = json.loads(FORMAT_2_FILE)
    data["externals"][0] = [0, [2]]
    with pytest.raises(ValueError, match=r"externals/0: expected an array of 4-11 values"):
        Program.from_json(data)


def test_keys_written_only_when_set_are_absent_at_their_defaults():
    written = EXPECTED.to_json()["calls"][2]
    assert set(written) == {"i", "fw", "api", "kind", "replay", "args", "kwargs", "out",
                            "ns", "t"}


@dataclass(frozen=True)
class _Point:
    x: int
    y: int = 0


@dataclass(frozen=True)
class _Shape:
    name: str = json_field(key="n")
    points: tuple[_Point, ...] = json_field(codec=each(_Point), default=())
    corner: _Point | None = json_field(codec=optional(row_of(_Point)), default=None)
    sizes: tuple[int, ...] = json_field(codec=tuple_of(), omit_default=True, default=())


def test_a_record_round_trips_by_its_fields_with_nested_records_and_rows():
    shape = _Shape("a", (_Point(1, 2), _Point(3)), _Point(4, 5), (7,))
    data = to_object(shape)
    assert data == {"n": "a", "points": [{"x": 1, "y": 2}, {"x": 3, "y": 0}],
                    "corner": [4, 5], "sizes": [7]}
    assert from_object(_Shape, data) == shape
    assert to_row(_Point(1, 2)) == [1, 2] and from_row(_Point, [1]) == _Point(1, 0)


def test_absent_keys_take_defaults_and_unknown_keys_are_left_alone():
    assert from_object(_Shape, {"n": "b", "later": 1}) == _Shape("b")
    assert "sizes" not in to_object(_Shape("b"))


def test_wrong_shapes_are_named_by_path():
    with pytest.raises(JsonRecordError, match=r"points/1: expected an object, got int"):
        from_object(_Shape, {"n": "c", "points": [{"x": 1}, 3]})
    with pytest.raises(JsonRecordError, match=r"points: expected an array, got str"):
        from_object(_Shape, {"n": "c", "points": "no"})
    with pytest.raises(JsonRecordError, match=r"\(top level\): the required key 'n'"):
        from_object(_Shape, {})


def test_the_codec_imports_the_standard_library_only():
    """The capture (the user's interpreter) imports program.py, so this module."""
    tree = ast.parse(Path(json_records.__file__).read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert imported and imported <= set(sys.stdlib_module_names) | {"__future__"}


def test_fingerprints_are_read_by_their_fields_in_the_output_check():
    from opbench.model.impact.output_check import compare
    one = {"shape": [2], "n": 2, "mean": 1.0, "mean_abs": 1.0, "points": [1.0, 1.0]}
    assert compare(one, dict(one)) is None
    assert compare(one, {**one, "shape": [1, 2]}) == "shape [2] against [1, 2]"
    assert compare({"shape": [0], "n": 0}, {"shape": [0], "n": 0}) is None
    assert compare(one, {**one, "points": [1.0, 2.0]}).startswith("values differ by up to 0.5")
    assert compare([one], [one, one]) == "different numbers of outputs"


def test_the_call_binding_imports_the_standard_library_only():
    """The capture's lowerings bind a live call's arguments with it."""
    import opbench.model.bound_args as bound_args
    tree = ast.parse(Path(bound_args.__file__).read_text(encoding="utf-8"))
    imported = {node.module.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module}
    imported |= {alias.name.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.Import) for alias in node.names}
    assert imported and imported <= set(sys.stdlib_module_names) | {"__future__"}


def test_a_mindspore_capture_keeps_its_speed_probe_and_a_torch_one_writes_no_key():
    """model/speed_probe.py: the capture's probe, read back; without one the file is as
    format 2 wrote it."""
    from dataclasses import replace
    probed = replace(EXPECTED, speed_probe_s=4.04e-4)
    data = json.loads(json.dumps(probed.to_json()))
    assert data["speed_probe_s"] == 4.04e-4
    assert Program.from_json(data) == probed
    assert "speed_probe_s" not in EXPECTED.to_json()

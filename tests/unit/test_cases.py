"""Case files: loading, line-accurate errors, sweep expansion, ids and selection."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from opbench.cases.case_files import (
    DISTRIBUTIONS,
    DTYPES,
    PATTERN_HINTS,
    SCHEMA_PATH,
    Case,
    CaseError,
    Ref,
    expand,
    load_case_file,
    load_cases,
    load_schema,
    select,
)

FIXTURES = Path(__file__).parent / "fixtures" / "cases"
VALID = FIXTURES / "valid"
ERRORS = FIXTURES / "errors"


def load_error(name: str) -> CaseError:
    path = ERRORS / name
    with pytest.raises(CaseError) as info:
        load_case_file(path)
    return info.value


def write(tmp_path: Path, text: str, name: str = "case.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def load_text(tmp_path: Path, text: str) -> list[Case]:
    return load_case_file(write(tmp_path, text))


def error_of(tmp_path: Path, text: str) -> CaseError:
    with pytest.raises(CaseError) as info:
        load_text(tmp_path, text)
    return info.value


MINIMAL = """\
cases:
  - name: neg
    inputs:
      x: {shape: [4]}
    torch: {api: torch.neg, args: [$x]}
    numpy: {api: numpy.negative, args: [$x]}
"""

# ---------------------------------------------------------------------------------------
# Loading valid files
# ---------------------------------------------------------------------------------------


def test_documented_example_loads_with_every_field():
    [case] = load_case_file(VALID / "shape.yaml")
    assert case.name == "reshape" and case.op == "reshape"
    assert case.file == str(VALID / "shape.yaml")
    assert case.line == 3
    assert case.tags == ("shape", "view")
    assert case.description == "flatten the trailing dims"
    assert case.params == {"shape": ([8, 16], [64, 1024]), "dtype": ("float32", "float16")}
    assert list(case.params) == ["shape", "dtype"]
    assert (case.threshold, case.rtol, case.atol) == (0.8, 1e-5, 1e-6)
    assert case.min_effect == 0.2
    assert case.backward is False
    assert case.expect_mismatch == "reason"
    assert case.compare == "values"


def test_optional_fields_take_their_defaults(tmp_path):
    [case] = load_text(tmp_path, MINIMAL)
    assert case.op == "neg"
    assert case.tags == () and case.description == "" and case.params == {}
    assert (case.threshold, case.rtol, case.atol) == (None, None, None)
    assert case.min_effect is None
    assert case.backward is False and case.expect_mismatch is None
    assert case.compare == "values"


def test_exponent_floats_are_numbers_not_strings(tmp_path):
    # PyYAML alone reads `1e-5` as the string "1e-5"; the schema would then reject it.
    [case] = load_text(tmp_path, MINIMAL + "    tolerance: {rtol: 1e-5, atol: 2E-6}\n")
    assert (case.rtol, case.atol) == (1e-5, 2e-6)


def test_min_effect_is_carried_by_the_case_and_its_instances(tmp_path):
    [case] = load_text(tmp_path, MINIMAL + "    min_effect: 0.25\n")
    assert case.min_effect == 0.25
    assert [i.case.min_effect for i in expand(case)] == [0.25]


def test_op_groups_cases_and_defaults_to_name():
    cases = load_case_file(VALID / "nested" / "reduce.yml")
    assert [(c.name, c.op) for c in cases] == [("sum_all", "sum"), ("sum_dim", "sum")]


# ---------------------------------------------------------------------------------------
# Errors: each names file:line, case and key
# ---------------------------------------------------------------------------------------


def test_unknown_case_key_names_line_and_suggests():
    err = load_error("unknown_key.yaml")
    assert str(err) == (f"{ERRORS / 'unknown_key.yaml'}:15 case 'reshape': "
                        "unknown key 'tresh' (did you mean 'threshold'?)")
    assert (err.file, err.line, err.case, err.key) == (
        str(ERRORS / "unknown_key.yaml"), 15, "reshape", "tresh")


def test_unknown_input_key_suggests_the_right_one():
    err = load_error("unknown_input_key.yaml")
    path = ERRORS / "unknown_input_key.yaml"
    assert str(err).splitlines() == [
        f"{path}:4 case 'reshape': key 'inputs.x': missing required key 'shape'",
        f"{path}:5 case 'reshape': unknown key 'shpe' (did you mean 'shape'?)",
    ]
    assert [e.key for e in err.errors] == ["inputs.x", "inputs.x.shpe"]


def test_bad_dtype_lists_the_choices():
    err = load_error("bad_dtype.yaml")
    assert str(err) == (
        f"{ERRORS / 'bad_dtype.yaml'}:4 case 'add': key 'inputs.x.dtype': 'float33' is not "
        "one of float16, bfloat16, float32, float64, int32, int64, bool "
        "(did you mean 'float32'?)")
    assert err.key == "inputs.x.dtype"


def test_bad_dtype_from_a_param_points_at_the_param_value():
    err = load_error("bad_dtype_param.yaml")
    assert str(err).startswith(f"{ERRORS / 'bad_dtype_param.yaml'}:6 case 'add': "
                               "key 'inputs.x.dtype': 'floot16' is not one of")
    assert "(from $dtype)" in str(err)


def test_negative_shape_is_an_error_at_its_line():
    err = load_error("bad_shape.yaml")
    assert str(err) == (f"{ERRORS / 'bad_shape.yaml'}:4 case 'neg': "
                        "key 'inputs.x.shape[1]': must be >= 0, got -1")


def test_shape_invalid_after_substitution_names_param_line_and_key():
    err = load_error("bad_shape_param.yaml")
    assert str(err) == (f"{ERRORS / 'bad_shape_param.yaml'}:6 case 'neg': key "
                        "'inputs.x.shape': [4, 2.5] is not a list of non-negative ints "
                        "(from $shape)")


@pytest.mark.parametrize("value, text", [
    ("0", "must be > 0, got 0"),
    ("1", "must be < 1, got 1"),
    ("-1", "must be > 0, got -1"),
    ("1.5", "must be < 1, got 1.5"),
    ("x", "expected a number, got 'x'"),
    ("true", "expected a number, got True"),
])
def test_bad_min_effect_names_file_line_case_and_key(tmp_path, value, text):
    # MINIMAL's last line is 6, so the key is on line 7.
    err = error_of(tmp_path, MINIMAL + f"    min_effect: {value}\n")
    path = tmp_path / "case.yaml"
    assert str(err) == f"{path}:7 case 'neg': key 'min_effect': {text}"
    assert (err.file, err.line, err.case, err.key) == (str(path), 7, "neg", "min_effect")


def test_missing_api_points_at_the_section():
    err = load_error("missing_api.yaml")
    assert str(err) == (f"{ERRORS / 'missing_api.yaml'}:5 case 'neg': key 'torch': "
                        "missing required key 'api'")


def test_yaml_syntax_error_names_the_line():
    err = load_error("syntax_error.yaml")
    assert str(err).startswith(f"{ERRORS / 'syntax_error.yaml'}:5: invalid YAML: ")
    assert "flow mapping started at line 4" in str(err)
    assert err.line == 5


def test_duplicate_mapping_key_is_an_error():
    err = load_error("duplicate_key.yaml")
    assert str(err) == (f"{ERRORS / 'duplicate_key.yaml'}:7 case 'neg': "
                        "duplicate key 'torch' (first at line 5)")


def test_duplicate_case_name_within_a_file():
    err = load_error("duplicate_name.yaml")
    assert str(err) == (f"{ERRORS / 'duplicate_name.yaml'}:8 case 'neg': "
                        "duplicate case name (first defined at line 2)")


def test_unknown_refs_are_reported_with_suggestions():
    err = load_error("unknown_ref.yaml")
    path = ERRORS / "unknown_ref.yaml"
    assert str(err).splitlines() == [
        f"{path}:10 case 'add': key 'torch.args[1]': unknown reference '$z': "
        "no param or input named 'z'",
        f"{path}:11 case 'add': key 'torch.kwargs.alpha': unknown reference '$alpah': "
        "no param or input named 'alpah' (did you mean '$alpha'?)",
    ]
    assert [e.line for e in err.errors] == [10, 11]


def test_input_specs_cannot_reference_inputs(tmp_path):
    err = error_of(tmp_path, MINIMAL.replace(
        "      x: {shape: [4]}\n", "      x: {shape: [4]}\n      y: {shape: $x}\n"))
    assert "key 'inputs.y.shape': '$x' is an input; input specs can only use params" in str(err)


def test_param_that_is_not_a_list():
    err = load_error("param_not_list.yaml")
    assert str(err) == (
        f"{ERRORS / 'param_not_list.yaml'}:4 case 'neg': key 'params.dtype': expected a "
        "list, got 'float32' (a sweep parameter is a list of values: write [value] for one "
        "value)")


def test_empty_param_list_is_an_error(tmp_path):
    err = error_of(tmp_path, MINIMAL + "    params: {n: []}\n")
    assert "key 'params.n': must not be empty" in str(err)


def test_a_comparison_needs_two_frameworks():
    err = load_error("one_framework.yaml")
    assert str(err) == (
        f"{ERRORS / 'one_framework.yaml'}:2 case 'neg': needs at least 2 framework sections "
        "to compare (found: torch; possible: torch, mindspore, numpy)")


def test_api_must_belong_to_its_framework(tmp_path):
    err = error_of(tmp_path, MINIMAL.replace("numpy.negative", "torch.negative"))
    assert str(err).endswith(
        ":6 case 'neg': key 'numpy.api': 'torch.negative' must start with 'numpy.' or "
        "'Tensor.'")


def test_all_problems_of_a_file_are_reported_in_line_order():
    err = load_error("many_errors.yaml")
    path = ERRORS / "many_errors.yaml"
    assert [line.split(" ", 1)[0] for line in str(err).splitlines()] == [
        f"{path}:4", f"{path}:8", f"{path}:12"]
    assert [(e.line, e.case) for e in err.errors] == [
        (4, "first"), (8, "second"), (12, "third")]
    assert "unknown key 'agrs' (did you mean 'args'?)" in str(err.errors[1])
    assert "'value' is not one of values, shape (did you mean 'values'?)" in str(err.errors[2])
    # The first problem's details are on the combined error too.
    assert (err.line, err.case, err.key) == (4, "first", "inputs.x.dtype")


def test_case_without_a_name_is_numbered(tmp_path):
    err = error_of(tmp_path, MINIMAL.replace("  - name: neg\n    inputs:", "  - inputs:"))
    assert str(err).endswith(":2 case #1: missing required key 'name'")


def test_invalid_names_are_explained_without_regexes(tmp_path):
    err = error_of(tmp_path, MINIMAL.replace("name: neg", "name: neg one")
                   + "    tags: [Shape]\n    params: {2d: [1]}\n")
    lines = str(err).splitlines()
    assert any("key 'name': 'neg one' may only contain letters, digits" in x for x in lines)
    assert any("key 'tags[0]': 'Shape' may only contain lower-case letters" in x for x in lines)
    assert any(":8 case 'neg one': '2d' is not a valid name" in x for x in lines)


def test_top_level_problems_have_no_case(tmp_path):
    err = error_of(tmp_path, "case: []\n")
    assert str(err).splitlines()[0].endswith(":1: unknown key 'case' (did you mean 'cases'?)")
    err = error_of(tmp_path, "")
    assert "empty case file" in str(err)


def test_python_tags_are_refused(tmp_path):
    err = error_of(tmp_path, "cases: !!python/object/apply:os.system ['true']\n")
    assert "invalid YAML" in str(err) and err.line == 1


def test_dist_options_must_fit_the_dist(tmp_path):
    text = MINIMAL.replace("x: {shape: [4]}", "x: {shape: [4], dist: uniform, p: 0.3}")
    assert "key 'inputs.x.p': does not apply to dist 'uniform' (it takes low, high)" in str(
        error_of(tmp_path, text))
    text = MINIMAL.replace("x: {shape: [4]}", "x: {shape: [4], dtype: bool, dist: normal}")
    assert "key 'inputs.x.dist': dtype bool needs dist mask, not 'normal'" in str(
        error_of(tmp_path, text))
    text = MINIMAL.replace("x: {shape: [4]}", "x: {shape: [4], dtype: int32, dist: uniform}")
    assert "dist 'uniform' draws fractional values" in str(error_of(tmp_path, text))
    text = MINIMAL.replace("x: {shape: [4]}", "x: {shape: [], dist: permutation}")
    assert "dist permutation needs at least one dimension" in str(error_of(tmp_path, text))
    text = MINIMAL.replace("x: {shape: [4]}", "x: {shape: [4], dist: randint, low: 3, high: 3}")
    assert "key 'inputs.x.high': must be greater than low (3)" in str(error_of(tmp_path, text))
    text = MINIMAL.replace("x: {shape: [4]}", "x: {shape: [4], dist: positive, low: 0}")
    assert "key 'inputs.x.low': must be > 0 for dist positive" in str(error_of(tmp_path, text))


# ---------------------------------------------------------------------------------------
# Several files
# ---------------------------------------------------------------------------------------


def test_directory_loading_is_recursive_sorted_and_skips_hidden_dirs():
    cases = load_cases([VALID])
    assert [c.name for c in cases] == ["sum_all", "sum_dim", "reshape"]  # nested/ < shape.yaml
    assert cases[0].file == str(VALID / "nested" / "reduce.yml")


def test_the_same_file_reached_twice_is_loaded_once():
    cases = load_cases([VALID, VALID / "shape.yaml"])
    assert [c.name for c in cases].count("reshape") == 1


def test_duplicate_case_name_across_files_names_both():
    err = None
    with pytest.raises(CaseError) as info:
        load_cases([FIXTURES / "duplicate_across"])
    err = info.value
    a, b = FIXTURES / "duplicate_across" / "a.yaml", FIXTURES / "duplicate_across" / "b.yaml"
    assert str(err) == f"{b}:6 case 'softmax': duplicate case name (first defined at {a}:2)"


def test_missing_path_is_an_error(tmp_path):
    with pytest.raises(CaseError, match="no such case file or directory"):
        load_cases([tmp_path / "nope"])


def test_errors_of_every_file_are_collected():
    with pytest.raises(CaseError) as info:
        load_cases([ERRORS / "bad_dtype.yaml", ERRORS / "missing_api.yaml"])
    files = {Path(e.file).name for e in info.value.errors}
    assert files == {"bad_dtype.yaml", "missing_api.yaml"}


# ---------------------------------------------------------------------------------------
# Expansion
# ---------------------------------------------------------------------------------------


def test_sweep_is_the_cross_product_in_file_order_first_param_slowest():
    [case] = load_case_file(VALID / "shape.yaml")
    instances = expand(case)
    assert [i.id for i in instances] == [
        "reshape[shape=8x16,dtype=float32]",
        "reshape[shape=8x16,dtype=float16]",
        "reshape[shape=64x1024,dtype=float32]",
        "reshape[shape=64x1024,dtype=float16]",
    ]
    assert instances[3].params == {"shape": [64, 1024], "dtype": "float16"}
    [x] = instances[3].inputs
    assert (x.name, x.shape, x.dtype, x.dist) == ("x", (64, 1024), "float16", "normal")
    assert x.options == {"mean": 0.0, "std": 1.0}


def test_case_without_params_has_one_instance_named_like_the_case(tmp_path):
    [case] = load_text(tmp_path, MINIMAL)
    [inst] = expand(case)
    assert inst.id == "neg" and inst.params == {} and inst.op == "neg"


def test_calls_hold_refs_substituted_params_and_the_api_line():
    [case] = load_case_file(VALID / "shape.yaml")
    inst = expand(case)[0]
    assert list(inst.calls) == ["torch", "mindspore", "numpy"]
    torch_call = inst.calls["torch"]
    assert torch_call.framework == "torch" and torch_call.api == "torch.reshape"
    assert torch_call.args == (Ref("x"), [-1])
    assert torch_call.kwargs == {}
    assert torch_call.output is None
    assert str(torch_call.location) == f"{VALID / 'shape.yaml'}:13"
    assert inst.calls["mindspore"].location.line == 16


def test_substitution_is_recursive_and_escapes_double_dollar(tmp_path):
    [case] = load_text(tmp_path, """\
cases:
  - name: sub
    params:
      n: [2]
      text: ["$x"]
    inputs:
      x: {shape: [$n, 3], mean: $n}
    torch:
      api: torch.add
      args: [$x, [$n, {k: [$x, $n]}], "$$x", "$$$n", $text, "$1", "plain"]
      kwargs: {alpha: $n, extra: {deep: [$x]}}
      output: [0, 1]
    numpy: {api: numpy.add, args: [$x, $x], output: 0}
""")
    [inst] = expand(case)
    call = inst.calls["torch"]
    # A param value is used literally: "$x" coming from a param is not an input reference.
    assert call.args == (Ref("x"), [2, {"k": [Ref("x"), 2]}], "$x", "$$n", "$x", "$1",
                         "plain")
    assert call.kwargs == {"alpha": 2, "extra": {"deep": [Ref("x")]}}
    assert call.output == (0, 1) and inst.calls["numpy"].output == 0
    assert inst.inputs[0].shape == (2, 3) and inst.inputs[0].options["mean"] == 2


def test_instances_do_not_share_mutable_param_values(tmp_path):
    [case] = load_text(tmp_path, MINIMAL.replace("args: [$x]}", "args: [$x, $s]}")
                       + "    params: {s: [[1, 2]]}\n")
    [inst] = expand(case)
    inst.calls["torch"].args[1].append(99)
    assert inst.calls["numpy"].args == (Ref("x"), [1, 2])
    assert expand(case)[0].calls["torch"].args[1] == [1, 2]


@pytest.mark.parametrize("values, labels", [
    ([[2, 3], [[2, 3], [4]], [], [[]]], ["2x3", "[2x3]x[4]", "empty", "[empty]"]),
    ([1, 1.0, 1e-5, -2, float("inf")], ["1", "1.0", "1e-05", "-2", "inf"]),
    ([True, False, None], ["true", "false", "null"]),
    (["mean", "a b/c", ""], ["mean", "a_b_c", "empty"]),
    ([{"k": 1, "j": [2, 3]}], ["{k=1_j=2x3}"]),
])
def test_id_rendering_of_param_values(tmp_path, values, labels):
    case = case_with_param(tmp_path, values)
    assert [i.id for i in expand(case)] == [f"p[v={label}]" for label in labels]


def test_values_that_render_alike_get_positional_suffixes(tmp_path):
    case = case_with_param(tmp_path, ["a b", "a_b", "a/b", True, "true"])
    ids = [i.id for i in expand(case)]
    assert ids == ["p[v=a_b]", "p[v=a_b~2]", "p[v=a_b~3]", "p[v=true]", "p[v=true~5]"]
    assert len(set(ids)) == len(ids)


def test_ids_are_the_same_on_every_load(tmp_path):
    case = case_with_param(tmp_path, [[8, 16], 0.5, "x"])
    assert [i.id for i in expand(case)] == [i.id for i in expand(load_case_file(
        tmp_path / "case.yaml")[0])]


def case_with_param(tmp_path: Path, values: list) -> Case:
    text = ("cases:\n  - name: p\n    params:\n      v: " + json.dumps(values)
            .replace("Infinity", ".inf") + "\n    torch: {api: torch.abs, args: [$v]}\n"
            "    numpy: {api: numpy.abs, args: [$v]}\n")
    [case] = load_text(tmp_path, text)
    return case


def test_input_defaults_follow_the_dtype(tmp_path):
    [case] = load_text(tmp_path, MINIMAL.replace("x: {shape: [4]}", (
        "x: {shape: [4]}\n      i: {shape: [2], dtype: int64}\n"
        "      b: {shape: [3], dtype: bool}\n      r: {shape: [3], requires_grad: true}")))
    specs = {s.name: s for s in expand(case)[0].inputs}
    assert [s.name for s in expand(case)[0].inputs] == ["x", "i", "b", "r"]
    assert (specs["x"].dtype, specs["x"].dist) == ("float32", "normal")
    assert (specs["i"].dist, dict(specs["i"].options)) == ("randint", {"low": 0, "high": 10})
    assert (specs["b"].dist, dict(specs["b"].options)) == ("mask", {"p": 0.5})
    assert specs["r"].requires_grad is True and specs["x"].requires_grad is None


def test_expand_works_on_a_case_built_in_code():
    case = Case(name="mul", op="mul", file="<code>", line=1, tags=(), description="",
                params={"n": (2, 3)},
                raw={"inputs": {"x": {"shape": ["$n"]}},
                     "torch": {"api": "torch.mul", "args": ["$x", "$x"]},
                     "mindspore": {"api": "mindspore.mint.mul", "args": ["$x", "$x"]}})
    instances = expand(case)
    assert [i.id for i in instances] == ["mul[n=2]", "mul[n=3]"]
    assert instances[1].inputs[0].shape == (3,)
    bad = Case(name="mul", op="mul", file="<code>", line=7, tags=(), description="",
               params={"n": (-1,)}, raw=case.raw)
    with pytest.raises(CaseError, match=r"^<code>:7 case 'mul': key 'inputs.x.shape'"):
        expand(bad)


# ---------------------------------------------------------------------------------------
# Selection
# ---------------------------------------------------------------------------------------


@pytest.fixture()
def library():
    instances = []
    for case in load_cases([VALID]):
        instances.extend(expand(case))
    return instances


def test_select_by_op_keyword_and_tag(library):
    ids = lambda xs: [i.id for i in xs]  # noqa: E731
    assert ids(select(library, ops=["sum"])) == ["sum_all", "sum_dim[dim=0]", "sum_dim[dim=1]"]
    assert ids(select(library, ops="reshape")) == ids(library)[3:]
    assert ids(select(library, keyword="FLOAT16")) == [
        "reshape[shape=8x16,dtype=float16]", "reshape[shape=64x1024,dtype=float16]"]
    assert ids(select(library, tags=["dim", "view"])) == ids(library)[1:]
    assert ids(select(library, tags="reduce")) == ids(library)[:3]
    assert ids(select(library, ops=["sum"], keyword="dim=1")) == ["sum_dim[dim=1]"]
    assert select(library) == library
    assert select(library, ops=["nothing"]) == []


# ---------------------------------------------------------------------------------------
# The schema file itself
# ---------------------------------------------------------------------------------------


def test_schema_is_valid_draft_2020_12_and_matches_the_code():
    schema = json.loads(SCHEMA_PATH.read_text())
    Draft202012Validator.check_schema(schema)
    assert load_schema() == schema
    input_props = schema["$defs"]["input"]["properties"]
    assert input_props["dtype"]["anyOf"][0]["enum"] == list(DTYPES)
    assert input_props["dist"]["anyOf"][0]["enum"] == list(DISTRIBUTIONS)
    assert set(input_props) == {"shape", "dtype", "dist", "requires_grad"} | {
        option for options in DISTRIBUTIONS.values() for option in options}


def walk_schema(node, path=()):
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            yield from walk_schema(value, path + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from walk_schema(value, path + (i,))


def test_every_schema_key_has_a_description_and_every_pattern_a_hint():
    schema = json.loads(SCHEMA_PATH.read_text())
    for path, node in walk_schema(schema):
        if path and path[-1] == "properties":
            for key, sub in node.items():
                assert "description" in sub, f"{path + (key,)} has no description"
        if isinstance(node.get("pattern"), str):
            assert node["pattern"] in PATTERN_HINTS, f"no hint for {node['pattern']}"
    for definition in schema["$defs"].values():
        if definition.get("type") == "object" and "properties" in definition:
            assert definition.get("additionalProperties") is False


def test_declared_work_is_carried_by_the_case(tmp_path):
    [case] = load_text(tmp_path, MINIMAL + "    work: {unit: flops, per_output_element: 5}\n")
    assert case.work == {"unit": "flops", "per_output_element": 5}


@pytest.mark.parametrize("work, complaint", [
    ("{unit: joules, per_output_element: 5}", "'joules' is not one of"),
    ("{unit: flops}", "per_output_element"),
    ("{unit: bytes, per_output_element: 0}", "per_output_element"),
    ("{unit: bytes, per_output_element: .inf}", "finite"),
])
def test_bad_declared_work_names_file_case_and_key(tmp_path, work, complaint):
    err = error_of(tmp_path, MINIMAL + f"    work: {work}\n")
    assert err.case == "neg" and err.file.endswith(".yaml")
    assert "work" in str(err) and complaint in str(err)

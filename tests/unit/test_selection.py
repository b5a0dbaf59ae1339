"""-k, --op and --tag: pytest's expression language, the same selection in every command
and the same items as `pytest cases/ -k ...` (issue #16, point 4)."""
from __future__ import annotations

import pytest
from click.testing import CliRunner
from test_pytest_plugin_fake import plugin_args

from opbench.cases.case_files import expand, load_case_file
from opbench.cases.selection import Selection, SelectionError
from opbench.cli.main import cli
from opbench.config import RunConfig
from opbench.gate.baseline import select_records
from opbench.results.records import InstanceRecord
from opbench.runner.raw_records import instance_header

pytest_plugins = ["pytester"]

CASES = """\
cases:
  - name: add
    tags: [elementwise]
    params:
      shape: [[4, 8], [16]]
      dtype: [float32, float16]
    inputs:
      x: {shape: $shape, dtype: $dtype}
      y: {shape: $shape, dtype: $dtype}
    torch: {api: torch.add, args: [$x, $y]}
    mindspore: {api: mindspore.mint.add, args: [$x, $y]}

  - name: scatter_add
    tags: [indexing]
    params:
      dtype: [float32]
    inputs:
      x: {shape: [4], dtype: $dtype}
    torch: {api: torch.neg, args: [$x]}
    mindspore: {api: mindspore.mint.neg, args: [$x]}

  - name: softmax.wide
    op: softmax
    tags: [reduction]
    inputs:
      x: {shape: [4, 8]}
    torch: {api: torch.softmax, args: [$x], kwargs: {dim: -1}}
    mindspore: {api: mindspore.mint.softmax, args: [$x], kwargs: {dim: -1}}
"""

EXPRESSIONS = ["add and float32", "add[", "not float16", "(add or softmax) and not 16",
               "SOFTMAX", "reduction", "elementwise and 4x8", "scatter or wide",
               "ops.yaml and not add"]


@pytest.fixture
def instances(tmp_path):
    path = tmp_path / "ops.yaml"
    path.write_text(CASES)
    return [i for case in load_case_file(path) for i in expand(case)]


def selected(instances, **kw) -> list[str]:
    return [i.id for i in Selection(**kw).instances(instances)]


def test_keyword_expressions(instances):
    assert selected(instances, keyword="add and float32") == [
        "add[shape=4x8,dtype=float32]", "add[shape=16,dtype=float32]",
        "scatter_add[dtype=float32]"]
    assert selected(instances, keyword="not (add or float16)") == ["softmax.wide"]
    # the op is a name too (a case named `softmax.wide` is op softmax), and the tags
    assert selected(instances, keyword="softmax and reduction") == ["softmax.wide"]


def test_a_word_is_a_substring_as_in_pytest_and_op_is_exact(instances):
    assert "scatter_add[dtype=float32]" in selected(instances, keyword="add[")
    assert all(i.startswith("add[") for i in selected(instances, ops=("add",)))


def test_selection_options_combine(instances):
    assert selected(instances, keyword="float32", ops=("add",), tags=("elementwise",)) == [
        "add[shape=4x8,dtype=float32]", "add[shape=16,dtype=float32]"]
    assert selected(instances, tags=("indexing", "reduction")) == [
        "scatter_add[dtype=float32]", "softmax.wide"]


def test_a_single_word_with_equals_stays_a_substring(instances):
    assert selected(instances, keyword="shape=16") == [
        "add[shape=16,dtype=float32]", "add[shape=16,dtype=float16]"]


def test_a_bad_expression_is_refused_with_a_hint():
    with pytest.raises(SelectionError, match="not a valid expression"):
        Selection(keyword="add and (float32")
    with pytest.raises(SelectionError, match="-k 8x16"):
        Selection(keyword="add and shape=8x16")


def test_selection_of_records_matches_instances(instances):
    records = [InstanceRecord.from_dict(instance_header(i, RunConfig())) for i in instances]
    for expression in EXPRESSIONS:
        sel = Selection(keyword=expression)
        assert [r.id for r in select_records(records, keyword=expression)] == [
            i.id for i in sel.instances(instances)], expression


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_same_items_as_pytest_k(pytester, instances, expression):
    """The reference is pytest itself, collecting the same file with the same -k."""
    pytester.makefile(".yaml", ops=CASES)
    result = pytester.runpytest_inprocess(*plugin_args(), "--collect-only", "-q",
                                          "-k", expression, "ops.yaml")
    collected = [line.split("::", 1)[1] for line in result.outlines if "::" in line]
    assert collected == selected(instances, keyword=expression)


@pytest.mark.parametrize("command", ["run", "compare", "check", "list", "gate"])
def test_every_case_command_has_the_same_selection_options(command):
    params = {p.name: p for p in cli.commands[command].params}
    for name in ("keyword", "ops", "tags"):
        assert name in params, f"opbench {command} has no {name} option"
    assert params["keyword"].opts == ["-k"]
    assert params["ops"].opts == ["--op"] and params["tags"].opts == ["--tag"]


def test_list_takes_an_expression_and_op(tmp_path):
    path = tmp_path / "ops.yaml"
    path.write_text(CASES)
    result = CliRunner().invoke(cli, ["list", str(path), "-k", "add and float32",
                                      "--op", "add", "--instances"])
    assert result.exit_code == 0, result.output
    assert result.stdout.split() == ["add[shape=4x8,dtype=float32]",
                                     "add[shape=16,dtype=float32]"]
    bad = CliRunner().invoke(cli, ["list", str(path), "-k", "add and ("])
    assert bad.exit_code == 2 and "not a valid expression" in bad.stderr

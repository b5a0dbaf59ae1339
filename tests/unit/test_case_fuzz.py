"""Property-based fuzzing of the case loader (issue #15): random and mutated case files
never produce a traceback, only cases or a CaseError naming the file; the CLI exits 0 or 2.
Bounded (examples, size, deadline) for a shared 2-core machine."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opbench.cases.case_files import CaseError, expand, load_case_file
from opbench.cli.main import cli

VALID = (Path(__file__).parent / "fixtures" / "cases" / "valid" / "shape.yaml").read_text()
FUZZ = settings(max_examples=150, deadline=2000, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
# Fragments that stress the parser and the checks: anchors, aliases, merges, tags, deep
# brackets, non-finite numbers, hostile API paths, huge shapes and sweeps.
FRAGMENTS = ["&a ", "*a", "<<: ", "!!python/object:os.system ", "[", "]", "{", "}", ": ",
             "- ", "\n", "  ", ".inf", ".nan", "1e400", "torch.os.system",
             "Tensor.__class__", "[100000, 100000]", "$x", "$$y", "~", "'", '"', "\t",
             "params: {a: [1, 2, 3]}", "cases:", "name: x", "&b [*a, *a]", "\x00", "é"]


def load(tmp_path: Path, text: str) -> None:
    path = tmp_path / "fuzz.yaml"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    try:
        for case in load_case_file(path):
            expand(case)
    except CaseError as exc:
        assert str(exc).startswith(str(path)), str(exc)


@FUZZ
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=400))
def test_random_text_never_crashes_the_loader(tmp_path, text):
    load(tmp_path, text)


def mutated(edits) -> str:
    """VALID with each (position, cut, fragment) edit applied in turn."""
    text = VALID
    for position, cut, fragment in edits:
        position = min(position, len(text))
        text = text[:position] + fragment + text[position + cut:]
    return text


@FUZZ
@given(st.lists(st.tuples(st.integers(0, len(VALID)), st.integers(0, 20),
                          st.sampled_from(FRAGMENTS)), max_size=6))
def test_mutated_case_files_never_crash_the_loader(tmp_path, edits):
    text = mutated(edits)
    load(tmp_path, text)


@settings(max_examples=40, deadline=5000, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, len(VALID)), st.integers(0, 20),
                          st.sampled_from(FRAGMENTS)), max_size=4))
def test_the_cli_exits_0_or_2_without_a_traceback(tmp_path, edits):
    text = mutated(edits)
    path = tmp_path / "fuzz.yaml"
    path.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(cli, ["list", str(path)])
    assert result.exit_code in (0, 2), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        repr(result.exception))
    assert "Traceback" not in result.output


@pytest.mark.parametrize("levels", [10, 40])
def test_nested_anchors_inside_cases_are_bounded(tmp_path, levels):
    lines = ["cases:", "  - name: x", "    params:", "      a0: &a0 [1, 2]"]
    lines += [f"      a{i}: &a{i} [*a{i - 1}, *a{i - 1}]" for i in range(1, levels)]
    load(tmp_path, "\n".join(lines) + "\n")

"""One vocabulary (config/vocabulary.py): frameworks, timing modes, launch modes and dtypes
are spelled once. A module-level copy of one of its tuples elsewhere in opbench is a second
definition that can drift (issue 33 found INT_DTYPES twice with different contents)."""
from __future__ import annotations

import ast
from pathlib import Path

from opbench.config import vocabulary as v
from opbench.frameworks.dtypes import MINDSPORE_DTYPE_ATTRS, TORCH_DTYPE_ATTRS

REPO = Path(__file__).resolve().parents[2]
VOCABULARY = {name: getattr(v, name) for name in v.__all__
              if isinstance(getattr(v, name), tuple)}
# Copies allowed for a reason (none today: model/ and runner/ import the vocabulary's names
# since the merge). None may be added without one.
KNOWN_COPIES: set[tuple[str, str]] = set()


def module_level_copies() -> set[tuple[str, str]]:
    """(file, name) of every module-level NAME = (literal tuple) equal to a vocabulary
    tuple, outside config/vocabulary.py."""
    values = {value: name for name, value in VOCABULARY.items()}
    found = set()
    for path in sorted((REPO / "opbench").rglob("*.py")):
        rel = str(path.relative_to(REPO))
        if rel == "opbench/config/vocabulary.py":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple):
                try:
                    value = ast.literal_eval(node.value)
                except ValueError:
                    continue
                if value in values:
                    found |= {(rel, t.id) for t in node.targets if isinstance(t, ast.Name)}
    return found


def test_no_module_spells_the_vocabulary_again():
    new = module_level_copies() - KNOWN_COPIES
    assert not new, f"import these from opbench.config.vocabulary instead: {sorted(new)}"


def test_the_two_integer_sets_are_named_apart_and_nested():
    """The case library draws int32/int64 inputs; a model hands over any integer width."""
    assert set(v.CASE_INT_DTYPES) < set(v.INTEGER_DTYPES)
    assert set(v.CASE_DTYPES) == {*v.FLOAT_DTYPES, *v.CASE_INT_DTYPES, "bool"}
    assert not set(v.FLOAT_DTYPES) & set(v.INTEGER_DTYPES)


def test_both_adapters_spell_every_dtype_a_model_replay_makes():
    """The case library's dtypes and, for a model's replay, the complex ones (torch.fft)."""
    assert set(TORCH_DTYPE_ATTRS) == set(MINDSPORE_DTYPE_ATTRS) == set(v.MODEL_DTYPES)
    assert set(v.MODEL_DTYPES) == {*v.CASE_DTYPES, *v.MODEL_ONLY_INT_DTYPES, *v.COMPLEX_DTYPES}
    assert {"uint8", "int8", "int16"} <= set(v.MODEL_DTYPES)   # issue 45
    assert not set(v.COMPLEX_DTYPES) & set(v.CASE_DTYPES)

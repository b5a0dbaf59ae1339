"""Cases built in memory (cases/case_files.py load_case_data): what `opbench model` measures
alone reaches the core without a YAML file, checked as a file's cases are."""
from __future__ import annotations

import pytest

from opbench.cases.case_files import CaseError, expand, load_case_data, load_case_file

CASE = {"name": "add_alone", "torch": {"api": "torch.add", "args": ["$x", "$y"]},
        "mindspore": {"api": "mindspore.ops.add", "args": ["$x", "$y"]},
        "inputs": {"x": {"shape": [8, 16]}, "y": {"shape": [8, 16]}}}


def test_cases_from_data_are_the_cases_of_the_same_yaml(tmp_path):
    import yaml

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"cases": [CASE]}, sort_keys=False), encoding="utf-8")
    from_file = [i.id for c in load_case_file(path) for i in expand(c)]
    from_data = [i.id for c in load_case_data({"cases": [CASE]}, "<test>") for i in expand(c)]
    assert from_data == from_file and from_data


def test_a_bad_case_in_memory_names_the_source_the_case_and_the_key():
    bad = {**CASE, "torch": {"api": "torch.add", "args": ["$x", "$nope"]}}
    with pytest.raises(CaseError) as caught:
        load_case_data({"cases": [bad]}, "<opbench model: calls measured alone>")
    text = str(caught.value)
    assert "<opbench model: calls measured alone>" in text and "add_alone" in text
    assert "nope" in text


def test_the_callers_data_is_left_as_it_was():
    data = {"cases": [dict(CASE)]}
    load_case_data(data, "<test>")
    assert data == {"cases": [CASE]}

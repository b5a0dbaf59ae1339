"""The shipped torch <-> MindSpore mapping and its loader (no framework imported)."""
from __future__ import annotations

import collections
import importlib.resources
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from opbench.frameworks.apimap import (
    KINDS,
    STATUSES,
    ApiMapping,
    MappingError,
    load_mapping,
    parse_mapping,
)

MIN_SHIPPED_ENTRIES = 300  # the floor: enough to cover what real models call


def shipped_raw() -> list[dict]:
    text = importlib.resources.files("opbench").joinpath("data/api_mapping.yaml").read_text()
    return yaml.safe_load(text)


def test_loader_imports_no_framework():
    # In a fresh interpreter: scan and report load the mapping without paying for torch.
    code = ("import sys; from opbench.frameworks.apimap import load_mapping; load_mapping(); "
            "print('torch' in sys.modules, 'mindspore' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]


def test_shipped_mapping_is_large_enough():
    assert len(load_mapping()) >= MIN_SHIPPED_ENTRIES


def test_shipped_mapping_is_cached():
    assert load_mapping() is load_mapping()


def test_shipped_file_has_no_duplicate_torch_names():
    counts = collections.Counter(entry["torch"] for entry in shipped_raw())
    assert [name for name, n in counts.items() if n > 1] == []


def test_shipped_statuses_and_kinds_are_valid_and_notes_present():
    mapping = load_mapping()
    for entry in mapping.entries:
        assert entry.status in STATUSES, entry
        assert entry.kind in KINDS, entry
        if entry.status in ("differs", "none"):
            assert entry.note.strip(), entry
        assert (entry.mindspore is None) == (entry.status == "none"), entry


def test_shipped_mapping_uses_every_status_and_the_main_kinds():
    mapping = load_mapping()
    assert {e.status for e in mapping.entries} == set(STATUSES)
    kinds = {e.kind for e in mapping.entries}
    assert {"function", "functional", "tensor_method", "module"} <= kinds


@pytest.mark.parametrize("torch_name, mindspore_name", [
    ("torch.sum", "mindspore.mint.sum"),
    ("torch.nn.functional.softmax", "mindspore.mint.nn.functional.softmax"),
    ("torch.Tensor.sum", "mindspore.Tensor.sum"),
    ("torch.Tensor.__add__", "mindspore.Tensor.__add__"),
    ("torch.nn.Conv2d", "mindspore.mint.nn.Conv2d"),
    ("torch.matmul", "mindspore.mint.matmul"),
])
def test_well_known_entries_map_both_ways(torch_name, mindspore_name):
    mapping = load_mapping()
    entry = mapping.from_torch(torch_name)
    assert entry is not None and entry.mindspore == mindspore_name
    assert mapping.from_mindspore(mindspore_name).mindspore == mindspore_name
    assert mapping.lookup("torch", torch_name) is entry
    assert mapping.lookup("mindspore", mindspore_name).mindspore == mindspore_name


def test_entries_without_equivalent_are_not_reverse_mapped():
    mapping = load_mapping()
    entry = mapping.from_torch("torch.nn.functional.scaled_dot_product_attention")
    assert entry.status == "none" and entry.mindspore is None and "compose" in entry.note
    assert mapping.from_mindspore("None") is None


def test_alternatives_map_back_to_torch():
    # MindSpore code written for CPU calls ops.gelu (mint's gelu has no CPU kernel there);
    # the reverse lookup must still find torch's gelu, while the primary counterpart stays mint.
    mapping = load_mapping()
    entry = mapping.from_mindspore("mindspore.ops.gelu")
    assert entry is not None and entry.torch == "torch.nn.functional.gelu"
    assert entry.mindspore == "mindspore.mint.nn.functional.gelu"
    assert "mindspore.ops.gelu" in entry.alternatives


def test_a_primary_name_beats_an_alternative(tmp_path):
    text = yaml.safe_dump([
        {"torch": "torch.dot", "mindspore": "mindspore.mint.dot", "kind": "function",
         "status": "same", "note": "x", "alternatives": ["mindspore.ops.inner"]},
        {"torch": "torch.inner", "mindspore": "mindspore.ops.inner", "kind": "function",
         "status": "same"},
    ])
    mapping = parse_mapping(text, "m.yaml")
    assert mapping.from_mindspore("mindspore.ops.inner").torch == "torch.inner"
    assert mapping.from_torch("torch.dot").alternatives == ("mindspore.ops.inner",)


def test_unknown_names_return_none():
    mapping = load_mapping()
    assert mapping.from_torch("torch.no_such_function") is None
    assert mapping.from_mindspore("mindspore.no_such_function") is None


def test_load_mapping_reads_an_explicit_path(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(textwrap.dedent("""\
        - torch: torch.abs
          mindspore: mindspore.mint.abs
          kind: function
          status: same
        - torch: torch.nn.functional.softmax
          mindspore: mindspore.ops.softmax
          kind: functional
          status: differs
          note: "dim vs axis"
        """))
    mapping = load_mapping(path)
    assert isinstance(mapping, ApiMapping) and len(mapping) == 2
    assert mapping.from_mindspore("mindspore.ops.softmax").note == "dim vs axis"


GOOD = {"torch": "torch.abs", "mindspore": "mindspore.mint.abs", "kind": "function",
        "status": "same"}


@pytest.mark.parametrize("change, message", [
    ({"status": "maybe"}, "status 'maybe' is not one of"),
    ({"kind": "method"}, "kind 'method' is not one of"),
    ({"status": "differs"}, "needs a note"),
    ({"status": "none", "mindspore": None}, "needs a note"),
    ({"status": "none", "note": "n/a"}, "null exactly when status is none"),
    ({"mindspore": None, "note": "x", "status": "differs"}, "null exactly when status is none"),
    ({"mindspore": "numpy.abs"}, "must be a dotted name starting with 'mindspore.'"),
    ({"torch": 3}, "must be a dotted name starting with 'torch.'"),
    ({"colour": "red"}, "unknown key(s) colour"),
    ({"note": ["a"]}, "note must be a string"),
    ({"alternatives": "mindspore.ops.abs"}, "alternatives must be a list"),
    ({"alternatives": ["torch.abs"]}, "alternatives must be a list"),
])
def test_invalid_entries_are_rejected_with_the_entry_named(change, message):
    entry = {**GOOD, **change}
    text = yaml.safe_dump([GOOD | {"torch": "torch.neg", "mindspore": "mindspore.mint.neg"},
                           entry])
    with pytest.raises(MappingError) as info:
        parse_mapping(text, "m.yaml")
    assert message in str(info.value)
    assert str(info.value).startswith("m.yaml: entry 2")


def test_missing_keys_are_listed():
    with pytest.raises(MappingError, match=r"entry 1 \(torch.abs\): missing key\(s\) kind"):
        parse_mapping(yaml.safe_dump([{"torch": "torch.abs", "mindspore": None,
                                       "status": "none", "note": "x"}]), "m.yaml")


def test_duplicate_torch_names_are_rejected():
    with pytest.raises(MappingError, match=r"entry 2 \(torch.abs\): duplicate torch name"):
        parse_mapping(yaml.safe_dump([GOOD, GOOD]), "m.yaml")


@pytest.mark.parametrize("text, message", [
    ("{a: 1}", "expected a list of entries"),
    ("- [1, 2]", "entry 1: expected a mapping"),
    ("- torch: [", "not valid YAML"),
])
def test_malformed_files_are_rejected(text, message):
    with pytest.raises(MappingError, match=message):
        parse_mapping(text, "m.yaml")


def _overrides_module():
    tools = str(Path(__file__).resolve().parents[2] / "tools")
    sys.path.insert(0, tools)
    try:
        import mapping_overrides
    finally:
        sys.path.remove(tools)
    return mapping_overrides


def test_every_hand_listed_alternative_is_in_the_shipped_mapping():
    """The YAML is generated (tools/build_api_mapping.py); an alternative added to it by hand
    is lost at the next build (seven were, until ALSO_NAMED held them). Every ALSO_NAMED name
    and every CPU route's MindSpore name is listed under its entry's `alternatives`."""
    overrides = _overrides_module()
    by_torch = {e["torch"]: e for e in shipped_raw()}
    by_mindspore: dict[str, list[dict]] = collections.defaultdict(list)
    for e in shipped_raw():
        by_mindspore[e.get("mindspore")].append(e)
    for torch_name, names in overrides.ALSO_NAMED.items():
        listed = by_torch[torch_name].get("alternatives", [])
        assert all(n in listed for n in names), (torch_name, names, listed)
    for mint_name, text in overrides.CPU_ROUTES.items():
        route = re.search(r"mindspore(?:\.[A-Za-z_]\w*)+", text)
        for entry in by_mindspore.get(mint_name, []):
            assert route is None or route.group(0) in entry.get("alternatives", []), \
                (entry["torch"], mint_name, text)

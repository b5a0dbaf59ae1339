"""The package's shape, held: no import loop (an import inside a function counts), nothing
but __init__ directly under opbench/, and the longest chain of module imports no longer
than today's. The layer rule itself is the import-linter contract in pyproject.toml, run by
`lint-imports` in CI; this test needs only grimp, which import-linter brings."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

grimp = pytest.importorskip("grimp")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from import_graph import figures  # noqa: E402

# Measured on the layout of issue 22 (tools/import_graph.py): 11 modules, e.g. cli/__main__ ->
# cli/main -> cli/gate -> report/gate_junit -> report/gate_markdown -> gate/evaluate ->
# gate/noise -> gate/pool -> verdicts/conclusions -> verdicts/interference -> verdicts/stats.
# Before it: 16, with a loop of six modules in the middle. It may shrink, not grow - except
# by the one leaf added under the configuration in issue 33: config/vocabulary.py (the names
# of frameworks, modes and dtypes, which config/__init__.py's RunConfig checks against)
# ends chains that ended at opbench.config one module later, e.g. ... -> results/records ->
# results/io -> config -> config/vocabulary: 12. Nothing above the configuration grew.
# Likewise config/record_codec.py (issue 33: a mapping read as a frozen dataclass by its
# fields, for every layer below results/): the case records (cases/case_model.py: CaseSpec),
# a leaf until then, now read a case's mapping through it, so ... -> runner/session ->
# runner/raw_records -> cases/case_files -> cases/case_expansion -> cases/case_model ->
# config/record_codec is 13. Again nothing above the configuration grew.
MAX_CHAIN = 13
MAX_TOP_LEVEL_MODULES = 12


@pytest.fixture(scope="module")
def graph_figures():
    return figures("opbench")


def test_no_import_loops(graph_figures):
    assert graph_figures["loops"] == []


def test_the_top_level_holds_packages_not_modules(graph_figures):
    assert len(graph_figures["top_level_modules"]) <= MAX_TOP_LEVEL_MODULES
    assert graph_figures["top_level_modules"] == []


def test_the_longest_import_chain_does_not_grow(graph_figures):
    chain = graph_figures["longest_chain"]
    assert len(chain) <= MAX_CHAIN, " -> ".join(chain)


def test_a_loop_is_found_where_there_is_one(tmp_path, monkeypatch):
    package = tmp_path / "loopy"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from loopy import b\n")
    (package / "b.py").write_text("from loopy import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = figures("loopy")
    assert found["loops"] == [["loopy.a", "loopy.b"]]

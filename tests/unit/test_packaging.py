"""The installable package (issue #16, points 1, 5 and 8): the wheel's package list, the case
library shipped from the one cases/ directory, dependency ranges that match what is tested,
the CI wheel check, the CPU-only PyTorch set-up, and editor support for case files. The
wheel itself is built and run from an empty directory by .ci/wheel-check (CI)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import tomllib

from opbench.cases import library
from opbench.cases.case_files import load_schema

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]
CONSTRAINTS = dict(line.split("==") for line in (REPO / ".ci" / "constraints.txt").read_text()
                   .splitlines() if "==" in line and not line.startswith("#"))
MODELINE = "# yaml-language-server: $schema=../opbench/schema/case.schema.json"
# The extras .ci/setup installs (its `pip install ... -e ".[a,b,c]"`).
SETUP_EXTRAS = set(re.search(r'-e "\.\[([\w,-]+)\]"', (REPO / ".ci" / "setup").read_text())
                   .group(1).split(","))


def test_every_package_directory_is_in_the_wheel():
    on_disk = {".".join(p.parent.relative_to(REPO).parts)
               for p in (REPO / "opbench").rglob("__init__.py")}
    on_disk |= {"opbench.schema", "opbench.data"}
    listed = set(SETUPTOOLS["packages"])
    assert on_disk <= listed, f"add to pyproject.toml packages: {sorted(on_disk - listed)}"


def test_the_wheel_takes_the_case_library_from_the_one_cases_directory():
    assert SETUPTOOLS["package-dir"] == {"opbench.case_library": "cases"}
    assert "*.yaml" in SETUPTOOLS["package-data"]["opbench.case_library"]
    assert not (REPO / "opbench" / "case_library").exists()       # no second copy
    assert library.shipped_cases_dir() == REPO / "cases"            # a checkout finds it


def test_an_installed_library_wins_over_a_checkout(tmp_path, monkeypatch):
    packaged = tmp_path / "case_library"
    packaged.mkdir()
    (packaged / "x.yaml").write_text("cases: []\n")
    monkeypatch.setattr(library, "PACKAGED_DIR", packaged)
    assert library.shipped_cases_dir() == packaged
    monkeypatch.setattr(library, "PACKAGED_DIR", tmp_path / "none")
    monkeypatch.setattr(library, "CHECKOUT_DIR", tmp_path / "none")
    with pytest.raises(library.LibraryMissing, match="reinstall opbench"):
        library.shipped_cases_dir()


def test_declared_pytest_benchmark_range_is_the_tested_series():
    """bench_entries.py builds entries from pytest-benchmark's internal classes: the range
    may only hold the series the tests run (its lower bound's major.minor is the pin's)."""
    (spec,) = [d for d in PYPROJECT["project"]["dependencies"]
               if d.startswith("pytest-benchmark")]
    low, high = re.match(r"pytest-benchmark>=([\d.]+),<([\d.]+)", spec).groups()
    pinned = CONSTRAINTS["pytest-benchmark"]
    assert pinned.split(".")[:2] == low.split(".")[:2]
    assert int(pinned.split(".")[0]) < int(high)
    from importlib.metadata import version

    assert version("pytest-benchmark").split(".")[:2] == low.split(".")[:2]


def test_histogram_extra_installs_pygal_and_ci_pins_it():
    assert any("histogram" in dep for dep in PYPROJECT["project"]["optional-dependencies"]
               ["histogram"])
    assert CONSTRAINTS["pygal"] == "3.1.3" and "pygaljs" in CONSTRAINTS
    assert {"test", "plot", "histogram"} <= SETUP_EXTRAS


def test_examples_extra_installs_transformers_in_the_pinned_series():
    """examples/bert builds a transformers BertModel; CI installs the extra and pins the
    version, and the extra's range holds the pin."""
    (spec,) = [d for d in PYPROJECT["project"]["optional-dependencies"]["examples"]
               if d.startswith("transformers")]
    low, high = re.match(r"transformers>=([\d.]+),<([\d.]+)", spec).groups()
    pinned = CONSTRAINTS["transformers"]
    assert int(low.split(".")[0]) <= int(pinned.split(".")[0]) < int(high)
    assert "examples" in SETUP_EXTRAS


def test_ci_runs_the_wheel_check_and_offers_the_cpu_torch_index():
    run = (REPO / ".ci" / "run").read_text()
    assert "bash .ci/wheel-check" in run
    check = (REPO / ".ci" / "wheel-check").read_text()
    assert 'cd "$work/empty"' in check and "compare reshape -k 8x16" in check
    assert "TORCH_INDEX_URL" in (REPO / ".ci" / "setup").read_text()
    readme = (REPO / "README.md").read_text()
    assert "--index-url https://download.pytorch.org/whl/cpu" in readme
    # no install line in the README or the docs (the CI jobs live in docs/gate.md) installs
    # torch plainly: that pulls the CUDA build
    ci_jobs = (REPO / "docs" / "gate.md").read_text()
    assert "runs-on: ubuntu-latest" in ci_jobs
    for page in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for line in page.read_text().splitlines():
            if re.match(r"\s*(run:\s*)?pip install", line) and re.search(r"\btorch\b", line):
                assert "--index-url https://download.pytorch.org/whl/cpu" in line, (page, line)


def test_case_schema_has_an_id_and_every_shipped_file_names_it():
    schema = load_schema()
    assert schema["$id"].startswith("https://") and schema["$id"].endswith(".json")
    results = json.loads((REPO / "opbench" / "schema" / "results.schema.json").read_text())
    assert schema["$id"].rsplit("/", 1)[0] == results["$id"].rsplit("/", 1)[0]
    files = sorted((REPO / "cases").glob("*.yaml"))
    assert files
    for path in files:
        first = path.read_text().splitlines()[0]
        assert first == MODELINE, path
        target = (path.parent / first.split("$schema=", 1)[1]).resolve()
        assert target == (REPO / "opbench" / "schema" / "case.schema.json").resolve()


def test_docs_say_how_to_point_editors_at_the_schema():
    case_format = (REPO / "docs" / "case-format.md").read_text()
    assert "yaml.schemas" in case_format and "JSON Schema Mappings" in case_format
    assert "opbench schema case > case.schema.json" in case_format
    readme = (REPO / "README.md").read_text()
    assert "docs/case-format.md#editors-completion-and-checking-while-you-write-cases" in readme

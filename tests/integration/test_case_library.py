"""The shipped case library (cases/*.yaml): it loads, its APIs exist, and it covers what the
library promises (operator count, backward coverage, sizes, dtypes)."""
from __future__ import annotations

import collections
import os
from pathlib import Path

import pytest

from opbench.cases.case_files import CaseInstance, expand, load_cases
from opbench.frameworks.apimap import load_mapping

pytestmark = pytest.mark.integration

os.environ.setdefault("GLOG_v", "3")  # keep MindSpore's import chatter out of the output

CASES_DIR = Path(__file__).resolve().parents[2] / "cases"
CASE_FILES = sorted(CASES_DIR.glob("*.yaml"))

# What the library promises (issue 4): breadth, gradient coverage, and one dispatch-bound,
# one medium and one kernel-bound size per operator.
MIN_OPERATORS = 80
MIN_BACKWARD_OPERATORS = 25
MIN_SIZES_PER_OPERATOR = 3
REQUIRED_DTYPES = {"float32", "float16", "bfloat16", "int32", "int64", "bool"}
REQUIRED_FAMILY_FILES = {
    "elementwise.yaml", "activations.yaml", "reductions.yaml", "shape.yaml", "indexing.yaml",
    "linalg.yaml", "conv_pool.yaml", "norm.yaml", "loss.yaml", "attention.yaml", "random.yaml",
}
FRAMEWORKS = ("torch", "mindspore")


@pytest.fixture(scope="module")
def cases():
    return load_cases([CASES_DIR])


@pytest.fixture(scope="module")
def instances(cases) -> list[CaseInstance]:
    return [inst for case in cases for inst in expand(case)]


def test_family_files_are_present():
    assert REQUIRED_FAMILY_FILES <= {path.name for path in CASE_FILES}


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: p.name)
def test_each_file_loads_and_expands_on_its_own(path):
    file_cases = load_cases([path])
    assert file_cases
    for case in file_cases:
        assert expand(case), case.name


def test_operator_and_backward_counts(cases):
    operators = {case.op for case in cases}
    backward = {case.op for case in cases if case.backward}
    assert len(operators) >= MIN_OPERATORS
    assert len(backward) >= MIN_BACKWARD_OPERATORS


def test_every_operator_runs_at_three_sizes_at_least(instances):
    sizes: dict[str, set] = collections.defaultdict(set)
    for inst in instances:
        if inst.inputs:
            sizes[inst.op].add(tuple(spec.shape for spec in inst.inputs))
        else:  # factories (randperm): the size is a parameter
            sizes[inst.op].add(tuple(sorted((k, repr(v)) for k, v in inst.params.items())))
    too_few = {op: len(s) for op, s in sizes.items() if len(s) < MIN_SIZES_PER_OPERATOR}
    assert too_few == {}


def test_dtypes_covered(instances):
    seen = {spec.dtype for inst in instances for spec in inst.inputs}
    assert REQUIRED_DTYPES <= seen


def test_every_case_compares_torch_with_mindspore(cases, instances):
    for inst in instances:
        assert set(FRAMEWORKS) <= set(inst.calls), inst.id


def test_known_disagreements_say_why(cases):
    for case in cases:
        if case.expect_mismatch is not None:
            assert len(case.expect_mismatch.split()) >= 5, case.name


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_api_resolves(instances, framework):
    pytest.importorskip(framework)
    from opbench.frameworks import get_adapter

    adapter = get_adapter(framework)
    apis = sorted({inst.calls[framework].api for inst in instances})
    unresolved = []
    for api in apis:
        try:
            adapter.resolve(api)
        except Exception as exc:  # noqa: BLE001 - report every failure, not the first
            unresolved.append(f"{api}: {exc}")
    assert unresolved == []


def test_every_torch_api_used_by_a_case_is_in_the_mapping(instances):
    mapping = load_mapping()
    missing = set()
    for inst in instances:
        api = inst.calls["torch"].api
        name = "torch." + api if api.startswith("Tensor.") else api
        if mapping.from_torch(name) is None:
            missing.add(name)
    assert missing == set()

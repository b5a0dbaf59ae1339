"""Which APIs the case library measures, so a scan row can say "a case covers this"."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Mapping

from opbench.config.vocabulary import FRAMEWORKS
CASE_FILE_SUFFIXES = (".yaml", ".yml")

CoveredApis = Mapping[str, frozenset[str]]   # framework -> full API names


def normalise_case_api(framework: str, api: str) -> str:
    """Cases write Tensor methods as `Tensor.sum`; scan rows name them `torch.Tensor.sum`."""
    return f"{framework}.{api}" if api.startswith("Tensor.") else api


def covered_apis(instances: Iterable) -> dict[str, frozenset[str]]:
    """The APIs each framework's side of the case instances calls (CaseInstance.calls)."""
    found: dict[str, set[str]] = {framework: set() for framework in FRAMEWORKS}
    for instance in instances:
        for framework, call in instance.calls.items():
            if framework in found and getattr(call, "api", None):
                found[framework].add(normalise_case_api(framework, call.api))
    return {framework: frozenset(apis) for framework, apis in found.items()}


def default_cases_dir() -> Path | None:
    """The case library: $OPBENCH_CASES or ./cases (as for `opbench run`), else the
    `cases/` of the source checkout opbench runs from. An installed opbench sits in
    site-packages, whose neighbouring `cases/` (if any) belongs to someone else, so the
    checkout is recognised by its pyproject.toml."""
    env = os.environ.get("OPBENCH_CASES")
    if env:
        return Path(env) if Path(env).exists() else None
    if Path("cases").is_dir():
        return Path("cases")
    checkout = Path(__file__).resolve().parent.parent.parent   # .../<checkout>/opbench/scan
    candidate = checkout / "cases"
    if candidate.is_dir() and (checkout / "pyproject.toml").is_file():
        return candidate
    return None


def case_files(cases_dir: str | os.PathLike) -> list[str]:
    root = Path(cases_dir)
    if root.is_file():
        return [str(root)]
    # hidden directories are skipped, as opbench.cases.load_cases does
    return sorted(str(p) for p in root.rglob("*") if p.suffix in CASE_FILE_SUFFIXES
                  and not any(part.startswith(".") for part in p.relative_to(root).parts))


def load_covered_apis(cases_dir: str | os.PathLike) -> dict[str, frozenset[str]]:
    """Load and expand the case files under `cases_dir`. Raises opbench.cases.CaseError on a
    bad case file."""
    from opbench.cases.case_files import expand, load_cases

    instances = []
    files = case_files(cases_dir)
    if files:
        for case in load_cases(files):
            instances.extend(expand(case))
    return covered_apis(instances)

"""The Python the project declares is the Python its code needs: pyproject's requires-python
against the newest standard-library module the package imports (issue 33: config/sides.py
imported tomllib, 3.11+, while pyproject said >=3.10, so on 3.10 every command failed at
import), and the set-up script and docs/cli.md say the same minimum."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parents[2]
# Standard-library modules newer than the oldest Python anyone might declare, with the
# version that added them. An import inside `try:` (with a fallback) does not count.
NEWER_STDLIB = {"tomllib": (3, 11), "wsgiref.types": (3, 11)}


def declared_minimum() -> tuple[int, int]:
    spec = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    found = re.fullmatch(r">=\s*(\d+)\.(\d+)", spec.strip())
    assert found, f"requires-python {spec!r}: expected '>=X.Y'"
    return int(found.group(1)), int(found.group(2))


def _unguarded_imports(tree: ast.AST) -> list[str]:
    """Module names imported outside a try block."""
    guarded = {id(node) for t in ast.walk(tree) if isinstance(t, ast.Try)
               for stmt in t.body for node in ast.walk(stmt)}
    names = []
    for node in ast.walk(tree):
        if id(node) in guarded:
            continue
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
    return names


def needed_by_the_package() -> dict[str, tuple[int, int]]:
    """{file: the Python its newest standard-library import needs}, for files that need
    more than the oldest in NEWER_STDLIB's reach."""
    needs = {}
    for path in sorted((REPO / "opbench").rglob("*.py")):
        versions = [NEWER_STDLIB[name] for name in
                    _unguarded_imports(ast.parse(path.read_text(encoding="utf-8")))
                    if name in NEWER_STDLIB]
        if versions:
            needs[str(path.relative_to(REPO))] = max(versions)
    return needs


def test_the_declared_minimum_covers_every_import():
    minimum = declared_minimum()
    needs = needed_by_the_package()
    too_new = {f: v for f, v in needs.items() if v > minimum}
    assert not too_new, (f"requires-python >={minimum[0]}.{minimum[1]}, but {too_new} need "
                         f"more: raise it, or import a fallback inside try")


def test_the_check_sees_an_unguarded_tomllib_and_ignores_a_guarded_one():
    assert needed_by_the_package().get("opbench/config/environment_table.py") == (3, 11)
    guarded = ast.parse("try:\n    import tomllib\n"
                        "except ImportError:\n    import tomli as tomllib\n")
    assert _unguarded_imports(guarded) == ["tomli"]     # the fallback, in the handler
    assert _unguarded_imports(ast.parse("from tomllib import loads")) == ["tomllib"]


def test_the_set_up_script_and_the_docs_state_the_same_minimum():
    major, minor = declared_minimum()
    stated = f"{major}.{minor}+"
    assert f"python3 ({stated})" in (REPO / ".ci" / "setup").read_text()
    assert f"Python {stated} and access to the package registry" in (
        REPO / "docs" / "cli.md").read_text()

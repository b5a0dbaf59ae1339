"""The paths and links the docs name exist: README.md, ARCHITECTURE.md and every docs/*.md
page. A package re-layout left README and docs naming a dozen modules that had moved
(opbench/runner.py, gate/command.py, gapmap/ceilings.py, ...); this test names each such
path the next time one moves."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "opbench"
PAGES = sorted([REPO / "README.md", REPO / "ARCHITECTURE.md", *(REPO / "docs").glob("*.md")])

# A path as the docs write one: at least one slash, no spaces, not glued to a longer word or
# a URL (`https://...`); a directory ends in a slash, a file in a word character.
_PATH = re.compile(r"(?<![\w./:-])((?:\.?[\w-]+/)+(?:[\w.-]*\w)?)")
# Roots whose every mention must exist. Other roots (out/, cases/x.yaml, path/to/repo,
# .vscode/) are examples of the user's own files.
_REPO_ROOTS = ("opbench/", "docs/", "tests/", "tools/", ".ci/")
# A module named relative to its package (`runner/session.py`): the package's subpackages.
_SUBPACKAGES = tuple(f"{p.name}/" for p in PACKAGE.iterdir()
                     if p.is_dir() and (p / "__init__.py").exists())
# [text](target) links that stay inside the repository
_LINK = re.compile(r"\]\((?!https?:|mailto:)([^)\s]+)\)")


def named_paths(text: str) -> list[str]:
    """The repository paths `text` names: rooted at the repository (opbench/..., docs/...,
    tests/..., tools/..., .ci/...), or Python modules named inside their package
    (runner/session.py)."""
    found = []
    for match in _PATH.finditer(text):
        path = match.group(1)
        if path.startswith(_REPO_ROOTS):
            found.append(path)
        elif path.startswith(_SUBPACKAGES) and path.endswith(".py"):
            found.append(path)
    return found


def _exists(path: str) -> bool:
    return (REPO / path).exists() or (PACKAGE / path).exists()


def _slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to
    hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    lines = page.read_text().splitlines()
    in_code = False
    anchors = set()
    for line in lines:
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            anchors.add(_slug(line.lstrip("#")))
    return anchors


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(REPO).as_posix() for p in PAGES])
def test_every_path_a_page_names_exists(page):
    missing = sorted({p for p in named_paths(page.read_text()) if not _exists(p)})
    assert not missing, f"{page.relative_to(REPO)} names paths that do not exist: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(REPO).as_posix() for p in PAGES])
def test_every_link_of_a_page_leads_somewhere(page):
    broken = []
    for target in _LINK.findall(page.read_text()):
        file_part, _, anchor = target.partition("#")
        linked = (page.parent / file_part).resolve() if file_part else page
        if not linked.exists():
            broken.append(target)
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(target)
    assert not broken, f"{page.relative_to(REPO)} has broken links: {broken}"


def test_the_front_pages_name_the_layout_they_describe():
    architecture = (REPO / "ARCHITECTURE.md").read_text()
    named = set(named_paths(architecture))
    for package in _SUBPACKAGES:
        assert f"opbench/{package}" in named, f"ARCHITECTURE.md does not map opbench/{package}"
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    for page in (REPO / "docs").glob("*.md"):
        assert f"(docs/{page.name})" in readme, f"README.md does not link docs/{page.name}"


def test_old_module_paths_are_found():
    """The regex sees the kinds of mention the docs make, so a moved module is caught."""
    text = ("(`opbench/runner.py`), `gate/command.py` and `gapmap/ceilings.py`; "
            "[link](docs/gate.md#exit-codes), https://example.org/a/b.py, out/run.json, "
            "`runner/session.py`, `opbench/gate/`")
    paths = named_paths(text)
    assert paths == ["opbench/runner.py", "gate/command.py", "gapmap/ceilings.py",
                     "docs/gate.md", "runner/session.py", "opbench/gate/"]
    assert [p for p in paths if not _exists(p)] == ["opbench/runner.py", "gate/command.py",
                                                   "gapmap/ceilings.py"]
    assert _slug("The noise floor: `opbench noise`, `opbench gate --noise`") == (
        "the-noise-floor-opbench-noise-opbench-gate---noise")

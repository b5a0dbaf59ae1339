"""`opbench scan` on a fixture tree written for the purpose.

Every planted call carries a trailing `# expect: API[?][@+N], ...` comment on its first line
(`?`: a guessed row, `@+N`: the call ends N lines later). The scan must find exactly those
rows, file by file: a missing row is a missed call, an extra one a false row. The markers are
comments, so the scan passing also shows that comments produce no rows.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from opbench.scan import discover_files, scan_paths

TREE = Path(__file__).parent / "fixtures" / "scan_tree"
EXPECT = re.compile(r"#\s*expect:\s*(.+)$")
ITEM = re.compile(r"^(?P<api>[\w.]+)(?P<guess>\?)?(?:@\+(?P<extra>\d+))?$")


def planted(file: Path) -> set[tuple[int, int, str, bool]]:
    """(line, end_line, api, guess) for every `# expect:` marker of a fixture file."""
    expected = set()
    for number, text in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
        marker = EXPECT.search(text)
        if not marker:
            continue
        for item in marker.group(1).split(","):
            parsed = ITEM.match(item.strip())
            assert parsed, f"bad marker {item!r} at {file}:{number}"
            end = number + int(parsed.group("extra") or 0)
            expected.add((number, end, parsed.group("api"), bool(parsed.group("guess"))))
    return expected


@pytest.fixture(scope="module")
def result():
    return scan_paths([TREE], jobs=1)


SCANNED = sorted(p.name for p in TREE.glob("*.py") if p.name != "broken.py") + ["pkg/star.py"]


@pytest.mark.parametrize("name", SCANNED)
def test_every_planted_call_and_nothing_else(result, name):
    file = TREE / name
    expected = planted(file)
    assert expected, f"{name} plants nothing"
    found = {(r.line, r.end_line, r.api, r.guess) for r in result.rows if Path(r.file) == file}
    assert found == expected, (f"missing: {sorted(expected - found)}; "
                               f"unexpected: {sorted(found - expected)}")


def test_decoys_give_only_the_one_real_call(result):
    decoys = [r for r in result.rows if Path(r.file).name == "decoys.py"]
    assert [r.api for r in decoys] == ["torch.manual_seed"]


def test_syntax_error_is_listed_with_its_line_and_the_scan_goes_on(result):
    broken = TREE / "broken.py"
    marker_line = next(n for n, text in enumerate(broken.read_text().splitlines(), start=1)
                       if "expect-error" in text)
    assert len(result.errors) == 1
    error = result.errors[0]
    assert Path(error.file) == broken
    assert error.line == marker_line
    assert "SyntaxError" in error.message
    assert not [r for r in result.rows if Path(r.file) == broken]
    assert {Path(r.file).name for r in result.rows} >= {"model.py", "torch_aliases.py"}


def test_hidden_directories_are_not_scanned():
    files = discover_files([TREE])
    assert not [f for f in files if ".hidden" in f]
    assert any(f.endswith("star.py") for f in files)


def test_guessed_rows_say_why(result):
    guessed = [r for r in result.rows if r.guess]
    assert guessed
    assert all(r.guess_reason for r in guessed)
    assert not [r for r in result.rows if not r.guess and r.guess_reason]
    setitem = next(r for r in guessed if r.api.endswith("__setitem__"))
    assert setitem.api_type == "special"
    assert setitem.call == "h[mask] = 0.0"
    assert "`h`" in setitem.guess_reason


def test_call_text_as_written_and_multi_line_collapsed(result):
    conv = next(r for r in result.rows if r.api == "torch.nn.Conv2d")
    # The comment inside the call is dropped, the lines joined.
    assert conv.call == "torch.nn.Conv2d(in_channels=1, out_channels=2, kernel_size=3)"
    softmax = next(r for r in result.rows if r.api == "torch.nn.functional.softmax"
                   and not r.guess)
    assert softmax.call == "sm(c, dim=-1)"
    assert softmax.api_type == "function"
    assert conv.api_type == "class"


def test_non_ascii_line_reports_the_character_column(result):
    row = next(r for r in result.rows if r.api == "torch.tensor")
    assert row.col == len("π = ") + 1
    assert row.call == "torch.tensor(3.14159)"


def test_parallel_scan_gives_the_same_rows(monkeypatch):
    from opbench.scan import scanner
    serial = scan_paths([TREE], jobs=1)
    monkeypatch.setattr(scanner, "PARALLEL_MIN_FILES", 1)
    parallel = scan_paths([TREE], jobs=2)
    assert parallel.rows == serial.rows
    assert parallel.errors == serial.errors

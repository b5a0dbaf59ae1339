"""Two sides of one framework tell apart by version, build and interpreter: each side's own
process reports its build, the record keeps it with the interpreter, and every view shows
them. And a result that changed between two builds is MISMATCH with its largest
difference, as between two frameworks."""
from __future__ import annotations

import html
import io
import json
import re

import pytest
from rich.console import Console
from runner_fakes import (FakeAdapter, FakeClock, binary_case, case_file, fake_config,
                          fake_session, fake_session_class, load_instances)
from worker_fakes import Spawner

from opbench.config import OPBENCH_VERSION, Side
from opbench.frameworks.mindspore_adapter import parse_commit_id, read_commit_id
from opbench.frameworks.torch_adapter import known_build
from opbench.report.html import render_html
from opbench.report.markdown import render_markdown
from opbench.report.terminal import render_terminal
from opbench.report.text import header_text
from opbench.results.io import validate_record
from opbench.results.records import load_results, write_results
from opbench.runloop.recorded_run import run
from opbench.runner.workers import SidePair, WorkerPool

# The .commit_id files of the MindSpore wheels on PyPI (2.8.0, 2.9.0, 2.10.0), verbatim.
COMMIT_IDS = {
    "2.8.0": ("__commit_id__ = '[sha1]:be319822,[branch]:(HEAD,origin/r2.8,r2.8)'\n",
              "be319822"),
    "2.9.0": ("__commit_id__ = '[sha1]:4bcfac44,[branch]:(HEAD,origin/r2.9,r2.9)'\n",
              "4bcfac44"),
    "2.10.0": ("__commit_id__ = '[sha1]:2d550373,[branch]:(HEAD,origin/r2.10,r2.10)'\n",
               "2d550373"),
}


def test_mindspore_s_build_is_the_commit_in_its_commit_id_file(tmp_path):
    for text, sha in COMMIT_IDS.values():
        assert parse_commit_id(text) == sha
    assert parse_commit_id("__commit_id__ = ''") is None
    (tmp_path / ".commit_id").write_text(COMMIT_IDS["2.9.0"][0], encoding="utf-8")
    assert read_commit_id(str(tmp_path)) == "4bcfac44"
    assert read_commit_id(str(tmp_path / "absent")) is None


def test_torch_s_build_is_its_git_version_unless_unknown():
    assert known_build("cf30153c4c131c8164ee7798e5022d810682e2cb") == (
        "cf30153c4c131c8164ee7798e5022d810682e2cb")
    assert known_build("Unknown") is None
    assert known_build(None) is None


def test_an_adapter_s_facts_carry_its_build_only_when_it_has_one():
    clock = FakeClock()
    assert FakeAdapter("torch", clock, build_id="abc123").info()["build"] == "abc123"
    assert "build" not in FakeAdapter("torch", clock).info()


def _views(record) -> dict[str, str]:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    render_terminal(record, console)
    return {"terminal": console.file.getvalue(), "markdown": render_markdown(record),
            "html": html.unescape(render_html(record))}


def test_a_side_in_another_interpreter_shows_its_build_and_interpreter_everywhere(tmp_path):
    config = fake_config(reference="mindspore",
                         target=Side("mindspore", "/envs/ms29/bin/python"), processes=2)
    spawn = Spawner(fake_session_class({"build_id": "4bcfac44" + "0" * 32}))
    with WorkerPool(config, placement=SidePair, spawn=spawn) as pool:
        pool._check_interpreter = lambda python, name: {"opbench": OPBENCH_VERSION}
        pool.open()
        record = run(load_instances(case_file(tmp_path, binary_case("a"))), config,
                     session=pool)
    target, reference = record.frameworks["mindspore@ms29"], record.frameworks["mindspore"]
    assert (target.build, target.python) == ("4bcfac44" + "0" * 32, "/envs/ms29/bin/python")
    assert (reference.build, reference.python) == (None, None)

    path = tmp_path / "run.json"
    write_results(path, record)
    data = json.loads(path.read_text(encoding="utf-8"))
    validate_record(data)
    assert data["frameworks"]["mindspore@ms29"]["build"] == "4bcfac44" + "0" * 32
    assert "build" not in data["frameworks"]["mindspore"]      # none known: none written
    assert load_results(path).frameworks["mindspore@ms29"].python == "/envs/ms29/bin/python"

    shown = "mindspore@ms29 0.0-fake build 4bcfac440000 in /envs/ms29/bin/python on cpu"
    assert shown in header_text(record)
    for name, text in _views(record).items():
        assert shown in text, name
        assert "mindspore 0.0-fake on cpu" in text, name


def test_a_side_in_this_process_records_its_build_too(tmp_path):
    config = fake_config()
    session = fake_session(config, build_id="2d550373")
    record = run(load_instances(case_file(tmp_path, binary_case("a"))), config,
                 session=session)
    assert record.frameworks["mindspore"].build == "2d550373"
    assert record.frameworks["mindspore"].python is None
    assert "mindspore 0.0-fake build 2d550373 on cpu" in header_text(record)


def test_a_result_that_changed_between_builds_is_mismatch_with_its_largest_difference(
        tmp_path):
    config = fake_config(reference="mindspore", target="mindspore", processes=2)
    # the second build's add is off by 0.5 in one element
    def changed_add(x, y):
        out = x + y
        out[1, 2] += 0.5
        return out

    spawn = Spawner(fake_session_class({"functions": {"mindspore.add": changed_add}}))
    with WorkerPool(config, placement=SidePair, spawn=spawn) as pool:
        pool.open()
        record = run(load_instances(case_file(tmp_path, binary_case("a"))), config,
                     session=pool)
    inst = record.instances[0]
    assert inst.verdict == "MISMATCH"
    # the largest difference, absolute and relative, and where: the same check as
    # between two frameworks (runner/check.py), its figures in the JSON ...
    assert inst.check.max_abs_err == pytest.approx(0.5, rel=1e-6)
    assert inst.check.max_rel_err > 0.5
    assert (inst.check.worst_output, inst.check.worst_index) == (0, (1, 2))
    path = tmp_path / "run.json"
    write_results(path, record)
    data = json.loads(path.read_text(encoding="utf-8"))
    validate_record(data)
    check = data["instances"][0]["check"]
    assert (check["worst_output"], check["worst_index"]) == (0, [1, 2])
    assert check["max_abs_err"] == pytest.approx(0.5, rel=1e-6)
    # ... and in every view
    for name, text in _views(record).items():
        assert "MISMATCH" in text, name
        assert re.search(r"max abs err 0\.49999\d*, max rel err 1\.14\d*", text), name
        assert "worst at [1,2]" in text, name

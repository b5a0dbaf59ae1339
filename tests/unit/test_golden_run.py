"""A fixed run on fake frameworks and a fake clock writes a byte-identical results file and
Markdown report: the guard for changes that must not change behaviour (the package layout,
typed records). Everything the machine or the moment would put in the file (environment,
timestamps, the resident-memory probe) is pinned; every other byte comes from the
protocol, the statistics and the record shaping.

To accept an intended change of output, rerun with OPBENCH_UPDATE_GOLDEN=1 and say in the
commit why the bytes moved."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from runner_fakes import (FAST_SETTINGS, FakeClock, binary_case, case_file, fake_config,
                          fake_session, fake_session_class, load_instances)
from worker_fakes import Spawner

import opbench.results.io as results_io
import opbench.runloop.recorded_run as recorded_run
import opbench.runner.session as session_mod
import opbench.runner.side_server as side_server
from opbench.config import RunConfig
from opbench.report.markdown import render_markdown
from opbench.runloop.recorded_run import run
from opbench.runner.workers import SidePair, WorkerPool

GOLDEN = Path(__file__).parent / "fixtures" / "golden"
UPDATE = os.environ.get("OPBENCH_UPDATE_GOLDEN") == "1"

PINNED_ENVIRONMENT = {"opbench": "golden", "python": "3.x", "numpy": "x", "platform": "fake",
                      "cpu_model": "fake cpu", "cpu_count": 2, "machine_id": "golden",
                      "git_commit": None}

CASES = (
    binary_case("add"),
    binary_case("slow_add", mindspore_api="mindspore.slow_add"),
    binary_case("neg_pair", torch_api="torch.add", mindspore_api="mindspore.add",
                shape="[2, 3]", extra="backward: true\nthreshold: 0.9\ntags: [elementwise]"),
    binary_case("wrong", mindspore_api="mindspore.wrong_add"),
    binary_case("broken", mindspore_api="mindspore.boom"),
)


@pytest.fixture
def pinned(monkeypatch):
    monkeypatch.setattr(results_io, "environment", lambda: dict(PINNED_ENVIRONMENT))
    monkeypatch.setattr(results_io, "utc_now", lambda: "2026-01-01T00:00:00+00:00")
    monkeypatch.setattr(recorded_run, "utc_now", lambda: "2026-01-01T00:00:00+00:00")
    # the CPU probe reads this process's resident memory, which no fake clock pins
    def pinned_memory(calls, device):
        return {n: {"bytes": 0, "measure": "pinned"} for n in calls}

    monkeypatch.setattr(session_mod, "peak_memory", pinned_memory)
    monkeypatch.setattr(side_server, "peak_memory", pinned_memory)   # a side worker's


TARGET = {"costs": {"mindspore.slow_add": 3e-4},
          "functions": {"mindspore.slow_add": lambda x, y: x + y,
                        "mindspore.wrong_add": lambda x, y: x + y + 1.0}}


# A traceback names the code's files and lines, which a layout change moves by design.
_TRACEBACK = re.compile(r'"traceback": "(?:[^"\\]|\\.)*"')


def _compare(name: str, text: str) -> None:
    text = _TRACEBACK.sub('"traceback": "<traceback>"', text)
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no golden file {path}: run with OPBENCH_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8"), (
        f"{name} changed; if intended, rerun with OPBENCH_UPDATE_GOLDEN=1")


def test_a_fixed_run_in_this_process_writes_the_golden_file(tmp_path, pinned):
    config = fake_config(modes=("serial", "async"), quiesce=False, passes=2)
    session = fake_session(config, **TARGET)
    out = tmp_path / "run.json"
    record = run(load_instances(case_file(tmp_path, *CASES)), config, session=session,
                 json_path=out)
    _compare("run_in_process.json", out.read_text(encoding="utf-8").replace(str(tmp_path),
                                                                              "TMP"))
    _compare("run_in_process.md", render_markdown(record).replace(str(tmp_path), "TMP"))


def test_a_fixed_run_in_worker_processes_writes_the_golden_file(tmp_path, pinned):
    config = RunConfig(reference="torch", target="mindspore", threads=2,
                       settings=FAST_SETTINGS, quiesce=False, processes=3)
    pool = WorkerPool(config, spawn=Spawner(fake_session_class(TARGET)))
    _compare_pool_run(tmp_path, config, pool, "run_in_workers.json")


def test_a_fixed_run_in_side_worker_processes_writes_the_golden_file(tmp_path, pinned):
    """One process per side (runner/side_server.py): each side's fake clock holds only its
    own work, and the parent's clock times the instances."""
    config = RunConfig(reference="torch", target="mindspore", threads=2,
                       settings=FAST_SETTINGS, quiesce=False, processes=3)
    pool = WorkerPool(config, placement=SidePair, spawn=Spawner(fake_session_class(TARGET)), clock=FakeClock())
    _compare_pool_run(tmp_path, config, pool, "run_in_side_workers.json")


def _compare_pool_run(tmp_path, config, pool, golden: str) -> None:
    """The first three cases run in `pool`: its results file against the golden one."""
    pool.open()
    out = tmp_path / "run.json"
    try:
        run(load_instances(case_file(tmp_path, *CASES[:3])), config, session=pool,
            json_path=out)
    finally:
        pool.close()
    _compare(golden, out.read_text(encoding="utf-8").replace(str(tmp_path), "TMP"))

"""Each side in its own process on the real frameworks: torch's worker never loads
MindSpore and MindSpore's never loads torch; a run through the side workers measures,
checks outputs and gradients, and records both sides.

Speed is never asserted (the machine is shared)."""
from __future__ import annotations

import importlib.util
import os

import pytest

from opbench.cases.case_files import expand, load_cases
from opbench.config import MeasureSettings, RunConfig
from opbench.frameworks.mindspore_adapter import read_commit_id
from opbench.runloop.recorded_run import run
from opbench.runner.workers import SidePair, WorkerPool

pytestmark = pytest.mark.integration

FAST = MeasureSettings(rounds=4, min_sample_time_s=0.002, max_time_s=0.5, warmup_time_s=0.01)
CASES = """
cases:
  - name: softmax
    backward: true
    inputs:
      x: {shape: [4, 64]}
    torch: {api: torch.softmax, args: [$x], kwargs: {dim: -1}}
    mindspore: {api: mindspore.mint.softmax, args: [$x], kwargs: {dim: -1}}
"""


def _loaded(pid: int) -> str:
    with open(f"/proc/{pid}/maps") as maps:
        return maps.read()


def test_each_worker_loads_only_its_own_framework(tmp_path):
    config = RunConfig(reference="torch", target="mindspore", threads=1, processes=2,
                       settings=FAST)
    (tmp_path / "c.yaml").write_text(CASES)
    instances = [i for case in load_cases([tmp_path / "c.yaml"]) for i in expand(case)]
    with WorkerPool(config, placement=SidePair) as pool:
        pool.open()
        for w in pool.workers:
            libraries = _loaded(w.pid)
            other = "mindspore" if w.side == "torch" else "libtorch"
            assert other not in libraries, f"{w.label} loaded {other}"
        record = run(instances, config, session=pool, json_path=tmp_path / "r.json")
        for w in pool.workers:             # still only its own, after measuring
            assert ("mindspore" if w.side == "torch" else "libtorch") not in _loaded(w.pid)
    inst = record.instances[0]
    assert inst.error is None and inst.check.ok and inst.grad_check.ok
    assert set(inst.measurements) == {"serial", "serial+backward"}
    serial = inst.measurements["serial"]
    assert sorted(set(serial.process_of_round)) == [1, 2]
    # each side's process pinned to the run's one core (after its framework loaded), and
    # each sample's CPU time read in the side's own process
    cpus = {name: info.cpus for name, info in record.frameworks.items()}
    assert cpus["torch"] == cpus["mindspore"] and len(cpus["torch"]) == 1
    assert set(serial.cpu_s) == {"torch", "mindspore"}
    assert all(c is not None and c > 0 for side in serial.cpu_s.values() for c in side)
    assert all(0.5 < cores < 1.5 for cores in serial.effective_cores.values())
    # each side's build, as its own process read it: torch's git_version, MindSpore's
    # .commit_id (read here from the file, without importing MindSpore in this process)
    import torch

    ms_dir = os.path.dirname(importlib.util.find_spec("mindspore").origin)
    assert record.frameworks["torch"].build == torch.version.git_version
    commit = read_commit_id(ms_dir)
    assert commit and record.frameworks["mindspore"].build == commit


def test_mindspore_against_itself_runs_each_side_in_its_own_process(tmp_path):
    config = RunConfig(reference="mindspore", target="mindspore", threads=1, processes=2,
                       settings=FAST, backward=False)
    (tmp_path / "c.yaml").write_text(CASES)
    instances = [i for case in load_cases([tmp_path / "c.yaml"]) for i in expand(case)]
    with WorkerPool(config, placement=SidePair) as pool:
        pool.open()
        assert len({w.pid for w in pool.workers}) == 4
        record = run(instances, config, session=pool)
    inst = record.instances[0]
    assert inst.error is None and inst.check.ok
    m = inst.measurements["serial"]
    assert set(m.samples_s) == {"mindspore", "mindspore#2"}
    assert 0.5 < m.ratio < 2.0        # one framework against itself: no 2x either way

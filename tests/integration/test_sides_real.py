"""Each side in its own process on the real frameworks: torch's worker never loads
MindSpore and MindSpore's never loads torch; a run through the side workers measures,
checks outputs and gradients, and records both sides.

Speed is never asserted (the machine is shared)."""
from __future__ import annotations

import pytest

from opbench.cases.case_files import expand, load_cases
from opbench.config import MeasureSettings, RunConfig
from opbench.results.recorded_run import run
from opbench.runner.workers import WorkerPool

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
    instances = expand(load_cases(tmp_path / "c.yaml"))
    with WorkerPool(config) as pool:
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
    assert sorted(set(inst.measurements["serial"].process_of_round)) == [1, 2]

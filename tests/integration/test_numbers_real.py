"""Every number right, on the real frameworks: each side's effective cores stay within the
cores the run allows (the worker processes are pinned to them), the ceilings are measured
on those cores, and an add whose output is 3 MiB reports at least 3 MiB for both
frameworks (issue 24). Worker processes: MindSpore's thread count is process-global, and
this run wants 1 thread whatever the other integration tests set."""
from __future__ import annotations

import pytest

from opbench.cases.case_files import expand, load_cases
from opbench.config import MeasureSettings, RunConfig
from opbench.runloop.recorded_run import open_session, run
from opbench.runner.core_use import CORES_TOLERANCE
from opbench.runner.workers import WorkerError

pytestmark = pytest.mark.integration

SETTINGS = MeasureSettings(rounds=6, min_sample_time_s=0.005, max_time_s=2.0,
                           warmup_time_s=0.02)
THREE_MIB = 3 * 2**20
# 768 x 1024 float32: each input and the output are 3 MiB
CASES = """
cases:
  - name: add3mib
    inputs:
      x: {shape: [768, 1024]}
      y: {shape: [768, 1024]}
    torch: {api: torch.add, args: [$x, $y]}
    mindspore: {api: mindspore.mint.add, args: [$x, $y]}
  - name: matmul
    inputs:
      a: {shape: [256, 768]}
      b: {shape: [768, 768]}
    torch: {api: torch.matmul, args: [$a, $b]}
    mindspore: {api: mindspore.mint.matmul, args: [$a, $b]}
"""


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    directory = tmp_path_factory.mktemp("numbers_real")
    (directory / "cases.yaml").write_text(CASES)
    instances = [i for c in load_cases([directory / "cases.yaml"]) for i in expand(c)]
    config = RunConfig(threads=1, processes=2, settings=SETTINGS)
    try:
        session = open_session(config)
    except WorkerError as err:
        pytest.skip(str(err))
    try:
        return run(instances, config, session=session)
    finally:
        session.close()


def test_an_add_with_a_3_mib_output_reports_at_least_3_mib_for_both(record):
    add = next(i for i in record.instances if i.case == "add3mib")
    for name in ("torch", "mindspore"):
        memory = add.peak_memory[name]
        assert memory.bytes is not None and memory.bytes >= THREE_MIB, memory
    # torch's allocator is malloc: malloc itself saw the output
    assert add.peak_memory["torch"].malloc_bytes >= THREE_MIB


def test_no_side_uses_more_cores_than_the_run_allows(record):
    pinned = {tuple(info.cpus or ()) for info in record.frameworks.values()}
    assert len(pinned) == 1 and len(next(iter(pinned))) == 1
    for inst in record.instances:
        for m in inst.measurements.values():
            assert m.allowed_cores == 1
            for side, cores in m.effective_cores.items():
                assert cores is not None and cores <= CORES_TOLERANCE, (inst.id, side, cores)
            assert not any(m.samples_over_cores.values()), (inst.id, m.samples_over_cores)


def test_the_ceilings_are_one_cores_and_measured_on_it(record):
    for name, c in record.ceilings.items():
        assert c.error is None, c.error
        assert c.gemm_cores <= CORES_TOLERANCE and c.copy_cores <= CORES_TOLERANCE, name
        assert set(c.cache_levels) <= {"L2", "L3"}


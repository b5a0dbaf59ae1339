"""The conformance corpus (tests/conformance/): `opbench model` on scripts written the way
their users write them (transformers models from configs, functional torch, hand-written
updates, MindSpore in the Cell and the functional style, a MindSpore model library's
models), each run once with small settings (tools/conformance.py: `--processes 1 --budget
0`). Per script: no crash (exit 0 or 3, no traceback through opbench), coverage at least
the manifest's floor, and the traced framework's self-check within the manifest's bound.

The floors and bounds are what today's code reached, measured on 2026-11-27 (the manifest
names each figure); a script that fails today on a bug being fixed elsewhere is marked
xfail(strict=False) with the error it fails with, to flip once the fix is merged.

    flock /tmp/opbench-cpu.lock python -m pytest tests/integration/test_conformance.py
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import conformance  # noqa: E402  (tools/ is not a package)

pytestmark = pytest.mark.integration

ENTRIES = conformance.load_manifest()


def _param(entry: conformance.Entry):
    marks = [pytest.mark.xfail(strict=False, reason=entry.xfail)] if entry.xfail else []
    return pytest.param(entry, id=entry.path.stem, marks=marks)


@pytest.mark.parametrize("entry", [_param(e) for e in ENTRIES])
def test_opbench_model_on_corpus_script(entry: conformance.Entry, tmp_path):
    why = entry.missing()
    if why:
        pytest.skip(f"{entry.script}: {why}")
    run = conformance.run_entry(entry, tmp_path)
    print(conformance.table_row(run))
    assert not run.crashed, (f"opbench model exited {run.returncode} on {entry.script}:\n"
                             f"{run.stderr[-3000:]}")
    assert run.record is not None, f"no --json record for {entry.script}:\n{run.stderr[-3000:]}"
    coverage = run.figure("coverage")
    assert coverage >= entry.coverage_floor, (
        f"coverage {coverage:.3f} < floor {entry.coverage_floor} ({entry.measured}); "
        f"not covered: {conformance.not_covered_text(run, limit=10)}")
    self_check = run.figure("self_check")
    assert self_check is not None and abs(self_check) <= entry.self_check_bound, (
        f"self-check {self_check} outside +-{entry.self_check_bound} ({entry.measured})")

"""The model's replay processes on the runner's process layer, with real torch: a script
captured by the capture process (started by the runner's spawn), its step replayed by a
replay process answering ipc.ReplayStep through the one dispatcher, several requests in one
process (torch imported once), and a refused request answered without killing it."""
from __future__ import annotations

import json
import sys
import textwrap

import pytest

pytest.importorskip("torch")

from opbench.model.impact.processes import (Interpreter, ReplayFailed, run_capture,  # noqa: E402
                                            start_replay)
from opbench.model.program import Program  # noqa: E402
from opbench.model.steady import find_region, step_program  # noqa: E402
from opbench.runner import ipc  # noqa: E402

pytestmark = pytest.mark.integration

SCRIPT = """
import torch
torch.set_num_threads(1)
w = torch.randn(16, 16)
x = torch.randn(4, 16)
for _ in range(6):
    y = torch.relu(x @ w).sum()
"""


def test_a_replay_process_serves_a_probe_and_timings_with_torch_imported_once(tmp_path):
    script = tmp_path / "step.py"
    script.write_text(textwrap.dedent(SCRIPT), encoding="utf-8")
    out = tmp_path / "program.json"
    here = Interpreter(sys.executable, False)
    assert run_capture(here, [str(script)], out, max_calls=500, steps=3) == 0
    program = Program.from_json(json.loads(out.read_text(encoding="utf-8")))
    step = step_program(program, find_region(program, None))
    request = ipc.ReplayStep("torch", step, ipc.REPLAY_PROBE, threads=1,
                             cpus=tuple(program.cpus), launch="blocking")
    with start_replay("torch", sys.executable, tmp_path) as process:
        probe = process.replay(request)
        timed = process.replay(ipc.ReplayStep("torch", step, ipc.REPLAY_TIME, threads=1,
                                              cpus=tuple(program.cpus), launch="blocking",
                                              samples=2, passes=1, rounds=1))
        with pytest.raises(ReplayFailed, match="needs a fresh process"):
            process.replay(ipc.ReplayStep("torch", step, ipc.REPLAY_TIME, threads=2))
        again = process.replay(request)          # the process outlived the refusal
    assert probe.pid == timed.pid == again.pid
    assert all(status.ok for status in probe.status)
    assert len(probe.fingerprints) == len(step.calls) and probe.threads == 1
    assert len(timed.samples_s) == 2 and all(s > 0 for s in timed.samples_s)
    assert [len(times) for times in timed.per_call_s] == [1] * len(step.calls)
    assert not list(tmp_path.glob("replay-*.log"))       # its stderr file removed on close

"""The light timing pass with real torch (model/capture/light.py): a script of small calls
captured by the capture process, then run again under the timing-only tracer; the traced
times come from that run, whose calls pay no capture work between them, and a script whose
calls differ between its two runs keeps the observed times and says why."""
from __future__ import annotations

import json
import statistics
import sys
import textwrap

import pytest

pytest.importorskip("torch")

from opbench.model.impact.processes import Interpreter, run_capture  # noqa: E402
from opbench.model.program import Program  # noqa: E402
from opbench.model.steady import find_region, own_time_ns, step_program  # noqa: E402

pytestmark = pytest.mark.integration

SMALL_CALLS = """
import torch
torch.manual_seed(0)
torch.set_num_threads(1)
x = torch.randn(8, 16)
w = torch.randn(16, 16)
for _ in range(40):
    y = torch.add(x, x).relu()
    z = torch.matmul(y, w)
    s = (z * 0.5).sum()
print("done")
"""

# the script takes another path once it has run (a file it leaves behind): its second run
# makes other calls than its first, as a script with random control flow may
SECOND_RUN_DIFFERS = """
import os
import torch
x = torch.randn(8, 16)
seen = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ran-once")
again = os.path.exists(seen)
open(seen, "w").close()
for _ in range(30):
    y = torch.add(x, x)
    y = y.sigmoid() if again else y.relu()
    y.sum()
"""


def _capture(tmp_path, source: str, steps: int | None = None) -> Program:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(source), encoding="utf-8")
    out = tmp_path / "program.json"
    status = run_capture(Interpreter(sys.executable, False), [str(script)], out,
                         max_calls=10_000, steps=steps)
    assert status == 0
    return Program.from_json(json.loads(out.read_text(encoding="utf-8")))


def test_a_script_of_small_calls_takes_its_traced_times_from_the_light_pass(tmp_path):
    program = _capture(tmp_path, SMALL_CALLS)
    assert program.light_note is None and program.traced_base == "light"
    assert len(program.light_ns) == len(program.calls)
    assert program.light_pass_s > 0
    region = find_region(program)
    step = step_program(program, region)
    observed = [statistics.median(program.calls[s + k].duration_ns
                                  for s, e in region.steps)
                for k in range(len(step.calls))]
    # the light calls pay the interception alone between them: below what the same calls
    # read under the capture's observer (1.2-2.3x their untraced time, docs/model.md)
    assert sum(step.traced_ns) < sum(observed)
    own = own_time_ns(program)
    assert all(own(c) == max(0, round(program.light_ns[c.index]
                                      - program.light_in_window_ns_per_call))
               for c in program.calls)


def test_a_script_the_capture_ended_early_is_ended_at_the_same_call_in_its_second_run(
        tmp_path):
    program = _capture(tmp_path, SMALL_CALLS.replace("range(40)", "range(100_000)"), steps=3)
    assert program.ended_early
    assert program.traced_base == "light" and len(program.light_ns) == len(program.calls)


def test_a_script_whose_second_run_differs_keeps_the_observed_times_and_says_why(tmp_path):
    program = _capture(tmp_path, SECOND_RUN_DIFFERS)
    assert program.traced_base == "observed" and program.light_ns == ()
    assert program.light_note.startswith("its second run's call ")
    assert "torch.Tensor.sigmoid where the captured run's was torch.Tensor.relu" in \
        program.light_note


MINDSPORE_SMALL_CALLS = """
import numpy as np
import mindspore
from mindspore import mint
x = mindspore.Tensor(np.ones((8, 16), np.float32))
for _ in range(30):
    y = mint.mul(mint.add(x, x), x).sum()
"""


def test_a_mindspore_script_keeps_its_observed_times_and_says_why(tmp_path):
    pytest.importorskip("mindspore")
    program = _capture(tmp_path, MINDSPORE_SMALL_CALLS)
    assert program.framework == "mindspore"
    assert program.traced_base == "observed" and program.light_ns == ()
    assert program.light_note.startswith("no light timing pass for a MindSpore script")

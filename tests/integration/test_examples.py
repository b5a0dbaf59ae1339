"""The example models (examples/): the MindSpore ports agree with their torch originals
(examples/check_ports.py), every torch script runs, and none of them imports opbench (they
stand for a user's own scripts, which `opbench model` traces from outside)."""
from __future__ import annotations

import ast
import importlib.util
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NUMBER = r"(-?[\d.]+(?:e[-+]?\d+)?)"
# Each torch script with one set of options, and what its last output line before the
# timing names: a checksum of the output, or the losses.
TORCH_RUNS = [
    ("transformer/run_torch.py", ("--attention", "matmul")),
    ("transformer/run_torch.py", ("--attention", "sdpa")),
    ("cnn/run_torch.py", ()),
    ("bert/run_torch.py", ()),
    ("nanogpt/run_torch.py", ()),
    ("resnet/run_torch.py", ()),
    ("functional_cnn/run_torch.py", ()),
]


def run_example(script: Path, *args: str, cwd: Path, timeout: float) -> str:
    """Run an example the way a user does (its own interpreter, from another directory) and
    return its output; fail with its stderr when it exits non-zero."""
    env = {**os.environ, "GLOG_v": "3"}
    done = subprocess.run([sys.executable, str(script), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{script} exited {done.returncode}:\n{done.stderr[-3000:]}"
    return done.stdout


def test_check_ports_finds_the_ports_agree(tmp_path):
    out = run_example(EXAMPLES / "check_ports.py", "--steps", "1", cwd=tmp_path, timeout=300)
    print(out)
    # Both torch attention variants against the MindSpore encoder.
    transformer = re.findall(r"transformer output, torch \((\w+)\) vs mindspore: max \|diff\| "
                             + NUMBER + r", relative to max \|torch\| " + NUMBER, out)
    assert [variant for variant, _, _ in transformer] == ["matmul", "sdpa"]
    assert all(float(relative) <= 1e-3 for _, _, relative in transformer)
    # 2 warm-up steps + 1: step 1 compares the forward passes, 2 and 3 the training too.
    losses = re.findall(r"cnn loss step (\d+): torch " + NUMBER + " mindspore " + NUMBER
                        + " relative " + NUMBER, out)
    assert [int(step) for step, *_ in losses] == [1, 2, 3]
    assert all(float(relative) <= 1e-3 for *_, relative in losses)
    assert out.rstrip().endswith("check_ports: the ports agree")


@pytest.mark.parametrize("script, options", TORCH_RUNS,
                         ids=[" ".join((s, *o)) for s, o in TORCH_RUNS])
def test_each_torch_script_runs(tmp_path, script, options):
    if script.startswith("bert/") and importlib.util.find_spec("transformers") is None:
        pytest.skip("transformers is not installed (the examples extra)")
    out = run_example(EXAMPLES / script, "--steps", "2", *options, cwd=tmp_path, timeout=180)
    print(out)
    timing = re.search(r"median step " + NUMBER + r" ms \(2 steps after 2 warm-up\)", out)
    assert timing and float(timing.group(1)) > 0
    if script.startswith(("cnn/", "functional_cnn/")):
        losses = [float(x) for x in re.findall(r"step \d+ loss " + NUMBER, out)]
        # 4 SGD steps on one fixed batch: the loss falls.
        assert len(losses) == 4 and losses[-1] < losses[0]
    else:
        checksum = re.search(r"checksum " + NUMBER + " abs " + NUMBER, out)
        assert checksum and math.isfinite(float(checksum.group(1)))
        assert float(checksum.group(2)) > 0


def test_examples_do_not_import_opbench():
    scripts = sorted(EXAMPLES.rglob("*.py"))
    assert len(scripts) >= 14   # the 14 scripts examples/ ships
    for script in scripts:
        tree = ast.parse(script.read_text(), str(script))
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                    for alias in node.names}
        imported |= {node.module or "" for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom)}
        assert not {name for name in imported if name.split(".")[0] == "opbench"}, script

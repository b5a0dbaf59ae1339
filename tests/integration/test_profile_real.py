"""`--profile` on the real frameworks: each side's call run again under torch.profiler and
mindspore.Profiler after its timing, its kernels named, kernel + host = the timed call.

Verdicts are not asserted (see test_cli_real.py); what the profile says about them is: a
reshape launches no kernel in torch (views are host work), and MindSpore's softmax kernel
holds most of its large call.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from opbench.results.records import load_results

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
FIXED = ["--processes", "1", "--rounds", "6", "--min-sample-time", "0.002", "--max-time", "1",
         "--no-backward"]


def _compare(tmp_path: Path, *args: str):
    out = tmp_path / "run.json"
    env = {**os.environ, "GLOG_v": "3", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "opbench.cli", "compare", *args, "--profile",
                           *FIXED, "--json", str(out)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=400)
    assert done.returncode in (0, 1, 3), done.stderr[-2000:]
    assert "Inside each call" in done.stdout
    return load_results(out)


def _entries(record):
    for inst in record.instances:
        for key, sides in inst.profile.items():
            for side, entry in sides.items():
                yield inst, key, side, entry


def test_softmax_and_reshape_name_each_sides_kernels_and_split_the_call(tmp_path):
    record = _compare(tmp_path, "softmax", "reshape", "-k",
                      "(float16 and 12x128x128) or (8x16 and float32)")
    assert record.config.profile
    seen = {(inst.op, side) for inst, _, side, _ in _entries(record)}
    assert {("softmax", "torch"), ("softmax", "mindspore"), ("reshape", "torch"),
            ("reshape", "mindspore")} <= seen
    for inst, key, side, entry in _entries(record):
        assert "error" not in entry, entry
        # kernel + host is the timed call; a kernel time above the call's cannot be true
        assert entry["kernel_s"] <= entry["call_s"]
        assert entry["kernel_s"] + entry["host_s"] == pytest.approx(entry["call_s"])
        names = [k["name"] for k in entry["kernels"]]
        if inst.op == "softmax":
            assert any("softmax" in n.lower() for n in names), names
        if inst.op == "reshape" and side == "torch":
            assert names == [] and entry["host_s"] == entry["call_s"]
        if inst.op == "reshape" and side == "mindspore":
            # a view: MindSpore's call is host work around no (or a tiny) kernel
            assert entry["host_s"] >= 0.5 * entry["call_s"], entry
    for inst in record.instances:
        for key, m in inst.measurements.items():
            if m.verdict == "SLOW":
                assert m.profile_cause is not None and m.profile_cause["source"] == "profile"
                assert m.cause is None or m.cause["source"] == "sweep"
            if inst.op == "softmax" and m.verdict == "SLOW" and "12x128x128" in inst.id:
                assert m.profile_cause["kind"] == "kernel", m.profile_cause

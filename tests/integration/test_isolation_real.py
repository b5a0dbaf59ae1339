"""An injected interference on the real frameworks: after every MindSpore sync two threads
keep both cores busy for a while (what MindSpore's own ActorThread does after its work with
2 kernel threads). Without the pre-sample quiesce, torch's samples that follow MindSpore's
are slowed and the detection must say so (INCONCLUSIVE with the reason); with it, the wait
absorbs the leftover work and the measurement is clean.

Speed itself is never asserted; only what the detection and the quiesce report.
"""
from __future__ import annotations

import hashlib
import threading
import time

import numpy as np
import pytest

from opbench.frameworks import FrameworkUnavailable, get_adapter
from opbench.interference import ORDER_EFFECT
from opbench.measure import MeasureSettings, Side, measure
from opbench.quiesce import Quiescer, ThreadActivityProbe
from opbench.runner import measurement_statistics

pytestmark = pytest.mark.integration

THREADS = 2          # the same as the other integration tests in this process
LEFTOVER_S = 0.008   # shorter than a sample, so only the sample right after is hit
SETTINGS = MeasureSettings(rounds=16, min_sample_time_s=0.02, warmup_time_s=0.05,
                           max_time_s=10.0)


class Leftover:
    """Two threads that hash a buffer (hashlib releases the GIL) until `busy_until`."""

    def __init__(self):
        self.busy_until = 0.0
        self.stop = False
        self.buffer = bytes(1 << 16)
        self.threads = [threading.Thread(target=self._spin, daemon=True) for _ in range(2)]
        for t in self.threads:
            t.start()

    def _spin(self):
        while not self.stop:
            if time.perf_counter() < self.busy_until:
                hashlib.sha256(self.buffer).digest()
            else:
                time.sleep(0.0005)

    def after(self, sync):
        def sync_then_leave_work():
            sync()
            self.busy_until = time.perf_counter() + LEFTOVER_S
        return sync_then_leave_work


@pytest.fixture(scope="module")
def frameworks():
    try:
        adapters = {name: get_adapter(name) for name in ("torch", "mindspore")}
    except FrameworkUnavailable as exc:
        pytest.skip(str(exc))
    for adapter in adapters.values():
        adapter.setup("cpu", THREADS)
    return adapters


def _sides(adapters, leftover):
    x = np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32)
    t, m = adapters["torch"], adapters["mindspore"]
    tx = t.from_numpy(x, "float32")
    mx = m.from_numpy(x, "float32")
    t_add, m_add = t.resolve("torch.add"), m.resolve("mindspore.mint.add")
    return [Side("torch", lambda: t_add(tx, tx), t.sync),
            Side("mindspore", lambda: m_add(mx, mx), leftover.after(m.sync))]


def _judge(m):
    return measurement_statistics(m.per_call_s, "torch", "mindspore", 0.8, order=m.order)


def test_injected_leftover_work_is_detected_without_quiesce(frameworks):
    leftover = Leftover()
    try:
        m = measure(_sides(frameworks, leftover), SETTINGS)
    finally:
        leftover.stop = True
    fields = _judge(m)
    torch_findings = [f for f in fields["interference"] if f["side"] == "torch"]
    assert torch_findings, (fields["interference"], m.per_call_s["torch"])
    assert any(f["kind"] == ORDER_EFFECT for f in torch_findings)
    assert fields["verdict"] == "INCONCLUSIVE"
    assert "right after the other side" in fields["inconclusive_reason"]


def test_quiesce_waits_the_leftover_work_out(frameworks):
    if not ThreadActivityProbe.available():
        pytest.skip("no per-thread schedstat on this kernel")
    leftover = Leftover()
    quiescer = Quiescer(ThreadActivityProbe())
    try:
        m = measure(_sides(frameworks, leftover), SETTINGS, settle=quiescer.settle)
    finally:
        leftover.stop = True
    fields = _judge(m)
    assert not [f for f in fields["interference"] if f["side"] == "torch"], \
        fields["interference"]
    waits = sorted(r.waited_s for r in m.settled["torch"])
    # the torch samples after MindSpore's waited for (most of) the injected leftover
    assert waits[-1] >= LEFTOVER_S * 0.5
    assert not any(r.timed_out for r in m.settled["torch"])

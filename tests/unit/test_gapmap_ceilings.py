"""Machine ceilings: the arithmetic, the measuring step with a fake framework and clock,
and each instance's achieved fraction."""
import numpy as np
import pytest
from gapmap_fakes import instance, record, summary

from opbench.gapmap.analysis import ceilings_lines, roofline_fractions
from opbench.gapmap.roofline import roofline
from opbench.results.records import RunRecord
from opbench.runner.ceilings import achieved_fraction, ceilings_from_times, measure_ceilings


def test_bandwidth_counts_read_and_write_and_flops_two_per_multiply_add():
    c = ceilings_from_times(copy_bytes=1000, copy_s=1e-6, gemm_n=10, gemm_s=1e-6)
    assert c["memory_bandwidth_bytes_per_s"] == pytest.approx(2e9)
    assert c["peak_flops_per_s"] == pytest.approx(2e9)


class TickClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class FakeFramework:
    """numpy, where a copy takes 1 ms per MiB and a product 1 ns per multiply-add, on a
    clock that only the fake work moves; the first (untimed) call is slow."""

    def __init__(self, clock):
        self.clock, self.calls = clock, 0

    def resolve(self, api):
        def copy(x, out=None):
            assert out is not None and out.shape == x.shape     # torch writes into out=
            self.calls += 1
            self.clock.now += (1.0 if self.calls == 1 else 1e-3) * x.nbytes / 2**20
            return x.copy()

        def matmul(a, b, out=None):
            self.clock.now += 1e-9 * a.shape[0] ** 3 * (3 if self.calls == 1 else 1)
            return a

        return {"torch.neg": copy, "torch.matmul": matmul}[api]

    def from_numpy(self, array, dtype, requires_grad=False):
        return array

    def sync(self):
        pass

    def threads(self):
        return 1


def test_measure_ceilings_keeps_the_best_repeat_and_records_threads():
    clock = TickClock()
    c = measure_ceilings("torch", FakeFramework(clock), clock, copy_bytes=2**20, gemm_n=64)
    assert c["copy_s"] == pytest.approx(1e-3)
    assert c["memory_bandwidth_bytes_per_s"] == pytest.approx(2 * 2**20 / 1e-3)
    assert c["peak_flops_per_s"] == pytest.approx(2.0 / 1e-9)
    assert c["threads"] == 1


def test_a_framework_without_the_ops_records_an_error_and_never_raises():
    clock = TickClock()
    c = measure_ceilings("mindspore", FakeFramework(clock), clock, copy_bytes=1024, gemm_n=4)
    assert c.keys() == {"error"} and "KeyError" in c["error"]


def test_achieved_fraction_reads_the_ceiling_of_the_work_unit():
    ceilings = {"memory_bandwidth_bytes_per_s": 10e9, "peak_flops_per_s": 100e9}
    assert achieved_fraction(1e6, "bytes", 1e-3, ceilings) == pytest.approx(0.1)
    assert achieved_fraction(1e9, "flops", 0.1, ceilings) == pytest.approx(0.1)
    assert achieved_fraction(1e6, "bytes", 1e-3, {"error": "x"}) is None
    assert achieved_fraction(1e6, "bytes", 1e-3, None) is None


def test_each_forward_measurement_is_held_against_the_machines_best_ceiling():
    n = 1_000_000                                  # x + y: 12 MB moved
    inst = instance("add", n, (summary([1.2e-3] * 5), summary([12e-3] * 5)))
    back = instance("add", n, (summary([1e-3] * 5), summary([1e-3] * 5)),
                    key="serial+backward")
    inst["measurements"].update(back["measurements"])
    rec = RunRecord.from_dict(dict(record([inst]), ceilings={
        "torch": ceilings_from_times(2**20, 2**21 / 20e9, 1024, 1.0),
        "mindspore": {"error": "no clone"}}))
    fractions = roofline_fractions(rec)
    assert list(fractions) == [(inst["id"], "serial")]
    # both sides against the best ceiling any framework reached (torch's: mindspore had none)
    assert fractions[(inst["id"], "serial")] == {"torch": pytest.approx(12e6 / 1.2e-3 / 20e9),
                                                 "mindspore": pytest.approx(12e6 / 12e-3 / 20e9)}
    lines = ceilings_lines(rec)
    assert lines[0].startswith("torch: memory bandwidth 20 GB/s")
    assert lines[1] == "mindspore: ceilings not measured (no clone)"
    assert np.isfinite(fractions[(inst["id"], "serial")]["torch"])


def _levelled(ceiling_gbs, cache_bytes, levels):
    found = ceilings_from_times(2**26, 2**27 / (ceiling_gbs * 1e9), 1024, 1.0)
    found["cache_bytes"] = cache_bytes
    found["cache_levels"] = {lv: {"copy_bytes": 1024, "bandwidth_bytes_per_s": gbs * 1e9}
                             for lv, gbs in levels.items()}
    return found


CACHES = {"L1": 32 * 2**10, "L2": 2**20, "L3": 32 * 2**20}


@pytest.mark.parametrize("n, level", [(2_000, "L1"), (50_000, "L2"), (1_000_000, "L3"),
                                      (4_000_000, "DRAM")])
def test_a_working_set_is_held_against_the_level_it_fits(n, level):
    inst = instance("add", n, (summary([4e-3] * 5), summary([8e-3] * 5)))
    rec = RunRecord.from_dict(dict(record([inst]), ceilings={
        "torch": _levelled(30, CACHES, {"L2": 200, "L3": 100}),
        "mindspore": _levelled(25, CACHES, {"L2": 150, "L3": 120})}))
    points = roofline(rec)[(inst["id"], "serial")]
    assert {p.level for p in points.values()} == {level}
    ceiling = {"L1": None, "L2": 200e9, "L3": 120e9, "DRAM": 30e9}[level]
    assert points["torch"].ceiling_per_s == ceiling
    if ceiling is None:
        assert points["torch"].fraction is None and points["torch"].text() == "cache-resident"
    else:
        assert points["torch"].fraction == pytest.approx(12 * n / 4e-3 / ceiling)


def test_no_fraction_is_above_one_an_instance_beating_its_level_is_cache_resident():
    fast = instance("add", 4_000_000, (summary([1e-4] * 5), summary([4e-3] * 5)))  # 480 GB/s
    rec = RunRecord.from_dict(dict(record([fast]), ceilings={
        "torch": _levelled(30, CACHES, {"L2": 200, "L3": 100})}))
    points = roofline(rec)[(fast["id"], "serial")]
    assert points["torch"].fraction is None and points["torch"].resident
    assert points["torch"].achieved_per_s == pytest.approx(48e6 / 1e-4)
    assert 0 < points["mindspore"].fraction <= 1

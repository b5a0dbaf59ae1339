"""Equal cores in fact (runner/pinning.py): which cores a run pins to, each sample's CPU
time against its wall time, and the flag for a side that used more cores than allowed."""
from __future__ import annotations

import os

import pytest
from runner_fakes import FakeClock

from opbench.config import MeasureSettings
from opbench.runner.ceilings import measure_ceilings
from opbench.runner.measure import Side, measure, more_rounds
from opbench.runner.core_use import effective_cores, sample_cores, samples_over
from opbench.runner.pinning import cores_to_pin, pin_process
from opbench.runner.raw_records import RawMeasurement


def test_the_last_physical_cores_are_pinned_one_cpu_each():
    siblings = {0: (0, 4), 4: (0, 4), 1: (1, 5), 5: (1, 5), 2: (2,), 3: (3,)}
    assert cores_to_pin(1, [0, 1, 2, 3, 4, 5], lambda c: siblings[c]) == (3,)
    assert cores_to_pin(3, [0, 1, 2, 3, 4, 5], lambda c: siblings[c]) == (1, 2, 3)
    assert cores_to_pin(2, [0, 1]) == (0, 1)


def test_more_threads_than_cores_pins_nothing():
    assert cores_to_pin(3, [0, 1]) is None
    assert cores_to_pin(0, [0, 1]) is None


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux only")
def test_pin_process_sets_every_thread_and_is_undone_here():
    before = os.sched_getaffinity(0)
    try:
        assert pin_process(sorted(before)) == tuple(sorted(before))
    finally:
        os.sched_setaffinity(0, before)


def test_cores_are_cpu_time_over_wall_time():
    assert sample_cores(0.02, 0.01) == pytest.approx(2.0)
    assert sample_cores(None, 0.01) is None
    assert effective_cores([0.01, 0.03, None], [0.01, 0.01, 0.5]) == pytest.approx(2.0)
    assert effective_cores([None], [0.01]) is None
    # 1.1x the allowed count is tolerated (two clocks), 1.2x is flagged
    assert samples_over([0.011, 0.012, 0.02], [0.01, 0.01, 0.01], 1) == 2
    assert samples_over([0.011], [0.01], 1) == 0


class _TwoClocks:
    """A wall clock and a process CPU clock: each side's call takes `cost` of wall time
    and `cores` x cost of CPU time."""

    def __init__(self):
        self.wall = FakeClock()
        self.cpu_t = 0.0

    def cpu(self) -> float:
        return self.cpu_t

    def side(self, name: str, cost_s: float, cores: float) -> Side:
        def call():
            self.wall.advance(cost_s)
            self.cpu_t += cost_s * cores
        return Side(name, call, lambda: None)


SETTINGS = MeasureSettings(rounds=6, min_sample_time_s=1e-3, warmup_time_s=1e-4,
                           max_time_s=5.0)


def test_a_side_that_used_two_cores_is_recorded_and_flagged():
    clocks = _TwoClocks()
    sides = [clocks.side("torch", 1e-4, 1.0), clocks.side("mindspore", 1e-4, 2.0)]
    m = measure(sides, SETTINGS, clocks.wall, cpu_clock=clocks.cpu)
    assert set(m.cpu_s) == {"torch", "mindspore"} and len(m.cpu_s["torch"]) == m.rounds
    record = RawMeasurement.first(m, 0.8, 6, 1, allowed_cores=1).as_dict()
    assert record["effective_cores"]["torch"] == pytest.approx(1.0, rel=0.05)
    assert record["effective_cores"]["mindspore"] == pytest.approx(2.0, rel=0.05)
    assert record["samples_over_cores"] == {"torch": 0, "mindspore": m.rounds}
    assert record["allowed_cores"] == 1


def test_pooled_rounds_keep_cpu_times_aligned_with_the_samples():
    clocks = _TwoClocks()
    sides = [clocks.side("torch", 1e-4, 1.0), clocks.side("mindspore", 1e-4, 1.0)]
    m = measure(sides, SETTINGS, clocks.wall, cpu_clock=clocks.cpu)
    first = RawMeasurement.first(m, 0.8, 6, 1, allowed_cores=1)
    # a share from a process without a CPU clock: nulls keep the alignment
    extra = more_rounds(sides, "serial", m.loops, 2, clocks.wall, 1e-4, first_round=m.rounds)
    record = first.pooled(extra, 2, 2, allowed_cores=1).as_dict()
    assert len(record["cpu_s"]["torch"]) == len(record["samples_s"]["torch"])
    assert record["cpu_s"]["torch"][-2:] == [None, None]
    extra = more_rounds(sides, "serial", m.loops, 2, clocks.wall, 1e-4,
                        first_round=m.rounds + 2, cpu_clock=clocks.cpu)
    # pooled into the record as written (a later pass in another process reads it back)
    record = RawMeasurement.of(record).pooled(extra, 3, 3, allowed_cores=1).as_dict()
    assert first.rounds == m.rounds and record["rounds"] == m.rounds + 4
    assert record["pass_of_round"][-4:] == [2, 2, 3, 3] and record["processes"] == 3
    assert len(record["cpu_s"]["mindspore"]) == len(record["samples_s"]["mindspore"])
    assert record["cpu_s"]["mindspore"][-1] is not None
    assert record["effective_cores"]["mindspore"] == pytest.approx(1.0, rel=0.05)


def test_without_a_cpu_clock_nothing_is_recorded():
    clocks = _TwoClocks()
    sides = [clocks.side("torch", 1e-4, 1.0), clocks.side("mindspore", 1e-4, 2.0)]
    record = RawMeasurement.first(measure(sides, SETTINGS, clocks.wall), 0.8, 6, 1).as_dict()
    assert "cpu_s" not in record and "effective_cores" not in record


class _Framework:
    """A framework whose copy and product take fixed times and use `cores` cores."""

    def __init__(self, clocks: _TwoClocks, cores: float):
        self.clocks, self.cores = clocks, cores

    def resolve(self, api):
        def op(*args, **kwargs):
            self.clocks.wall.advance(1e-3)
            self.clocks.cpu_t += 1e-3 * self.cores
        return op

    def from_numpy(self, array, dtype):
        return array

    def sync(self):
        pass

    def threads(self):
        return 1


def test_ceilings_record_the_cores_their_copy_and_product_used():
    clocks = _TwoClocks()
    found = measure_ceilings("mindspore", _Framework(clocks, 2.0), clocks.wall,
                             copy_bytes=1024, gemm_n=4, cpu_clock=clocks.cpu)
    assert found["gemm_cores"] == pytest.approx(2.0, rel=0.01)
    assert found["copy_cores"] == pytest.approx(2.0, rel=0.01)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux only")
def test_a_session_in_this_process_gives_its_cores_back(monkeypatch):
    """Regression: a Session whose frameworks failed to set up left the test process
    pinned to one core (an in-process run must not keep the caller pinned either)."""
    import opbench.runner.session as session_mod
    from runner_fakes import fake_config

    def unknown(name):
        raise ValueError(f"unknown framework {name!r}")

    before = os.sched_getaffinity(0)
    monkeypatch.setattr(session_mod, "get_adapter", unknown)
    session = session_mod.Session(fake_config(threads=1))
    with pytest.raises(ValueError):
        session.open()
    assert os.sched_getaffinity(0) == before and session.pinned_cpus is None


def test_the_report_states_each_sides_cores_once_and_flags_a_side_over_the_limit():
    from gapmap_fakes import instance, record, summary

    from opbench.report.text import core_use_lines
    from opbench.results.records import RunRecord

    rows = []
    for n, ms_cores, over in ((64, 0.98, 0), (4096, 1.97, 15)):
        inst = instance("add", n, (summary([1e-5] * 15), summary([2e-5] * 15)))
        inst["measurements"]["serial"].update(
            effective_cores={"torch": 1.0, "mindspore": ms_cores}, allowed_cores=1,
            samples_over_cores={"torch": 0, "mindspore": over})
        rows.append(inst)
    data = record(rows)
    data["frameworks"]["torch"]["cpus"] = [1]
    lines = core_use_lines(RunRecord.from_dict(data))
    assert lines[0] == ("effective cores (CPU time / wall time over each measurement's "
                        "samples): torch 1.00-1.00, mindspore 0.98-1.97; the run allows 1 "
                        "(pinned to cpu 1)")
    assert lines[1].startswith("1 measurements: mindspore used more cores than the run allows "
                               "in 15 of 15 samples")

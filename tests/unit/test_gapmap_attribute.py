"""Each SLOW measurement's main cause, and causes shared by many rows stated once."""
import pytest
from gapmap_fakes import instance, record, summary

from opbench.gapmap.attribute import (
                                      KERNEL,
                                      OVERHEAD,
                                      THREADING,
                                      UNKNOWN,
                                      attribute,
                                      headlines,
                                      shared_note_lines,
                                      )
from opbench.gapmap.decompose import sweeps
from opbench.results.records import RunRecord
from opbench.verdicts.explain import explain_measurement

ELEMS = (1024, 98304, 4194304)
OVERHEADS = {"torch": {"dispatch_floor_serial_s": 2e-6, "dispatch_floor_async_s": 1e-6},
             "mindspore": {"dispatch_floor_serial_s": 30e-6, "dispatch_floor_async_s": 20e-6}}


def typed(*args, **options) -> RunRecord:
    return RunRecord.from_dict(record(*args, **options))


def exact(fixed_s, throughput, n):
    """Round times with no noise: the fit is exact, so the cause is fully determined."""
    return summary([fixed_s + 3 * n * 4 / throughput] * 15)


def sweep_instances(case, ref, tgt, verdict="SLOW"):
    return [instance(case, n, (exact(*ref, n), exact(*tgt, n)), verdict=verdict)
            for n in ELEMS]


def causes(rec):
    return {(a.instance_id.split("[")[0], a.instance_id.split("=")[1].split(",")[0]): a.cause
            for a in attribute(rec, sweeps(rec))}


def test_a_larger_fixed_cost_with_the_same_kernel_is_per_call_overhead():
    rec = typed(sweep_instances("add", (2e-6, 20e9), (300e-6, 20e9)), OVERHEADS)
    assert set(causes(rec).values()) == {OVERHEAD}


def test_a_slower_kernel_is_kernel_throughput_where_the_work_dominates():
    rec = typed(sweep_instances("mul", (2e-6, 20e9), (3e-6, 1e9)), OVERHEADS)
    found = causes(rec)
    assert found[("mul", str(ELEMS[-1]))] == KERNEL
    assert found[("mul", str(ELEMS[1]))] == KERNEL


def test_the_split_follows_the_size_within_one_sweep():
    # 100 us more per call and a 4x slower kernel: small sizes pay the overhead, the
    # largest pays the kernel
    rec = typed(sweep_instances("div", (2e-6, 20e9), (100e-6, 5e9)), OVERHEADS)
    found = causes(rec)
    assert found[("div", str(ELEMS[0]))] == OVERHEAD
    assert found[("div", str(ELEMS[-1]))] == KERNEL


def test_views_that_disagree_are_threading_or_launch():
    inst = instance("exp", 1024, (summary([1e-5] * 5), summary([1e-3] * 5)), verdict="SLOW")
    other = instance("exp", 1024, (summary([1e-5] * 5), summary([1.1e-5] * 5)),
                     verdict="PASS", key="async")
    inst["measurements"].update(other["measurements"])
    [a] = attribute(typed([inst], OVERHEADS, modes=("serial", "async")), [])
    assert (a.key, a.cause) == ("serial", THREADING)


def test_without_a_sweep_near_the_floor_is_overhead_and_far_from_it_split_by_the_floors():
    near = instance("neg", 64, (summary([3e-6] * 5), summary([50e-6] * 5)))
    far = instance("sin", 64, (summary([3e-6] * 5), summary([5e-3] * 5)))
    # 100 us above torch's 3 us: the floors' difference (28 us) is 29% of the 97 us gap
    mid = instance("cos", 64, (summary([3e-6] * 5), summary([100e-6] * 5)))
    rec = typed([near, far, mid], OVERHEADS)
    found = attribute(rec, sweeps(rec))
    assert [a.cause for a in found] == [OVERHEAD, KERNEL, KERNEL]
    assert found[2].overhead_share == pytest.approx(28e-6 / 97e-6)
    assert found[1].basis.startswith("no size sweep (fewer than 3 sizes")


def test_without_floors_a_cause_is_unknown_and_says_why_in_one_line():
    far = instance("sin", 64, (summary([3e-6] * 5), summary([5e-3] * 5)))
    [found] = attribute(typed([far], {}), [])
    assert found.cause == UNKNOWN
    assert found.basis == ("no size sweep (fewer than 3 sizes of this case and view), and no "
                           "per-call floors to split the gap with")


def test_only_slow_measurements_are_attributed():
    rec = typed(sweep_instances("add", (2e-6, 20e9), (3e-6, 20e9), verdict="PASS"), OVERHEADS)
    assert attribute(rec, sweeps(rec)) == []


def test_headlines_state_each_cause_once_with_its_count_and_the_floor_line():
    rec = typed(sweep_instances("add", (2e-6, 20e9), (300e-6, 20e9))
                 + sweep_instances("mul", (2e-6, 20e9), (3e-6, 1e9)), OVERHEADS)
    lines = headlines(rec, attribute(rec, sweeps(rec)))
    assert lines[0].startswith("3 of 6 SLOW measurements: ")
    assert sum(line.startswith("3 of 6") for line in lines) == 2
    # add at 300 us + a little against a 30 us floor: none is within 3x of it; mul at the
    # smallest size (3 us + 12 kB / 1 GB/s = 15 us) is, and below the floor itself
    assert lines[-1] == ("1 of 6 SLOW measurements are within 3x of mindspore's per-call "
                         "floor (30 us serial); 1 of them below it (no kernel is launched: "
                         "a view or metadata change)")


def test_no_slow_measurement_no_headline():
    assert headlines(typed([], OVERHEADS), []) == []


def test_shared_notes_are_counted_once_per_family():
    notes = ["mindspore is dispatch-bound here: 40 us per call against ...",
             "torch is dispatch-bound here: 3 us per call against ...",
             "loop count held at 9 by the time budget: the slowest side is 13x slower",
             "something particular"]
    lines = shared_note_lines(notes)
    assert lines[0].startswith("2 measurements: a side ran within 3x of its trivial-op floor")
    assert lines[1].startswith("1 measurements: the loop count was held")
    assert len(lines) == 2


def test_a_call_below_the_floor_launches_no_kernel_in_the_note_and_the_cause():
    """MindSpore's reshape of 8x16 ran 4.9 us against its 32 us serial floor (a view): it
    was explained as "within 3x of the floor"; it is below it, and no kernel runs."""
    view = instance("reshape", 128, (summary([0.84e-6] * 5), summary([4.9e-6] * 5)))
    rec = typed([view], OVERHEADS)
    [found] = attribute(rec, sweeps(rec))
    assert found.cause == OVERHEAD
    assert found.basis == ("below mindspore's per-call floor (4.9 us against 30 us): no "
                           "kernel is launched: a view or metadata change")
    notes = explain_measurement("serial", {"torch": 0.84e-6, "mindspore": 4.9e-6},
                                OVERHEADS)
    assert notes == [
        "torch runs below its per-call floor: 0.84 us per call against a 2 us trivial-op "
        "floor (serial): no kernel is launched: a view or metadata change; the ratio "
        "compares the frameworks' call paths, not kernels",
        "mindspore runs below its per-call floor: 4.9 us per call against a 30 us trivial-op "
        "floor (serial): no kernel is launched: a view or metadata change; the ratio "
        "compares the frameworks' call paths, not kernels"]
    assert shared_note_lines(notes) == [
        "2 measurements: a side ran below its trivial-op floor: no kernel is launched: a "
        "view or metadata change"]
    # at the floor and above it, up to 3x: dispatch-bound, as before
    assert explain_measurement("serial", {"mindspore": 31e-6}, OVERHEADS)[0].startswith(
        "mindspore is dispatch-bound here")

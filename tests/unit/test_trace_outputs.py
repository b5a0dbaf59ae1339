"""Table, Chrome trace, JSON record and log, from a trace recorded with fake frameworks."""
from __future__ import annotations

import io
import json

import pytest
from trace_helpers import TickClock, recorded

from opbench.trace.chrome import chrome_trace, track_counts, write_chrome_trace
from opbench.trace.overhead import TracerOverhead, calibrate, calibrate_in_window
from opbench.trace.record import RECORD_VERSION, trace_record, write_log_to
from opbench.trace.summary import summarize
from opbench.trace.table import header_lines, table_text


def by_api(rows):
    return {(r.api, r.inputs): r for r in rows}


def test_summary_counts_calls_and_failures_per_api():
    rows = by_api(summarize(recorded(nested=False)))
    assert set(rows) == {("torch.nn.Linear", None), ("torch.Tensor.__add__", None),
                         ("torch.add", None), ("mindspore.mint.add", None)}
    plus = rows[("torch.Tensor.__add__", None)]
    assert plus.calls == 2 and plus.min_ns < plus.max_ns
    assert plus.total_ns == plus.min_ns + plus.max_ns
    assert plus.mean_ns == plus.total_ns / 2
    assert rows[("torch.add", None)].failed == 1
    torch_rows = [r for r in rows.values() if r.framework == "torch"]
    assert sum(r.share for r in torch_rows) == pytest.approx(1.0)    # no nesting: adds to 1
    assert rows[("mindspore.mint.add", None)].share == pytest.approx(1.0)


def test_summary_groups_by_input_shapes_and_sorts():
    rows = summarize(recorded(), group_by_shape=True, sort_by="calls")
    keyed = by_api(rows)
    assert ("torch.add", "f32[2,3], f32[7]") in keyed
    assert ("torch.Tensor.__add__", "f32[2,3], f32[2,3]") in keyed
    assert rows[0].calls == max(r.calls for r in rows)
    names = [r.api for r in summarize(recorded(), sort_by="name")]
    assert names == sorted(names, key=lambda n: (not n.startswith("mindspore"), n))
    with pytest.raises(ValueError, match="sort_by"):
        summarize(recorded(), sort_by="speed")


def test_nested_summary_keeps_parents_and_children_and_self_time():
    rows = by_api(summarize(recorded(nested=True)))
    linear, add = rows[("torch.nn.Linear", None)], rows[("torch.add", None)]
    assert add.calls == 2                      # inside the layer, and the failed top-level one
    assert linear.self_ns < linear.total_ns
    assert ("Model", None) not in rows         # user scopes are structure, not APIs
    assert ("Model", None) in by_api(summarize(recorded(nested=True), include_scopes=True))


@pytest.mark.parametrize("timing, phrase", [("serial", "synced after every call"),
                                            ("async", "host-side launch time only")])
def test_every_output_says_how_times_were_taken(timing, phrase):
    data = recorded(timing=timing)
    data.overheads = [TracerOverhead("torch", "probe", 1500.0, 1000.0)]
    assert phrase in table_text(data)
    assert "tracer overhead (torch): 500 ns per call" in table_text(data)
    trace = chrome_trace(data)
    assert phrase in trace["otherData"]["timing_note"]
    assert all(e["args"]["timing"] == timing for e in trace["traceEvents"] if e["ph"] == "X")
    assert phrase in trace_record(data)["settings"]["timing_note"]
    log = io.StringIO()
    write_log_to(data, log)
    assert phrase in log.getvalue().splitlines()[0]


def test_table_text_lists_apis_and_failures():
    text = table_text(recorded(), group_by_shape=True)
    assert "torch.nn.Linear" in text and "f32[2,3]" in text and "(1 failed)" in text
    assert "nested: off" in text
    assert "self" in table_text(recorded(nested=True)).split("\n")[2]


def test_chrome_trace_has_complete_events_on_one_track_per_framework_and_thread():
    data = recorded(nested=True)
    trace = chrome_trace(data)
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(complete) == len(data.events)
    assert {e["pid"] for e in complete if e["cat"].startswith("torch")} == {1} or \
        {e["pid"] for e in complete if e["cat"].startswith("torch")} == {2}
    pids = {e["cat"].split(",")[0]: e["pid"] for e in complete}
    assert pids["torch"] != pids["mindspore"]
    names = {(e["name"], e["args"]["name"]) for e in trace["traceEvents"] if e["ph"] == "M"
             and e["name"] in ("process_name", "thread_name")}
    assert ("process_name", "torch (serial timing)") in names
    assert ("thread_name", "MainThread") in names
    assert track_counts(trace) == {"mindspore (serial timing) / MainThread": 1,
                                   "torch (serial timing) / MainThread": len(complete) - 1}
    # nested calls nest: each child lies inside its parent on the same track
    by_index = {event.index: event for event in data.events}
    for event in data.events:
        if event.parent is not None:
            parent = by_index[event.parent]
            assert parent.start_ns <= event.start_ns and event.end_ns <= parent.end_ns
            assert parent.thread_id == event.thread_id
    assert all(e["ts"] >= 0 and e["dur"] >= 0 for e in complete)
    failed = [e for e in complete if "error" in e["args"]]
    assert [e["args"]["error"] for e in failed] == ["ZeroDivisionError"]


def test_chrome_trace_file_is_json(tmp_path):
    path = tmp_path / "trace.json"
    counts = write_chrome_trace(recorded(), path)
    loaded = json.loads(path.read_text())
    assert sum(counts.values()) == sum(1 for e in loaded["traceEvents"] if e["ph"] == "X")


def test_record_is_versioned_and_complete():
    data = recorded(nested=True)
    record = json.loads(json.dumps(trace_record(data)))
    assert record["format"] == "opbench-trace" and record["version"] == RECORD_VERSION
    assert record["settings"]["nested"] is True
    assert len(record["events"]) == len(data.events)
    assert len(record["signatures"]) == len(data.signatures)
    assert record["signatures"][0]["args"][0] == {"tensor": {"shape": [2, 3],
                                                             "dtype": "float32"}}
    assert {row["api"] for row in record["summary"]} >= {"torch.nn.Linear", "torch.add"}
    assert all(e["start_ns"] >= 0 for e in record["events"])


def test_log_has_one_line_per_call_indented_by_depth():
    data = recorded(nested=True)
    out = io.StringIO()
    write_log_to(data, out)
    lines = [line for line in out.getvalue().splitlines() if not line.startswith("#")]
    assert len(lines) == len(data.events)
    assert any("| torch |     torch.add(" in line for line in lines)   # Model > Linear > add
    assert any("FAILED ZeroDivisionError" in line for line in lines)


def test_header_lines_mention_dropped_events_and_notes():
    data = recorded()
    data.dropped_events, data.notes = 5, ["torch: something"]
    lines = header_lines(data)
    assert any("5 events past the cap" in line for line in lines)
    assert lines[-1] == "torch: something"


def test_calibration_takes_the_difference_of_medians_with_a_fake_clock():
    clock = TickClock()
    overhead = calibrate("fake", "probe", lambda n: clock.work(5 * n), lambda n: clock.work(2 * n),
                         clock=clock, calls=100, rounds=5)
    assert overhead.traced_ns_per_call == pytest.approx(5.01)
    assert overhead.untraced_ns_per_call == pytest.approx(2.01)
    assert overhead.per_call_ns == pytest.approx(3.0)
    assert TracerOverhead("f", "p", 1.0, 2.0).per_call_ns == 0.0     # never negative


class _FakeSequence:
    """A sequence of calls whose untraced times are `own` ns and whose recorded times are
    `own` plus `extra` ns each, as a recorder would give them (in order)."""

    def __init__(self, own: list[int], extra: list[int]):
        self.own, self.extra, self.recorded = own, extra, []

    def traced(self, n: int) -> None:
        for _ in range(n):
            self.recorded += [o + e for o, e in zip(self.own, self.extra)]

    def untraced(self, n: int) -> list[int]:
        return list(self.own) * n


def test_in_window_cost_is_the_median_over_the_sequence_of_per_call_differences():
    fake = _FakeSequence(own=[1_600, 3_400, 8_300], extra=[2_200, 6_500, 11_600])
    in_window = calibrate_in_window(3, fake.traced, fake.untraced, lambda: fake.recorded,
                                    repeats=10)
    assert in_window == 6_500.0          # the middle call's, not the mean (6,767)


def test_in_window_cost_is_never_negative_and_zero_when_calls_went_unrecorded():
    faster = _FakeSequence(own=[2_000, 2_000], extra=[-300, -100])
    assert calibrate_in_window(2, faster.traced, faster.untraced,
                               lambda: faster.recorded, repeats=4) == 0.0
    lost = _FakeSequence(own=[2_000, 2_000], extra=[500, 500])
    # a recorder that kept one call fewer than the sequence made after the warm-up (10
    # sequences of 2): no figure rather than a misaligned one
    assert calibrate_in_window(2, lost.traced, lost.untraced,
                               lambda: lost.recorded[:20] + lost.recorded[21:],
                               repeats=4) == 0.0

"""Rounds spread over passes (RunConfig.passes) and blocking launches, on fake frameworks
and a fake clock: what each pass adds, that later passes see what the machine does then,
that a failing pass keeps the earlier rounds, and that the record says all of it."""
from __future__ import annotations

import json

import numpy as np
import pytest
from runner_fakes import (
    FAST_SETTINGS,
    FakeAdapter,
    FakeClock,
    binary_case,
    case_file,
    fake_config,
    fake_session,
    load_instances,
)

from opbench.config import MeasureSettings, RunConfig
from opbench.report.text import header_text, notes_lines
from opbench.results.io import validate_record
from opbench.results.records import RunRecord
from opbench.runloop.recorded_run import run
from opbench.runner import session as runner
from opbench.runner.measure import Side, more_rounds
from opbench.runner.session import Session


def run_passes_fake(tmp_path, *cases, passes=3, settings=FAST_SETTINGS, session=None,
                    **kwargs):
    config = fake_config(passes=passes, settings=settings, **kwargs)
    session = session or fake_session(config)
    instances = load_instances(case_file(tmp_path, *cases))
    seen_passes: list[tuple[int, int]] = []
    record = run(instances, config, session=session,
                 on_pass=lambda i, n, measured, decided: seen_passes.append((i, n))).to_dict()
    return record, session, seen_passes


def test_each_pass_adds_the_first_passes_round_count_at_the_same_loop_count(tmp_path):
    record, _, seen = run_passes_fake(tmp_path, binary_case("add"), passes=3)
    validate_record(record)
    m = record["instances"][0]["measurements"]["serial"]
    # 6 rounds asked for over 3 passes: 2 per pass, pooled into one measurement
    assert (m["rounds"], m["passes"], m["rounds_per_pass"]) == (6, 3, 2)
    assert m["pass_of_round"] == [1, 1, 2, 2, 3, 3]
    assert len(m["samples_s"]["torch"]) == len(m["samples_s"]["mindspore"]) == 6
    assert len(m["order"]) == 6
    assert m["ratio"] == pytest.approx(1.0, rel=1e-3)
    assert seen == [(2, 3), (3, 3)]
    assert record["config"]["passes"] == 3
    assert "rounds over one process, 3 passes each" in header_text(RunRecord.from_dict(record))


def test_rounds_of_later_passes_reflect_a_changed_cost(tmp_path):
    """The point of passes: what the machine does between passes lands inside the
    measurement. Here the target gets 2x slower after pass 1."""
    config = fake_config(passes=3)
    session = fake_session(config)
    target = session.adapters["mindspore"]
    instances = load_instances(case_file(tmp_path, binary_case("add")))

    def slow_down(pass_index, passes, measured, decided):
        target.costs["mindspore.add"] = target.cost_s * 2

    record = run(instances, config, session=session, on_pass=slow_down).to_dict()
    m = record["instances"][0]["measurements"]["serial"]
    ratios = np.array(m["samples_s"]["torch"]) / np.array(m["samples_s"]["mindspore"])
    assert ratios[:2] == pytest.approx([1.0, 1.0], rel=1e-2)      # pass 1
    assert ratios[2:] == pytest.approx([0.5] * 4, rel=1e-2)       # passes 2 and 3
    assert m["ratio"] == pytest.approx(0.5, rel=1e-2)             # the median of all six
    assert m["summary"]["mindspore"]["median_s"] > m["summary"]["torch"]["median_s"]


def test_a_failing_later_pass_keeps_the_earlier_rounds_and_says_so(tmp_path):
    config = fake_config(passes=3)
    session = fake_session(config)
    target = session.adapters["mindspore"]
    instances = load_instances(case_file(tmp_path, binary_case("add")))

    def break_target(pass_index, passes, measured, decided):
        target.functions["mindspore.add"] = target.functions["mindspore.boom"]

    record = run(instances, config, session=session, on_pass=break_target).to_dict()
    validate_record(record)
    inst = record["instances"][0]
    m = inst["measurements"]["serial"]
    assert m["rounds"] == 2 and m["passes"] == 1          # pass 1's rounds, untouched
    # two rounds give no 95% interval: the verdict says so rather than inventing one
    assert m["too_few_rounds"] and inst["verdict"] == "INCONCLUSIVE"
    assert len(inst["pass_errors"]) == 2
    assert inst["pass_errors"][0].startswith("pass 2: mindspore failed calling mindspore.add")
    assert any("pass 2" in line and "earlier passes' rounds are kept" in line
               for line in notes_lines(RunRecord.from_dict(record)))


def test_errors_and_mismatches_are_not_visited_again(tmp_path):
    config = fake_config(passes=3)
    session = fake_session(config)
    instances = load_instances(case_file(
        tmp_path, binary_case("broken", mindspore_api="mindspore.boom"),
        binary_case("wrong", mindspore_api="mindspore.neg")))
    record = run(instances, config, session=session).to_dict()
    assert [i["verdict"] for i in record["instances"]] == ["ERROR", "MISMATCH"]
    assert session.adapters["mindspore"].calls["mindspore.neg"] == 1


def test_backward_measurements_get_their_passes_too(tmp_path):
    record, _, _ = run_passes_fake(tmp_path, binary_case("add", extra="backward: true"),
                                   passes=2)
    ms = record["instances"][0]["measurements"]
    assert set(ms) == {"serial", "serial+backward"}
    assert all(m["passes"] == 2 and m["rounds"] == 6 for m in ms.values())


def test_a_budget_cut_is_restated_in_totals_over_the_passes(tmp_path):
    # A budget so small that every pass is cut to its share of the 6-round floor.
    tight = MeasureSettings(rounds=12, min_sample_time_s=2e-3, warmup_time_s=1e-3,
                            max_time_s=1e-3)
    record, _, _ = run_passes_fake(tmp_path, binary_case("add"), passes=3, settings=tight)
    m = record["instances"][0]["measurements"]["serial"]
    assert m["rounds"] == 6 and m["rounds_per_pass"] == 2
    assert m["rounds_requested"] == 12
    cut = [n for n in m["notes"] if n.startswith("rounds cut")]
    assert cut == ["rounds cut from 12 to 6 (2 in each of 3 passes) to stay within 0.001 s"]


def test_the_file_is_saved_after_every_pass(tmp_path):
    out = tmp_path / "run.json"
    config = fake_config(passes=3)
    instances = load_instances(case_file(tmp_path, binary_case("add")))
    rounds_on_disk: list[int] = []

    def on_pass(pass_index, passes, measured, decided):
        saved = json.loads(out.read_text())
        rounds_on_disk.append(saved["instances"][0]["measurements"]["serial"]["rounds"])

    record = run(instances, config, session=fake_session(config), json_path=out,
                 on_pass=on_pass).to_dict()
    assert rounds_on_disk == [2, 4]
    assert json.loads(out.read_text())["instances"][0]["measurements"]["serial"]["rounds"] == 6
    assert record["complete"] is True


def test_correctness_only_runs_make_one_pass(tmp_path):
    config = fake_config(passes=3, timing=False)
    session = fake_session(config)
    instances = load_instances(case_file(tmp_path, binary_case("add")))
    record = run(instances, config, session=session).to_dict()
    assert record["instances"][0]["verdict"] == "PASS"
    assert session.adapters["mindspore"].calls["mindspore.add"] == 1


@pytest.mark.parametrize("passes", [0, -1, True, 2.0, "3"])
def test_passes_must_be_a_positive_integer(passes):
    with pytest.raises(ValueError, match="passes must be a positive integer"):
        RunConfig(passes=passes, threads=1)


def test_launch_must_be_queued_or_blocking():
    with pytest.raises(ValueError, match="launch must be one of"):
        RunConfig(launch="fast", threads=1)


# --------------------------------------------------------------------------- launch

class RecordingAdapter(FakeAdapter):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.blocked = False

    def block_launches(self) -> None:
        self.blocked = True

    def launch(self) -> str:
        return "blocking" if self.blocked else "queued"


@pytest.mark.parametrize("launch, blocked", [("queued", False), ("blocking", True)])
def test_session_blocks_launches_only_when_asked(monkeypatch, launch, blocked):
    clock = FakeClock()
    made: list[RecordingAdapter] = []

    def fake_get_adapter(name):
        made.append(RecordingAdapter(name, clock))
        return made[-1]

    monkeypatch.setattr(runner, "get_adapter", fake_get_adapter)
    monkeypatch.setattr(Session, "pin_cores", staticmethod(lambda threads: None))
    session = Session(fake_config(launch=launch), clock)
    session.open()
    assert [a.blocked for a in made] == [blocked, blocked]
    assert {i["launch"] for i in session.framework_info().values()} == {launch}


# --------------------------------------------------------------------------- more_rounds

def test_more_rounds_keeps_the_loop_count_and_alternates_the_order():
    clock = FakeClock()
    costs = {"a": 1e-4, "b": 3e-4}
    sides = [Side(n, (lambda c=c: clock.advance(c)), lambda: None) for n, c in costs.items()]
    extra = more_rounds(sides, "serial", loops=50, rounds=4, clock=clock, warmup_time_s=1e-3)
    assert extra.order == (("a", "b"), ("b", "a"), ("a", "b"), ("b", "a"))
    assert extra.per_call_s["a"] == pytest.approx([1e-4] * 4, rel=1e-3)
    assert extra.per_call_s["b"] == pytest.approx([3e-4] * 4, rel=1e-3)
    assert all(calls >= 3 for calls in extra.warmup_calls.values())


@pytest.mark.parametrize("loops, rounds", [(0, 3), (5, 0)])
def test_more_rounds_refuses_empty_work(loops, rounds):
    side = Side("a", lambda: None, lambda: None)
    with pytest.raises(ValueError):
        more_rounds([side], "serial", loops=loops, rounds=rounds, clock=FakeClock())

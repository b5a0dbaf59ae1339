"""The run loop's one scheduler (runloop/scheduler.py) driven by a rule of the test's own:
what every stop rule can rely on, apart from the two the runs use (their behaviour is pinned
by test_runner_passes, test_sequential and the golden runs)."""
from __future__ import annotations

from dataclasses import dataclass, field

from opbench.runloop.scheduler import schedule


class CountingSession:
    """run_instance / extend_instance on plain records: `visits` counts an instance's
    visits; the log says what the scheduler asked, in order."""

    def __init__(self):
        self.log = []

    def run_instance(self, instance):
        self.log.append(("run", instance))
        return {"id": instance, "visits": 1}

    def extend_instance(self, instance, record, visit):
        self.log.append(("extend", instance, visit))
        return {**record, "visits": record["visits"] + 1}


@dataclass
class AtMostVisits:
    """Instance `a` leaves after 2 visits, the rest after 3; the run ends before visit 4."""
    calls: list = field(default_factory=list)

    def judged(self, session, record, visit, records):
        return {**record, "judged_at": visit}

    def opened(self, records, first, count):
        self.calls.append(("opened", count))
        return list(range(count))

    def later_visits(self, session):
        return range(2, 10)

    def look(self, session, visit, records, first, open_, share_s, elapsed_s):
        self.calls.append(("look", visit, tuple(open_), sorted(share_s)))
        return None if visit >= 4 else list(open_)

    def closed(self, record):
        limit = 2 if record["id"] == "a" else 3
        return {**record, "closed": True}, record["visits"] >= limit

    def finish(self, records, first, open_):
        self.calls.append(("finish", tuple(open_)))
        for i in open_:
            records[first + i] = {**records[first + i], "stopped": "end"}


def test_a_rule_decides_who_is_visited_and_when_the_run_ends():
    session, rule, saves = CountingSession(), AtMostVisits(), []
    earlier = [{"id": "from an earlier selection"}]
    ours = schedule(session, ["a", "b"], earlier, rule, save=lambda: saves.append(1))
    assert session.log == [("run", "a"), ("run", "b"),
                           ("extend", "a", 2), ("extend", "b", 2),   # a leaves after 2
                           ("extend", "b", 3)]                       # b after 3
    assert rule.calls == [("opened", 2), ("look", 2, (0, 1), [0, 1]), ("look", 3, (1,), [0, 1]),
                          ("finish", ())]
    assert [r["visits"] for r in ours] == [2, 3] and all(r["closed"] for r in ours)
    assert ours[1]["judged_at"] == 3 and earlier[0] == {"id": "from an earlier selection"}
    assert len(earlier) == 3 and len(saves) == 2 + 3       # after every instance of every visit


def test_the_run_ending_at_a_look_leaves_the_open_ones_to_finish():
    class EndsAtOnce(AtMostVisits):
        def look(self, session, visit, records, first, open_, share_s, elapsed_s):
            return None

    rule = EndsAtOnce()
    ours = schedule(CountingSession(), ["a", "b"], [], rule)
    assert rule.calls[-1] == ("finish", (0, 1))
    assert [r["stopped"] for r in ours] == ["end", "end"] and [r["visits"] for r in ours] == [1, 1]

"""Confirmation before alarm (gate/confirm.py): a planted false alarm is removed by a fresh
rerun at the old level, a real change is kept; exit codes as the gate's."""
from __future__ import annotations

import math

from opbench.gate.confirm import GONE, HOLDS, UNSURE, confirm_changes, exit_code
from opbench.results.changes import detect_changes
from opbench.results.history import TrendPoint


def _point(run, instance, ratio, half_width=0.02):
    return TrendPoint(run, None, f"c{run}", "m1", "2.13.0", "2.10.0", None, instance,
                      instance.split("[")[0], "serial", "PASS", ratio,
                      ratio * math.exp(-half_width), ratio * math.exp(half_width), 30,
                      1e-3, 1e-3 / ratio, threads=2)


def _history():
    """add[real]: slowed from run 4 on and still slow. relu[planted]: runs 4-6 slow by
    chance (a noisy night on the machine), back at its level in any fresh run."""
    points = []
    for run in range(1, 7):
        slow = 1 / 1.25 if run >= 4 else 1.0
        points += [_point(run, "add[real]", slow), _point(run, "relu[planted]", slow),
                   _point(run, "mul[quiet]", 1.0)]
    return points


def test_a_planted_false_alarm_is_removed_and_a_real_change_kept():
    changes = detect_changes(_history())
    assert sorted(c.key.instance for c in changes) == ["add[real]", "relu[planted]"]
    fresh = {"add[real]": 0.8, "relu[planted]": 1.0}
    asked = []

    def rerun(instance, mode):
        asked.append((instance, mode))
        r = fresh[instance]
        return r, r * 0.97, r / 0.97

    confirmed = confirm_changes(changes, rerun)
    assert sorted(asked) == [("add[real]", "serial"), ("relu[planted]", "serial")]
    outcome = {c.change.key.instance: c.outcome for c in confirmed}
    assert outcome == {"add[real]": HOLDS, "relu[planted]": GONE}
    assert exit_code(confirmed) == 1
    assert exit_code([c for c in confirmed if c.change.key.instance == "relu[planted]"]) == 0


def test_a_rerun_that_cannot_tell_is_inconclusive():
    changes = [c for c in detect_changes(_history()) if c.key.instance == "add[real]"]
    confirmed = confirm_changes(changes, lambda i, m: (0.9, 0.75, 1.08))
    assert [c.outcome for c in confirmed] == [UNSURE]
    assert exit_code(confirmed) == 3

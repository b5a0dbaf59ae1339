"""The gate resampled over recorded processes (gate/resample.py): the draw, the tallies, and
that on synthetic processes it shows what the noise floor is for."""
from __future__ import annotations

import copy

import pytest
from test_gate_noise import process_records

from opbench.gate.resample import resample_gates as resample_gates_over_records
from opbench.results.records import RunRecord
from opbench.verdicts.rules import EXIT_OK, EXIT_SLOW

QUIET = {"add[a]": 0.005, "add[b]": 0.005}
# One instance whose ratio moves 9% between processes, as the noisiest shipped ones here.
ONE_LOUD = {"add[a]": 0.005, "add[b]": 0.09}


def slowed(runs, factor: float):
    """The same processes with the target side `factor` times slower (an injected run)."""
    out = copy.deepcopy(runs)
    for run in out:
        for inst in run["instances"]:
            for m in inst["measurements"].values():
                m["samples_s"]["mindspore"] = [t * factor for t in m["samples_s"]["mindspore"]]
    return out


def resample_gates(runs: list[dict], names: list[str], *, injected: list[dict] = (), **options):
    """resample_gates over runs given as their results files' dicts."""
    def typed(dicts):
        return [RunRecord.from_dict(r) for r in dicts]

    return resample_gates_over_records(typed(runs), names, injected=typed(injected), **options)


def names(runs):
    return [f"run{i}.json" for i in range(len(runs))]


def test_identical_quiet_processes_pass_and_an_injected_slowdown_fails():
    runs = process_records(1, 8, QUIET)
    injected = slowed(process_records(2, 3, QUIET), 1.5)
    same, slow = resample_gates(runs, names(runs), baseline_processes=2, gates=30,
                              injected=injected)
    assert same.gates == slow.gates == 30
    assert same.gate_share(EXIT_OK) == 1.0
    assert slow.gate_share(EXIT_SLOW) == 1.0
    assert slow.verdict_share("REGRESSION") == 1.0


def test_the_resampling_is_repeatable_by_seed():
    runs = process_records(3, 10, ONE_LOUD)
    first = resample_gates(runs, names(runs), baseline_processes=1, gates=40, seed=5)[0]
    again = resample_gates(runs, names(runs), baseline_processes=1, gates=40, seed=5)[0]
    assert first.exits == again.exits and first.verdicts == again.verdicts


def test_a_profile_calms_a_loud_instance():
    runs = process_records(4, 30, ONE_LOUD)
    plain = resample_gates(runs, names(runs), baseline_processes=1, gates=150, seed=1)[0]
    floored = resample_gates(runs, names(runs), baseline_processes=1, profile_processes=5,
                           gates=150, seed=1)[0]
    not_passed = 1 - plain.gate_share(EXIT_OK)
    assert not_passed > 0.1                    # a 9% spread stalls or fails a 10% gate often
    assert 1 - floored.gate_share(EXIT_OK) < not_passed / 2


@pytest.mark.parametrize("kwargs, message", [
    (dict(baseline_processes=2, profile_processes=5), "4 runs given; a resampled gate draws 9"),
    (dict(baseline_processes=1, profile_processes=2), "at least 3 processes"),
    (dict(baseline_processes=0), "baseline_processes >= 1"),
])
def test_too_few_runs_are_refused(kwargs, message):
    runs = process_records(5, 4, QUIET)
    with pytest.raises(ValueError, match=message):
        resample_gates(runs, names(runs), **kwargs)


def test_one_injected_run_is_not_enough():
    runs = process_records(6, 4, QUIET)
    with pytest.raises(ValueError, match="at least 2"):
        resample_gates(runs, names(runs), baseline_processes=1, injected=runs[:1])

"""opbench bisect's search (runloop/bisect.py) on fake probes: 16 environments."""
from __future__ import annotations

import pytest

from opbench.runloop.bisect import (
                                    BETWEEN,
                                    LIKE_FIRST,
                                    LIKE_LAST,
                                    UNCLEAR,
                                    Estimate,
                                    bisect_environments,
                                    classify,
                                    )

ENVS = tuple(f"ms-{k}" for k in range(16))


def fake_probe(slowdowns, width=0.02, log=None):
    """probe(k): each instance's estimate from its true slowdown in environment k
    (slowdowns[instance](k), time in k / time in the first), interval +-width."""
    def probe(k):
        if log is not None:
            log.append(k)
        out = {}
        for instance, slowdown in slowdowns.items():
            ratio = 1.0 / slowdown(k)
            out[instance] = Estimate(ratio, ratio * (1 - width), ratio * (1 + width))
        return out
    return probe


def step_at(env, factor=1.5):
    return lambda k: factor if k >= env else 1.0


@pytest.mark.parametrize("step", [1, 2, 7, 8, 9, 14, 15])
def test_one_injected_step_is_found_in_at_most_5_probes(step):
    log = []
    result = bisect_environments(ENVS, fake_probe({"add": step_at(step),
                                                   "sum": lambda k: 1.0}, log=log))
    (found,) = result.regressions
    assert (found.instance, found.kind) == ("add", "step")
    assert (found.last_like_first, found.first_slower) == (step - 1, step) and found.found
    assert found.at_first_slower.high < 1.0          # its interval, below the first's 1
    assert result.not_slower == ("sum",)
    assert len(log) <= 5 and log[0] == 15 and tuple(log) == result.probed


def test_regressions_sharing_a_step_share_the_probes():
    log = []
    result = bisect_environments(ENVS, fake_probe({"add": step_at(9), "mul": step_at(9, 2.0),
                                                   "sum": step_at(9, 1.3)}, log=log))
    assert [r.first_slower for r in result.regressions] == [9, 9, 9]
    assert len(log) <= 5


def test_two_steps_are_found_each_in_its_place():
    result = bisect_environments(ENVS, fake_probe({"add": step_at(3), "mul": step_at(12)}))
    found = {r.instance: (r.last_like_first, r.first_slower, r.kind)
             for r in result.regressions}
    assert found == {"add": (2, 3, "step"), "mul": (11, 12, "step")}


def test_a_slow_creep_is_reported_as_creep_from_where_it_began():
    # 3% slower in every environment from the 4th on: 1.46x over the whole range
    result = bisect_environments(ENVS, fake_probe({"add": lambda k: 1.03 ** max(0, k - 3)}))
    (crept,) = result.regressions
    assert crept.kind == "creep"
    assert crept.first_slower == 4 and crept.last_like_first == 3
    assert crept.total.ratio == pytest.approx(1 / 1.03 ** 12)


def test_a_change_below_the_minimum_is_no_regression():
    result = bisect_environments(ENVS, fake_probe({"add": step_at(5, 1.03)}))
    assert result.regressions == () and result.not_slower == ("add",)
    assert result.probed == (15,)


def test_a_probe_too_noisy_to_tell_leaves_the_step_in_its_interval():
    def probe(k):
        if k == 15:
            return {"add": Estimate(0.6, 0.58, 0.62)}
        return {"add": Estimate(0.8, 0.5, 1.1)}       # holds both 1 and the last's 0.6
    (r,) = bisect_environments(ENVS, probe).regressions
    assert r.kind == "undecided" and (r.last_like_first, r.first_slower) == (0, 15)
    assert not r.found


@pytest.mark.parametrize("estimate,place", [
    (Estimate(1.0, 0.97, 1.03), LIKE_FIRST),
    (Estimate(0.6, 0.58, 0.63), LIKE_LAST),
    (Estimate(0.8, 0.78, 0.82), BETWEEN),
    (Estimate(0.8, 0.5, 1.1), UNCLEAR),
])
def test_a_probe_is_placed_between_the_first_and_the_last(estimate, place):
    assert classify(estimate, Estimate(0.6, 0.58, 0.62)) == place


def test_bisect_needs_two_environments():
    with pytest.raises(ValueError, match="at least two environments"):
        bisect_environments(ENVS[:1], fake_probe({}))


def test_the_command_probes_the_last_environment_and_says_what_it_found(tmp_path,
                                                                           monkeypatch):
    from click.testing import CliRunner
    from runner_fakes import binary_case, case_file, fake_session_class
    from worker_fakes import Spawner

    from opbench.cli.main import cli

    monkeypatch.chdir(tmp_path)
    (tmp_path / "opbench.toml").write_text(
        "[environments]\n" + "".join(f'ms{k} = {{framework = "mindspore"}}\n' for k in range(3)))
    monkeypatch.setattr("opbench.runner.workers.spawn_worker", Spawner(fake_session_class()))
    case_file(tmp_path, binary_case("a"))
    result = CliRunner().invoke(cli, ["bisect", "ms0", "ms1", "ms2", "--cases", "cases.yaml",
                                      "-q", "--out", "probes", "--no-backward"])
    assert result.exit_code == 0, result.output
    assert "3 environments, 1 probe against ms0 (ms2)" in result.output
    assert "  ms0: ms0 0.0-fake\n" in result.output and "  ms2: ms2 0.0-fake\n" in (
        result.output)
    assert "ms1:" not in result.output                      # not measured
    assert "0 slower in ms2, 1 not" in result.output
    assert (tmp_path / "probes" / "probe-2.json").is_file()


def test_the_command_needs_two_distinct_environments(tmp_path):
    from click.testing import CliRunner

    from opbench.cli.main import cli

    result = CliRunner().invoke(cli, ["bisect", "ms0"])
    assert result.exit_code == 2 and "at least two environments" in result.output
    result = CliRunner().invoke(cli, ["bisect", "ms0", "ms0"])
    assert result.exit_code == 2 and "named twice" in result.output


def test_the_report_says_where_each_got_slower_and_names_creep():
    from opbench.report.bisect import bisect_lines

    result = bisect_environments(ENVS, fake_probe({"add": step_at(9),
                                                   "sum": lambda k: 1.03 ** max(0, k - 3)}))
    text = "\n".join(bisect_lines(result))
    assert "add: 1.50x [1.47, 1.53] slower in ms-15 than in ms-0; got slower in ms-9" in text
    assert "sum: 1.43x" in text and "CREEP: it got slower first in ms-4" in text
    assert "creep: 1 of the 2 slowed over more than one environment" in text


def test_the_report_says_what_each_measured_environment_is():
    from opbench.report.bisect import bisect_lines

    result = bisect_environments(ENVS, fake_probe({"add": step_at(9)}))
    lines = bisect_lines(result, {"ms-0": "mindspore@ms-0 2.8.0 build be319822 in /e0/python",
                                  "ms-15": "mindspore 2.10.0 build 2d550373"})
    assert lines[1:3] == ["  ms-0: mindspore@ms-0 2.8.0 build be319822 in /e0/python",
                          "  ms-15: mindspore 2.10.0 build 2d550373"]
    assert lines[3].startswith("1 slower in ms-15")

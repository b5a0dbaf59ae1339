"""The one definition of the run options (opbench/config/options.py): defaults filled in one
place, bad values refused before anything runs, and every front door declaring the same
options from it."""
from __future__ import annotations

import pickle

import pytest
from click.testing import CliRunner

from opbench.cli.main import cli
from opbench.config import DEFAULT_PROCESSES, default_threads
from opbench.config.options import (
    CHECK_OPTIONS,
    LIMIT_OPTIONS,
    OPTIONS,
    OptionError,
    RunOptions,
)

pytest_plugins = ["pytester"]


def test_defaults_are_filled_in_one_place():
    config = RunOptions().to_config()
    assert config.threads == default_threads()
    assert config.launch == "blocking" and config.modes == ("serial",)
    assert config.processes == DEFAULT_PROCESSES and config.quiesce is True
    assert config.settings.rounds == 15
    # a correctness-only run has nothing to spread over processes
    assert RunOptions(processes=5).to_config(timing=False).processes == 1


def test_given_values_win_and_mode_both_means_two_modes():
    config = RunOptions(mode="both", threads=3, launch="queued", processes=2, passes=4,
                        no_quiesce=True, rounds=9, no_backward=True).to_config()
    assert config.modes == ("serial", "async") and config.threads == 3
    assert (config.launch, config.processes, config.passes) == ("queued", 2, 4)
    assert config.quiesce is False and config.backward is False
    assert config.settings.rounds == 9


@pytest.mark.parametrize("given, message", [
    ({"threshold": 0.0}, "--threshold must be a positive finite number"),
    ({"threshold": float("nan")}, "--threshold must be a positive finite number"),
    ({"threshold": float("inf")}, "--threshold must be a positive finite number"),
    ({"processes": 0}, "--processes must be a positive integer"),
    ({"rounds": -1}, "--rounds must be a positive integer"),
    ({"max_time_s": float("inf")}, "--max-time must be a positive finite number"),
    ({"mode": "fast"}, "--mode must be one of"),
    ({"reference": "torch", "target": "torch", "processes": 1},
     "both sides on one framework run in worker processes"),
])
def test_bad_values_are_refused_naming_the_option(given, message):
    with pytest.raises(OptionError, match=message):
        RunOptions(**given).to_config()


def test_a_config_crosses_to_a_worker_as_a_typed_object():
    config = RunOptions(threads=2, processes=3).to_config()
    assert pickle.loads(pickle.dumps(config)) == config


def test_threshold_0_is_a_usage_error_before_any_timing(tmp_path):
    result = CliRunner().invoke(cli, ["run", str(tmp_path), "--threshold", "0"])
    assert result.exit_code == 2
    assert "--threshold must be a positive finite number" in result.output


def test_every_timing_option_is_on_the_command_line_and_in_pytest(pytester):
    commands = {name: cli.commands[name] for name in ("run", "compare", "gate")}
    for name, command in commands.items():
        flags = {opt for p in command.params for opt in getattr(p, "opts", [])}
        for spec in OPTIONS:
            assert f"--{spec.flag}" in flags, (name, spec.flag)
    result = pytester.runpytest("--help")
    text = result.stdout.str()
    for spec in OPTIONS:
        assert f"--opbench-{spec.flag}" in text


def test_check_offers_the_rows_a_correctness_run_uses_and_no_timing_option():
    flags = {opt for p in cli.commands["check"].params for opt in getattr(p, "opts", [])}
    for spec in OPTIONS:
        assert (f"--{spec.flag}" in flags) == (spec in CHECK_OPTIONS), spec.flag
    assert {spec.flag for spec in CHECK_OPTIONS} == {"device", "threads", "reference", "target"}
    help_of = {p.name: p.help for p in cli.commands["check"].params}
    assert all(help_of[spec.field] == spec.help for spec in CHECK_OPTIONS)


def test_check_refuses_a_timing_option_and_a_bad_value_names_the_option(tmp_path):
    assert "No such option '--rounds'" in CliRunner().invoke(
        cli, ["check", str(tmp_path), "--rounds", "6"]).output
    result = CliRunner().invoke(cli, ["check", str(tmp_path), "--threads", "0"])
    assert result.exit_code == 2 and "--threads must be a positive integer" in result.output


def test_the_limits_are_one_row_each_for_both_front_doors(pytester):
    group = {p.name: p for p in cli.params}
    for spec in LIMIT_OPTIONS:
        assert group[spec.field].opts == [f"--{spec.flag}"]
        assert group[spec.field].help == spec.help
    text = "".join(pytester.runpytest("--help").stdout.str().split())
    for spec in LIMIT_OPTIONS:
        assert f"--opbench-{spec.flag}" in text
        assert "".join(spec.help.split()) in text      # the same help, wrapped differently


@pytest.mark.parametrize("flag, value, message", [
    ("max-instances", "0", "max-instances must be a positive integer, not 0"),
    ("input-budget", "8 parsecs", "input-budget: '8 parsecs' is not a size"),
])
def test_both_front_doors_refuse_a_bad_limit_naming_their_option(pytester, tmp_path, flag,
                                                                   value, message):
    result = CliRunner().invoke(cli, [f"--{flag}", value, "list", str(tmp_path)])
    assert result.exit_code == 2 and f"--{message}" in result.output
    run = pytester.runpytest(f"--opbench-{flag}", value)
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    assert f"opbench: --opbench-{message}" in run.stderr.str()

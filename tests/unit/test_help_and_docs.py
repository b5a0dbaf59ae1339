"""Help and docs agree with the code (issue #16, point 7): every option of every command has
help text, defaults are shown one way ("Default: X." in the help, never click's
show_default), and each default the docs state is the code's. `opbench --help` lists every
command with a whole sentence, never one cut off by click ("... (shipped, plus...")."""
from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from opbench.cli.main import cli

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def all_commands(group: click.Group = cli, prefix: str = "opbench"):
    for name, command in sorted(group.commands.items()):
        yield f"{prefix} {name}", command
        if isinstance(command, click.Group):
            yield from all_commands(command, f"{prefix} {name}")


COMMANDS = list(all_commands())
# A group's --help as an 80-column terminal shows it (click leaves a 2-column margin).
NARROW_TERMINAL = {"COLUMNS": "80"}
# One entry of a --help's Commands section, and a summary's wrapped continuation line.
COMMAND_LINE = re.compile(r"^  (\S+)  +(\S.*)$")
CONTINUATION_LINE = re.compile(r"^ {3,}(\S.*)$")


def command_summaries(help_text: str) -> dict[str, list[str]]:
    """The Commands section of a group's --help: command name -> its summary's lines."""
    summaries: dict[str, list[str]] = {}
    lines = help_text.split("Commands:\n", 1)[1].splitlines()
    for line in lines:
        entry, more = COMMAND_LINE.match(line), CONTINUATION_LINE.match(line)
        if entry:
            summaries[entry.group(1)] = [entry.group(2)]
        elif more and summaries:
            summaries[list(summaries)[-1]].append(more.group(1))
    return summaries


def _groups(group: click.Group = cli, words: tuple[str, ...] = ()):
    yield words, group
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from _groups(command, (*words, name))


@pytest.mark.parametrize("words,group", list(_groups()),
                         ids=[" ".join(("opbench", *w)) for w, _ in _groups()])
def test_every_command_summary_is_a_whole_sentence_on_one_line(words, group):
    result = CliRunner(env=NARROW_TERMINAL).invoke(cli, [*words, "--help"], prog_name="opbench")
    assert result.exit_code == 0, result.output
    summaries = command_summaries(result.output)
    assert sorted(summaries) == sorted(group.commands)
    for name, lines in summaries.items():
        text = " ".join(lines)
        # click cuts a docstring's first sentence at the column's width with "..."; an
        # explicit short_help is shown whole, so a cut one means short_help is missing
        assert not text.endswith("..."), f"{name}: summary cut off: {text!r}"
        assert text == group.commands[name].short_help, f"{name}: {text!r}"
        assert text[0].isupper() and text.endswith("."), f"{name}: not a sentence: {text!r}"
        assert len(lines) == 1, f"{name}: summary wraps at 80 columns: {text!r}"


@pytest.mark.parametrize("name,command", COMMANDS, ids=[n for n, _ in COMMANDS])
def test_every_command_help_renders(name, command):
    words = name.split()[1:]
    result = CliRunner(env=NARROW_TERMINAL).invoke(cli, [*words, "--help"], prog_name="opbench")
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"Usage: {name} ")
    assert command.help and command.help.split()[0] in result.output


@pytest.mark.parametrize("name,command", COMMANDS, ids=[n for n, _ in COMMANDS])
def test_every_option_has_help_and_shows_its_default_one_way(name, command):
    for param in command.params:
        if not isinstance(param, click.Option) or param.hidden:
            continue
        if param.name in ("help", "version"):
            continue
        assert param.help and param.help.strip(), f"{name} {param.opts[0]}: no help text"
        assert not param.show_default, (
            f"{name} {param.opts[0]}: show_default; say 'Default: X.' in the help instead")
        unset = type(param.default).__name__ == "Sentinel"     # click's UNSET: no default
        has_default = not unset and param.default not in (None, False, (), [])
        if has_default and not param.is_flag and not param.multiple:
            assert "default" in param.help.lower(), (
                f"{name} {param.opts[0]}: default {param.default!r} not in its help")


def _pytest_doc_defaults() -> dict[str, str]:
    """docs/pytest.md's option table: option -> the default column."""
    rows = {}
    for line in (DOCS / "pytest.md").read_text().splitlines():
        # an escaped pipe (`serial\|async`) is inside a cell
        cells = [c.strip() for c in line.replace("\\|", "/").strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`--opbench-"):
            option = re.match(r"`(--opbench-[a-z-]+)", cells[0]).group(1)
            rows[option] = cells[2]
    return rows


def test_docs_pytest_defaults_match_the_code():
    from opbench.config import DEFAULT_PROCESSES, DEFAULT_THRESHOLD, MeasureSettings

    settings = MeasureSettings()
    expected = {
        "--opbench-threshold": f"{DEFAULT_THRESHOLD:g}",
        "--opbench-rounds": str(settings.rounds),
        "--opbench-min-sample-time": f"{settings.min_sample_time_s:g}",
        "--opbench-max-time": f"{settings.max_time_s:g}",
        "--opbench-mode": "serial",
        "--opbench-device": "cpu",
        "--opbench-launch": "blocking",
        "--opbench-processes": str(DEFAULT_PROCESSES),
    }
    documented = _pytest_doc_defaults()
    for option, value in expected.items():
        assert documented[option] == value, f"docs/pytest.md {option}: {documented[option]}"


def test_pytest_help_states_the_same_defaults(pytester):
    from opbench.config import DEFAULT_PROCESSES, MeasureSettings

    settings = MeasureSettings()
    pytester.makeconftest("")
    from test_pytest_plugin_fake import plugin_args

    text = " ".join(pytester.runpytest_inprocess(*plugin_args(), "--help").outlines)
    text = re.sub(r"\s+", " ", text)
    assert f"Default: {settings.max_time_s:g}." in text
    assert f"Default: {settings.rounds}." in text
    assert f"Default: {settings.min_sample_time_s:g}." in text
    assert f"Default: {DEFAULT_PROCESSES}." in text


def test_cli_help_and_readme_state_the_code_defaults():
    from opbench.config import (
        DEFAULT_PROCESSES,
        DEFAULT_THRESHOLD,
        MeasureSettings,
        RunConfig,
        default_threads,
    )
    from opbench.verdicts.rules import DEFAULT_MIN_EFFECT

    settings = MeasureSettings()
    run_help = {p.name: p.help for p in cli.commands["run"].params if isinstance(p, click.Option)}
    assert f"Default: {settings.max_time_s:g}." in run_help["max_time_s"]
    assert f"Default: {settings.rounds}." in run_help["rounds"]
    assert f"Default: {DEFAULT_THRESHOLD:g}." in run_help["threshold"]
    assert f"Default: {DEFAULT_PROCESSES}." in run_help["processes"]
    assert f"Default: {RunConfig().launch}." in run_help["launch"]
    assert default_threads(2) == 1 and "Default: cores - 1, at least 1." in run_help["threads"]
    readme = (REPO / "README.md").read_text()
    assert f"{settings.rounds} by default)" in readme
    assert f"(default {DEFAULT_THRESHOLD:g})" in readme
    gate_help = {p.name: p.help for p in cli.commands["gate"].params
                 if isinstance(p, click.Option)}
    assert f"{DEFAULT_MIN_EFFECT:g}" in gate_help["min_effect"]
    assert f"`--min-effect` ({DEFAULT_MIN_EFFECT:.0%};" in readme


def test_docs_have_no_leftover_drafting_headings():
    for path in [*DOCS.glob("*.md"), REPO / "README.md"]:
        text = path.read_text()
        assert "text for README" not in text, path

"""`opbench env create`: the plan (pure), its steps with a fake pip, and the refusals."""
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from opbench.cli.main import cli
from opbench.runner.environments import (
    EnvCreateError,
    applicable_constraints,
    create_environment,
    plan_environment,
    requirement_name,
)
from opbench.runner.interpreters import InterpreterError, InterpreterFacts

CHECKOUT = Path(__file__).resolve().parents[2]
CONSTRAINTS = """# pins
torch==2.13.0
mindspore==2.10.0   # the tested one
numpy==1.26.4
PyYAML==6.0.3
"""


def test_requirement_names_are_normalised():
    assert requirement_name("MindSpore==2.9.0") == "mindspore"
    assert requirement_name("py_yaml>=6") == "py-yaml"
    with pytest.raises(EnvCreateError, match="is not a requirement"):
        requirement_name("==2.0")


def test_a_constraint_on_the_requested_framework_is_dropped():
    kept = applicable_constraints(CONSTRAINTS, ["mindspore==2.9.0"])
    assert kept == ("torch==2.13.0", "numpy==1.26.4", "PyYAML==6.0.3")


def test_the_plan_is_a_venv_then_one_pinned_install(tmp_path):
    plan = plan_environment("ms29", ["mindspore==2.9.0"], tmp_path, CHECKOUT, "/usr/bin/py3",
                            CONSTRAINTS)
    assert plan.framework == "mindspore" and plan.directory == (tmp_path / "ms29").resolve()
    venv, pip = plan.commands
    assert venv == ("/usr/bin/py3", "-m", "venv", str(plan.directory))
    assert pip[:3] == (str(plan.python), "-m", "pip")
    assert pip[pip.index("-c") + 1] == str(plan.constraints_file)
    assert pip[-4:] == ("mindspore==2.9.0", "numpy<2", "-e", str(CHECKOUT))
    assert plan.side == f"mindspore@{plan.python}"
    assert plan.toml_entry.startswith('ms29 = {framework = "mindspore", python = "/')


@pytest.mark.parametrize("name,specs,words", [
    ("ms 29", ["mindspore==2.9.0"], "use letters, digits"),
    ("ms29", [], "no framework to install"),
    ("ms29", ["numpy==1.26.4"], "names neither"),
    ("both", ["torch", "mindspore"], "names mindspore and torch"),
])
def test_a_plan_that_cannot_hold_one_side_is_refused(tmp_path, name, specs, words):
    with pytest.raises(EnvCreateError, match=words):
        plan_environment(name, specs, tmp_path, CHECKOUT, sys.executable, CONSTRAINTS)


def test_opbench_comes_from_a_checkout(tmp_path):
    with pytest.raises(EnvCreateError, match="not an opbench checkout"):
        plan_environment("ms29", ["mindspore"], tmp_path, tmp_path, sys.executable)


class FakeSteps:
    """subprocess.run for the plan's steps: makes the venv's directory, fails `fail_at`."""

    def __init__(self, fail_at=None):
        self.commands, self.fail_at = [], fail_at

    def __call__(self, argv, **kwargs):
        self.commands.append(argv)
        if len(self.commands) == self.fail_at:
            return SimpleNamespace(returncode=1, stdout="", stderr="ERROR: No matching "
                                   "distribution found for mindspore==9.9")
        if argv[1:3] == ["-m", "venv"]:
            (Path(argv[3]) / "bin").mkdir(parents=True)
        return SimpleNamespace(returncode=0, stdout="", stderr="")


def test_creating_runs_the_steps_keeps_the_constraints_and_checks_the_side(tmp_path):
    plan = plan_environment("ms29", ["mindspore==2.9.0"], tmp_path, CHECKOUT, sys.executable,
                            CONSTRAINTS)
    steps, checked = FakeSteps(), []

    def check(python, framework):
        checked.append((python, framework))
        return InterpreterFacts(opbench="0.1.0", has_framework=True, python="3.11.7")

    assert create_environment(plan, run=steps, check=check).opbench == "0.1.0"
    assert [tuple(c) for c in steps.commands] == list(plan.commands)
    assert plan.constraints_file.read_text().splitlines() == list(plan.constraints)
    assert checked == [(str(plan.python), "mindspore")]


def test_a_failing_step_names_the_command_and_pip_s_reason(tmp_path):
    plan = plan_environment("ms", ["mindspore==9.9"], tmp_path, CHECKOUT, sys.executable)
    with pytest.raises(EnvCreateError, match=r"pip install .* failed \(exit 1\):\n"
                                             r"ERROR: No matching distribution"):
        create_environment(plan, run=FakeSteps(fail_at=2), check=lambda p, f: {})


def test_an_environment_that_cannot_hold_its_side_says_why(tmp_path):
    plan = plan_environment("ms", ["mindspore==2.9.0"], tmp_path, CHECKOUT, sys.executable)

    def check(python, framework):
        raise InterpreterError(f"the interpreter {python} (for mindspore) has no mindspore")

    with pytest.raises(EnvCreateError, match="made but cannot hold a side: .* has no mindspore"):
        create_environment(plan, run=FakeSteps(), check=check)


def test_an_existing_directory_is_never_installed_over(tmp_path):
    (tmp_path / "ms29").mkdir()
    plan = plan_environment("ms29", ["mindspore"], tmp_path, CHECKOUT, sys.executable)
    steps = FakeSteps()
    with pytest.raises(EnvCreateError, match="exists: remove it or choose another name"):
        create_environment(plan, run=steps)
    assert steps.commands == []


def test_the_command_says_what_went_wrong_without_a_traceback(tmp_path):
    (tmp_path / "ms29").mkdir()
    result = CliRunner().invoke(cli, ["env", "create", "ms29", "mindspore==2.9.0",
                                      "--root", str(tmp_path)])
    assert result.exit_code == 2
    assert "exists: remove it or choose another name" in result.output
    assert "Traceback" not in result.output


def test_the_command_names_the_side_with_the_probes_versions(tmp_path, monkeypatch):
    # the probe's answer is a typed record (InterpreterFacts): the closing line reads its
    # fields (it read them by string keys before)
    from opbench.runner import environments

    def made(plan, echo=lambda line: None, **kwargs):
        return InterpreterFacts(opbench="0.1.0", has_framework=True, python="3.11.7")

    monkeypatch.setattr(environments, "create_environment", made)
    result = CliRunner().invoke(cli, ["env", "create", "ms29", "mindspore==2.9.0",
                                      "--root", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "mindspore with opbench 0.1.0 on Python 3.11.7" in result.output
    assert f"--target mindspore@{tmp_path / 'ms29' / 'bin' / 'python'}" in result.output

"""`opbench env create NAME SPEC...`: an environment a side can run in (wiring only: the
plan and the steps are opbench/runner/environments.py's)."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from opbench.cli.common import fail, out

# opbench's own checkout: what the environment installs, and its pinned versions.
CHECKOUT = Path(__file__).resolve().parents[2]
CONSTRAINTS = CHECKOUT / ".ci" / "constraints.txt"


@click.group("env", short_help="Make environments that hold one side (another framework "
                               "version).")
def env_command() -> None:
    """Environments a side can run in: `--target mindspore@ENV/bin/python`, or by name
    from opbench.toml's [environments] table (docs/cli.md)."""


@env_command.command("create", short_help="A venv with one framework and this opbench.")
@click.argument("name")
@click.argument("specs", nargs=-1, required=True)
@click.option("--root", type=click.Path(file_okay=False), default="envs",
              help="The directory the environment is made in (ROOT/NAME). Default: envs.")
@click.option("--constraints", "constraints_path", type=click.Path(dir_okay=False),
              default=None, help="pip constraints for everything but the named framework "
                                 "(default: the checkout's .ci/constraints.txt).")
def create(name, specs, root, constraints_path):
    """Make ROOT/NAME: a venv holding SPECS (one framework, e.g. 'mindspore==2.9.0'),
    numpy<2 and this opbench (editable, from this checkout), then check it as a run would.
    pip needs the package index; MindSpore is ~800 MB."""
    from opbench.runner.environments import (
        EnvCreateError,
        create_environment,
        plan_environment,
    )

    path = Path(constraints_path) if constraints_path else CONSTRAINTS
    try:
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
    except OSError as exc:
        fail(f"cannot read the constraints {path}: {exc}")
    if constraints_path and not text:
        fail(f"the constraints file {path} is missing or empty")
    try:
        plan = plan_environment(name, specs, Path(root), CHECKOUT, sys.executable, text)
        facts = create_environment(plan, echo=lambda line: out.print(
            f"$ {line}", highlight=False, markup=False))
    except EnvCreateError as exc:
        fail(str(exc))
    out.print(f"{plan.directory}: {plan.framework} with opbench {facts.opbench} on Python "
              f"{facts.python}. Use it as a side:\n  --target {plan.side}\nor by name, "
              f"with this line in opbench.toml's [environments] table:\n  {plan.toml_entry}",
              highlight=False, markup=False, soft_wrap=True)   # "[environments]" is text

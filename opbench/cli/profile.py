"""`opbench profile show A` and `opbench profile compare A B` (wiring only: read the
profiles -> profiles/compare.py -> report/profile_compare.py views).

Exit status: 0 shown or compared; 2 a profile cannot be read (the message names the file and
what is missing) or an option is wrong."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import click
from rich.console import Console

from opbench.cli.common import fail
from opbench.frameworks.apimap import MappingError, load_mapping
from opbench.profiles.compare import compare_profiles, summarise_profile
from opbench.profiles.events import ProfileError
from opbench.profiles.read import read_profile
from opbench.report.console import console_width
from opbench.report.profile_compare import (render_compare_markdown, render_compare_terminal,
                                            render_show_markdown, render_show_terminal)
from opbench.results.io import write_json_atomic

__all__ = ["profile_command"]

def _outputs(f):
    for option in reversed([
        click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
                     help="Write the result as JSON."),
        click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False),
                     default=None, help="Write the tables as Markdown."),
        click.option("--top", type=click.IntRange(1), default=None,
                     help="Show only the first N rows of each table in the terminal (the "
                          "JSON holds all)."),
    ]):
        f = option(f)
    return f


def _read(path: str):
    try:
        return read_profile(path)
    except ProfileError as exc:
        fail(str(exc))


def _write(json_path, data, markdown_path, markdown: str) -> None:
    if json_path:
        write_json_atomic(json_path, data)
    if markdown_path:
        Path(markdown_path).write_text(markdown, encoding="utf-8")
    for path in (json_path, markdown_path):
        if path:
            click.echo(f"wrote {os.fspath(path)}", err=True)


@click.group("profile", short_help="Read the frameworks' own profiles: show one, compare "
                                   "two API by API.")
def profile_command() -> None:
    """Profiles the frameworks' profilers wrote (docs/profile.md): torch.profiler traces
    (CPU or CUDA) and MindSpore / torch_npu profiler directories (CPU or Ascend)."""


@profile_command.command("show", short_help="One profile: step split, top kernels, extra "
                                            "work.")
@click.argument("profile", metavar="A", type=click.Path())
@_outputs
def show(profile: str, json_path, markdown_path, top) -> None:
    """One profile A (a torch.profiler Chrome/Kineto trace, *.json or *.pt.trace.json[.gz],
    or a MindSpore / torch_npu profiler output directory): its span split into kernel, host
    and idle time, its heaviest kernels, its APIs by kernel time, and its casts, layout
    changes and fallbacks. Exit status: 0 shown; 2 the profile cannot be read."""
    summary = summarise_profile(_read(profile))
    _write(json_path, summary.as_dict(), markdown_path, render_show_markdown(summary))
    render_show_terminal(summary, Console(width=console_width(sys.stdout)), top)


@profile_command.command("compare", short_help="Join two profiles API by API (A the "
                                               "reference).")
@click.argument("reference", metavar="A", type=click.Path())
@click.argument("target", metavar="B", type=click.Path())
@_outputs
def compare(reference: str, target: str, json_path, markdown_path, top) -> None:
    """Join profile B against the reference A (each a torch.profiler trace or a MindSpore /
    torch_npu profiler output directory) API by API, through the API mapping: each side's
    step split, the joined APIs by time lost (B's kernel time less A's) with each side's
    kernels, the APIs with no counterpart, and each side's casts, layout changes and
    fallbacks. Exit status: 0 compared; 2 a profile cannot be read."""
    a, b = _read(reference), _read(target)
    try:
        mapping = load_mapping()
    except (MappingError, OSError) as exc:
        fail(f"the API mapping: {exc}")
    comparison = compare_profiles(a, b, mapping)
    _write(json_path, comparison.as_dict(), markdown_path, render_compare_markdown(comparison))
    render_compare_terminal(comparison, Console(width=console_width(sys.stdout)), top)

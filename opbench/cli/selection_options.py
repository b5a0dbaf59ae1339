"""The selection options every case-running command takes (`-k`, `--op`, `--tag`), with one
help text each, so `opbench run`, `compare`, `check`, `list` and `gate` select alike (and
like `pytest cases/`). The matching itself is opbench/selection.py."""
from __future__ import annotations

import click

KEYWORD_HELP = ("Only instances matching this pytest-style expression: substrings of the "
                "instance id, op, tags or file name, combined with and / or / not and "
                "parentheses, e.g. -k \"add and float32\", -k \"not float16\".")
OP_HELP = "Only these operators, by exact name (repeatable)."
TAG_HELP = "Only cases with one of these tags (repeatable)."


def selection_options(f):
    """-k KEYWORD, --op OP..., --tag TAG... as the parameters keyword, ops, tags."""
    for option in reversed([
        click.option("-k", "keyword", default=None, metavar="EXPRESSION", help=KEYWORD_HELP),
        click.option("--op", "ops", multiple=True, help=OP_HELP),
        click.option("--tag", "tags", multiple=True, help=TAG_HELP),
    ]):
        f = option(f)
    return f

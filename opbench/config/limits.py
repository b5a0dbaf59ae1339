"""How much one case may ask of the machine: instances in a sweep, bytes of inputs.

A case file arrives in a pull request, and CI runs it: a sweep of 10^8 instances took 14 GB
and printed nothing, and two 9.3 GB inputs were really allocated. Both are refused when the
case is loaded, before anything is expanded or allocated, with a message naming the case,
the key and the size, and a way to raise the limit for a case that really needs it.

Each limit is read from an environment variable, which `opbench --max-instances` /
`--input-budget` and pytest's `--opbench-max-instances` / `--opbench-input-budget` set (one
row each in options.LIMIT_OPTIONS; options.apply_limit_options checks and sets them), so a
child process (the gate's fresh second stage) inherits the same limits.

Part of the configuration leaf: the options table states these defaults in its help, and
the case loader (cases/case_files.py) applies them; like the rest of opbench.config it
imports nothing of opbench.
"""
from __future__ import annotations

import os
import re

__all__ = ["MAX_INSTANCES_ENV", "INPUT_BUDGET_ENV", "DEFAULT_MAX_INSTANCES",
           "DEFAULT_INPUT_MEMORY_FRACTION", "max_instances", "input_budget_bytes",
           "parse_size", "format_size", "LimitError"]

MAX_INSTANCES_ENV = "OPBENCH_MAX_INSTANCES"
INPUT_BUDGET_ENV = "OPBENCH_INPUT_BUDGET"
# Instances of one case: each is checked (and timed) separately, seconds apiece, so 100,000
# is already days of measuring; the largest sweep in the shipped library has 8.
DEFAULT_MAX_INSTANCES = 100_000
# One instance's inputs together, as a fraction of the machine's memory: each array exists
# as the numpy original plus one copy per framework, and outputs of the same size follow,
# so a quarter of the memory keeps the whole instance within it.
DEFAULT_INPUT_MEMORY_FRACTION = 0.25
# When the machine's memory cannot be read: a budget that fits any CI runner.
FALLBACK_MEMORY_BYTES = 4 * 2**30

_UNITS = {"": 1, "b": 1, "k": 2**10, "kb": 2**10, "kib": 2**10, "m": 2**20, "mb": 2**20,
          "mib": 2**20, "g": 2**30, "gb": 2**30, "gib": 2**30, "t": 2**40, "tb": 2**40,
          "tib": 2**40}
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*$")


class LimitError(ValueError):
    """A limit given on the command line or in the environment that is not a valid value."""


def parse_size(text: str) -> int:
    """'512MiB', '2G', '1000000' -> bytes (binary units)."""
    match = _SIZE.match(str(text))
    unit = match.group(2).lower() if match else None
    if not match or unit not in _UNITS:
        raise LimitError(f"{text!r} is not a size (e.g. 2GiB, 512M, 1000000)")
    return int(float(match.group(1)) * _UNITS[unit])


def format_size(n_bytes: float) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n_bytes >= size:
            return f"{n_bytes / size:.1f} {unit}"
    return f"{int(n_bytes)} bytes"


def machine_memory_bytes() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return FALLBACK_MEMORY_BYTES


def max_instances() -> int:
    text = os.environ.get(MAX_INSTANCES_ENV)
    if not text:
        return DEFAULT_MAX_INSTANCES
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise LimitError(f"{MAX_INSTANCES_ENV}={text!r} is not a positive integer")
    return value


def input_budget_bytes() -> int:
    text = os.environ.get(INPUT_BUDGET_ENV)
    if not text:
        return int(machine_memory_bytes() * DEFAULT_INPUT_MEMORY_FRACTION)
    return parse_size(text)

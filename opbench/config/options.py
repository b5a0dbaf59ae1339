"""One definition of the run options, for every front door.

`opbench run/compare/check/gate` (click) and `pytest --benchmark` (argparse, with an
`--opbench-` prefix) declare their timing options from OPTIONS below, and both map what the
user gave onto `RunOptions`, whose `to_config()` is the one place where defaults are filled
in and values are checked. What comes out is a `RunConfig` (opbench/config/__init__.py): typed, immutable, and
what a worker process or the gate's second stage receives (pickled), never option names.
The idea is pytest-benchmark's `add_display_options(addoption, prefix)`, which serves its
plugin and its CLI alike, and asv's shared `common_args`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Callable

from opbench.config import (
    ASYNC,
    DEFAULT_MAX_TIME_S,
    DEFAULT_MIN_SAMPLE_TIME_S,
    DEFAULT_PROCESSES,
    DEFAULT_ROUNDS,
    DEFAULT_THRESHOLD,
    LAUNCH_BLOCKING,
    LAUNCH_MODES,
    SERIAL,
    MeasureSettings,
    RunConfig,
    default_threads,
)

__all__ = ["BOTH_MODES", "MODE_CHOICES", "OPTIONS", "SHARD_OPTION", "OptionSpec", "RunOptions",
           "OptionError", "parse_shard_option"]

BOTH_MODES = "both"
MODE_CHOICES = (SERIAL, ASYNC, BOTH_MODES)


class OptionError(ValueError):
    """A bad option value; the message names the option as the user typed it."""


@dataclass(frozen=True)
class OptionSpec:
    """One run option: its field in RunOptions, its flag (without the front door's prefix),
    its type (a callable, or a tuple of choices; bool means a flag) and its help text."""

    field: str
    flag: str
    kind: Any
    help: str
    default: Any = None


OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("mode", "mode", MODE_CHOICES,
               "serial: sync after every call (latency); async: one sync per sample "
               "(throughput); both: each, side by side. Default: serial."),
    OptionSpec("launch", "launch", LAUNCH_MODES,
               "blocking: every operator runs to completion in its call, so a serial time is "
               "the op's own cost; queued: each framework launches operators its own way "
               "(MindSpore through PyNative's launch queue, what a user waiting on each "
               "result sees). Default: blocking."),
    OptionSpec("processes", "processes", int,
               f"Fresh worker processes each instance's rounds are spread over, so a "
               f"process's own offset lands inside the interval (1: measure in this "
               f"process). Default: {DEFAULT_PROCESSES}."),
    OptionSpec("passes", "passes", int,
               "Spread each instance's rounds over this many passes through the selection "
               "in each process, so slow drift of the machine lands inside every measurement. "
               "Default: 1."),
    OptionSpec("no_quiesce", "no-quiesce", bool,
               "Do not wait before each sample until the other framework's threads are idle "
               "(for studying the interference the wait prevents; detection still runs)."),
    OptionSpec("threshold", "threshold", float,
               f"Ratio threshold for cases that set none. Default: {DEFAULT_THRESHOLD}."),
    OptionSpec("device", "device", str, "cpu, cuda[:N] or ascend[:N]. Default: cpu.", "cpu"),
    OptionSpec("threads", "threads", int,
               "Intra-op threads, set equal in both frameworks (one core is left for the "
               "frameworks' dispatch threads). Default: cores - 1, at least 1."),
    OptionSpec("reference", "reference", str,
               "The reference framework (the ratio's numerator). Default: torch.",
               "torch"),
    OptionSpec("target", "target", str, "The framework under test. Default: mindspore.",
               "mindspore"),
    OptionSpec("rounds", "rounds", int,
               f"Interleaved rounds per instance (>= 6 for a 95% interval). Default: "
               f"{DEFAULT_ROUNDS}."),
    OptionSpec("min_sample_time_s", "min-sample-time", float,
               f"Seconds each timed sample lasts at least. Default: "
               f"{DEFAULT_MIN_SAMPLE_TIME_S:g}."),
    OptionSpec("max_time_s", "max-time", float,
               f"Budget per measurement for the timed rounds, seconds. Default: "
               f"{DEFAULT_MAX_TIME_S:g}."),
    OptionSpec("no_backward", "no-backward", bool, "Skip forward+backward timing."),
)


# Which slice of the selection to run (shard.py). Not a timing option (the gate and
# `compare` take no shards), so it is kept out of OPTIONS; `opbench run` declares it as
# --shard and pytest as --opbench-shard, both from this spec, both parsed by
# parse_shard_option.
SHARD_OPTION = OptionSpec(
    "shard", "shard", str,
    "Run only shard K of N of the selection (K/N, e.g. 2/4): a stable slice, the same on "
    "every machine, that keeps a case's instances together; N jobs with 1/N..N/N cover the "
    "selection once (`opbench merge` joins their results).")


def parse_shard_option(text: str | None, flag: str = "--shard"):
    """A shard.Shard from the option's text (None: not given). Raises OptionError naming
    the option."""
    from opbench.config import ShardError, parse_shard

    if text is None:
        return None
    try:
        return parse_shard(text)
    except ShardError as exc:
        raise OptionError(f"{flag}: {exc}") from None


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise OptionError(f"--{name} must be a positive integer, not {value!r}")
    return value


def _positive_finite(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not math.isfinite(value) or value <= 0:
        raise OptionError(f"--{name} must be a positive finite number, not {value!r}")
    return float(value)


_CHECKS: dict[str, Callable[[str, Any], Any]] = {
    "processes": _positive_int, "passes": _positive_int, "threads": _positive_int,
    "rounds": _positive_int, "threshold": _positive_finite,
    "min_sample_time_s": _positive_finite, "max_time_s": _positive_finite,
}
_FLAGS = {spec.field: spec.flag for spec in OPTIONS}


@dataclass(frozen=True)
class RunOptions:
    """What the user gave (None: not given). to_config() fills in the defaults."""

    mode: str | None = None
    launch: str | None = None
    processes: int | None = None
    passes: int | None = None
    no_quiesce: bool | None = None
    threshold: float | None = None
    device: str | None = None
    threads: int | None = None
    reference: str | None = None
    target: str | None = None
    rounds: int | None = None
    min_sample_time_s: float | None = None
    max_time_s: float | None = None
    no_backward: bool | None = None

    @classmethod
    def from_mapping(cls, values: dict[str, Any]) -> "RunOptions":
        """From a front door's parsed values; keys that are not run options are ignored."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in names})

    def given(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) is not None}

    def to_config(self, timing: bool = True) -> RunConfig:
        """The RunConfig these options ask for. Raises OptionError naming the option."""
        for name, value in self.given().items():
            check = _CHECKS.get(name)
            if check is not None:
                check(_FLAGS[name], value)
        if self.mode is not None and self.mode not in MODE_CHOICES:
            raise OptionError(f"--mode must be one of {', '.join(MODE_CHOICES)}, not "
                              f"{self.mode!r}")
        settings_kw = {k: getattr(self, k) for k in ("rounds", "min_sample_time_s",
                                                     "max_time_s")
                       if getattr(self, k) is not None}
        mode = self.mode or SERIAL
        try:
            return RunConfig(
                reference=self.reference or "torch", target=self.target or "mindspore",
                device=self.device or "cpu",
                threads=self.threads or default_threads(),
                modes=(SERIAL, ASYNC) if mode == BOTH_MODES else (mode,),
                launch=self.launch or LAUNCH_BLOCKING,
                passes=self.passes or 1,
                # correctness-only runs have nothing to spread over processes
                processes=(self.processes or DEFAULT_PROCESSES) if timing else 1,
                quiesce=not self.no_quiesce,
                threshold=DEFAULT_THRESHOLD if self.threshold is None else self.threshold,
                backward=not self.no_backward, timing=timing,
                settings=MeasureSettings(**settings_kw))
        except ValueError as exc:
            raise OptionError(str(exc)) from None

"""One definition of the run options, for every front door.

`opbench run/compare/gate` (click) and `pytest --benchmark` (argparse, with an `--opbench-`
prefix) declare their run options from OPTIONS below (`opbench check` the CHECK_OPTIONS
among them; both doors the LIMIT_OPTIONS and SHARD_OPTION beside them), and both map what
the user gave onto `RunOptions`, whose `to_config()` is the one place where defaults are
filled in and values are checked. What comes out is a `RunConfig` (opbench/config/
__init__.py): typed, immutable, and what a worker process or the gate's second stage
receives (pickled), never option names.
Each row also says where a results record keeps its value, so `opbench gate` can measure
like its baseline without a list of its own. The idea is pytest-benchmark's
`add_display_options(addoption, prefix)`, which serves its plugin and its CLI alike, and
asv's shared `common_args`.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable, Mapping

from opbench.config import (
                            ASYNC,
                            DEFAULT_MAX_TIME_S,
                            DEFAULT_MIN_SAMPLE_TIME_S,
                            DEFAULT_PROCESSES,
                            DEFAULT_ROUNDS,
                            DEFAULT_THRESHOLD,
                            LAUNCH_BLOCKING,
                            LAUNCH_MODES,
                            LAUNCH_QUEUED,
                            SERIAL,
                            MeasureSettings,
                            RunConfig,
                            Sequential,
                            default_threads,
                            )
from opbench.config.limits import (
                                   DEFAULT_MAX_INSTANCES,
                                   INPUT_BUDGET_ENV,
                                   MAX_INSTANCES_ENV,
                                   LimitError,
                                   parse_size,
                                   )
from opbench.config.environment_table import load_environments
from opbench.config.sides import SideSpecError, parse_side

__all__ = ["BOTH_MODES", "CHECK_OPTIONS", "INPUT_BUDGET_OPTION", "LIMIT_OPTIONS",
           "MAX_INSTANCES_OPTION", "MODE_CHOICES", "OPTIONS", "SHARD_OPTION", "OptionSpec",
           "RunOptions", "OptionError", "apply_limit_options", "parse_duration",
           "parse_shard_option"]

BOTH_MODES = "both"
MODE_CHOICES = (SERIAL, ASYNC, BOTH_MODES)


class OptionError(ValueError):
    """A bad option value; the message names the option as the user typed it."""


def _mode_of(modes: Any) -> str | None:
    """--mode as a recorded run's `modes` list implies it."""
    modes = list(modes or [])
    if sorted(modes) == sorted((SERIAL, ASYNC)):
        return BOTH_MODES
    return modes[0] if modes else None


def _negated(value: Any) -> bool:
    """A --no-X flag from the recorded X (--no-backward from `backward`)."""
    return not value


@dataclass(frozen=True)
class OptionSpec:
    """One run option: its field in RunOptions, its flag (without the front door's prefix),
    its type (a callable, or a tuple of choices; bool means a flag) and its help text; and
    what the rest of opbench needs to know about it, so that a new row is all a new option
    takes: where a run's results record keeps its value, whether the gate measures like its
    baseline on it, and whether a correctness-only run (`opbench check`) offers it."""

    field: str
    flag: str
    kind: Any
    help: str
    default: Any = None
    metavar: str | None = None
    # Where a results record's `config` (RunConfig.as_dict()) keeps the value: a key, or
    # "settings.<key>" for MeasureSettings. None: no run records it (the global limits).
    recorded_as: str | None = None
    # The option's value from the recorded one, where they are spelt differently (--mode
    # from `modes`, --no-backward from `backward`).
    from_recorded: Callable[[Any], Any] | None = None
    # What a results file written before the key existed implies: it was measured that way
    # (queued launches, one pass, in one process).
    recorded_default: Any = None
    # `opbench gate` takes the baseline's value when the user leaves the option out
    # (gate/baseline.py inherit_settings), so both runs are measured alike. False where a
    # baseline's value must not be followed; the row says why.
    inherited: bool = True
    # Only a timing run uses it; `opbench check` (correctness only) does not offer it.
    timing_only: bool = True

    def recorded_value(self, config: Mapping[str, Any]) -> Any:
        """The option's value in a results record's `config`; None when it records none."""
        if self.recorded_as is None:
            return None
        *parents, key = self.recorded_as.split(".")
        holder: Mapping[str, Any] = config
        for parent in parents:
            holder = holder.get(parent) or {}
        value = holder.get(key, self.recorded_default)
        if value is None or self.from_recorded is None:
            return value
        return self.from_recorded(value)

    def as_typed(self, value: Any) -> str:
        """The option as a user types it for `value` (a flag: just its name)."""
        return f"--{self.flag}" if self.kind is bool else f"--{self.flag} {value}"


def _on_or_unset(value: bool) -> bool | None:
    """A flag recorded as false reads as not given (None), like the user who left it off."""
    return True if value else None


# The order is the order of `--help` and of the gate's "measuring like the baseline" line:
# how each side is measured first, then what is compared with what.
OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("mode", "mode", MODE_CHOICES,
               "serial: sync after every call (latency); async: one sync per sample "
               "(throughput); both: each, side by side. Default: serial.",
               recorded_as="modes", from_recorded=_mode_of),
    OptionSpec("threads", "threads", int,
               "Intra-op threads, set equal in both frameworks (one core is left for the "
               "frameworks' dispatch threads). Default: cores - 1, at least 1.",
               recorded_as="threads", timing_only=False),
    OptionSpec("launch", "launch", LAUNCH_MODES,
               "blocking: every operator runs to completion in its call, so a serial time is "
               "the op's own cost; queued: each framework launches operators its own way "
               "(MindSpore through PyNative's launch queue, what a user waiting on each "
               "result sees). Default: blocking.",
               recorded_as="launch", recorded_default=LAUNCH_QUEUED),
    OptionSpec("passes", "passes", int,
               "Spread each instance's rounds over this many passes through the selection "
               "in each process, so slow drift of the machine lands inside every measurement. "
               "Default: 1.",
               recorded_as="passes", recorded_default=1),
    OptionSpec("processes", "processes", int,
               f"Fresh worker processes each instance's rounds are spread over, so a "
               f"process's own offset lands inside the interval (1: measure in this "
               f"process). Default: {DEFAULT_PROCESSES}.",
               recorded_as="processes", recorded_default=1),
    OptionSpec("no_quiesce", "no-quiesce", bool,
               "Do not wait before each sample until the other framework's threads are idle "
               "(for studying the interference the wait prevents; detection still runs).",
               recorded_as="quiesce", from_recorded=_negated),
    OptionSpec("rounds", "rounds", int,
               f"Interleaved rounds per instance (>= 6 for a 95% interval). Default: "
               f"{DEFAULT_ROUNDS}.",
               recorded_as="settings.rounds"),
    OptionSpec("min_sample_time_s", "min-sample-time", float,
               f"Seconds each timed sample lasts at least. Default: "
               f"{DEFAULT_MIN_SAMPLE_TIME_S:g}.",
               recorded_as="settings.min_sample_time_s"),
    OptionSpec("max_time_s", "max-time", float,
               f"Budget per measurement for the timed rounds, seconds. Default: "
               f"{DEFAULT_MAX_TIME_S:g}.",
               recorded_as="settings.max_time_s"),
    # Not inherited: the gate measures the fixed protocol (its own rounds and processes).
    OptionSpec("time_budget", "time-budget", str,
               "Wall-time budget for the measuring (e.g. 90s, 10m, 1h): the instances still "
               "undecided get no more processes once it would be exceeded. Only for "
               "sequential stopping, the default of `opbench run` and `compare` (--rounds, "
               "--processes or --passes fix the protocol instead). Default: none.",
               metavar="DURATION", recorded_as="sequential.time_budget_s", inherited=False),
    # Not inherited and not recorded: it changes where the floors and ceilings come from,
    # not what they are (the record's `machine_facts` says which).
    OptionSpec("remeasure_machine", "remeasure-machine", bool,
               "Measure the machine facts (each side's per-call floors, the memory and "
               "FLOP/s ceilings) now, even when the cache holds them for this machine, "
               "these framework builds and threads (kept for 7 days in $OPBENCH_CACHE_DIR, "
               "else $XDG_CACHE_HOME/opbench or ~/.cache/opbench).",
               inherited=False),
    # Not inherited: profiling runs after the timing and never enters a sample, so a
    # baseline's profile asks nothing of the gate's run.
    OptionSpec("profile", "profile", bool,
               "After each instance is timed, run each side's call again a few times under "
               "its framework's own profiler (torch.profiler, mindspore.Profiler): its "
               "kernels, kernel time and host time per call, casts and layout changes "
               "(docs/profile.md). Never inside a timed sample.",
               recorded_as="profile", recorded_default=False, inherited=False,
               from_recorded=_on_or_unset),
    OptionSpec("no_backward", "no-backward", bool, "Skip forward+backward timing.",
               recorded_as="backward", from_recorded=_negated),
    # Not inherited: a threshold moves only the cross-framework verdict, not what a sample
    # means, so the gate's own (or the user's) stands.
    OptionSpec("threshold", "threshold", float,
               f"Ratio threshold for cases that set none. Default: {DEFAULT_THRESHOLD}.",
               recorded_as="threshold", inherited=False),
    # Not inherited: a gate measures on the device it is given; a baseline from another
    # device is listed as a difference (gate/baseline.py environment_notes), not followed.
    OptionSpec("device", "device", str, "cpu, cuda[:N] or ascend[:N]. Default: cpu.", "cpu",
               recorded_as="device", inherited=False, timing_only=False),
    # Not inherited: a baseline of other frameworks is refused by the gate, not followed.
    OptionSpec("reference", "reference", str,
               "The reference side (the ratio's numerator): FRAMEWORK, FRAMEWORK@PYTHON or a "
               "named environment (docs/cli.md). Default: torch.",
               "torch", recorded_as="reference", inherited=False, timing_only=False),
    OptionSpec("target", "target", str, "The side under test: FRAMEWORK, FRAMEWORK@PYTHON "
               "or a named environment. Default: mindspore.",
               "mindspore", recorded_as="target", inherited=False, timing_only=False),
)
# What a correctness-only run uses: the options `opbench check` offers.
CHECK_OPTIONS: tuple[OptionSpec, ...] = tuple(spec for spec in OPTIONS if not spec.timing_only)


# How much one case may ask of the machine (limits.py). Global, not part of a run's
# configuration: `opbench --max-instances N <command>` and pytest's --opbench-max-instances
# put them in the environment (apply_limit_options), where the case loader and child
# processes read them.
MAX_INSTANCES_OPTION = OptionSpec(
    "max_instances", "max-instances", int,
    f"Most instances one case's sweep may make (also ${MAX_INSTANCES_ENV}); a bigger sweep "
    f"is refused before it is expanded. Default: {DEFAULT_MAX_INSTANCES:,}.")
INPUT_BUDGET_OPTION = OptionSpec(
    "input_budget", "input-budget", str,
    f"Most memory one instance's inputs may take, e.g. 8GiB (also ${INPUT_BUDGET_ENV}); "
    f"bigger inputs are refused before they are allocated. Default: a quarter of this "
    f"machine's memory.", metavar="SIZE")
LIMIT_OPTIONS: tuple[OptionSpec, ...] = (MAX_INSTANCES_OPTION, INPUT_BUDGET_OPTION)


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


def apply_limit_options(max_instances: Any = None, input_budget: Any = None) -> None:
    """The limits a front door was given (None: not given), checked before any case is read
    and put in the environment, for the case loader and child processes. Raises OptionError
    naming the option."""
    if max_instances is not None:
        _positive_int(MAX_INSTANCES_OPTION.flag, max_instances)
        os.environ[MAX_INSTANCES_ENV] = str(max_instances)
    if input_budget is not None:
        try:
            parse_size(input_budget)
        except LimitError as exc:
            raise OptionError(f"--{INPUT_BUDGET_OPTION.flag}: {exc}") from None
        os.environ[INPUT_BUDGET_ENV] = str(input_budget)


_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?)\s*(s|m|h)?\s*$")
_UNIT_S = {None: 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(name: str, value: Any) -> float:
    """Seconds from `90`, `90s`, `10m` or `1.5h`; OptionError naming the option otherwise."""
    match = _DURATION.match(str(value))
    seconds = float(match.group(1)) * _UNIT_S[match.group(2)] if match else 0.0
    if seconds <= 0:
        raise OptionError(f"--{name} must be a positive duration such as 90s, 10m or 1h, "
                          f"not {value!r}")
    return seconds


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
    time_budget: str | None = None
    remeasure_machine: bool | None = None
    profile: bool | None = None

    @classmethod
    def from_mapping(cls, values: dict[str, Any]) -> "RunOptions":
        """From a front door's parsed values; keys that are not run options are ignored."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in names})

    def given(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) is not None}

    def fixed_protocol(self) -> bool:
        """The user fixed the protocol: --rounds, --processes or --passes given."""
        return any(v is not None for v in (self.rounds, self.processes, self.passes))

    def _sequential(self, timing: bool, sequential: bool) -> Sequential | None:
        """Sequential stopping where the front door offers it and the user did not fix the
        protocol; --time-budget anywhere else is refused."""
        flag = _FLAGS["time_budget"]
        if not (sequential and timing):
            if self.time_budget is not None:
                raise OptionError(f"--{flag}: this command measures the fixed protocol "
                                  f"(only `opbench run` and `opbench compare` stop early)")
            return None
        if self.fixed_protocol():
            if self.time_budget is not None:
                raise OptionError(f"--{flag} needs sequential stopping, and --rounds, "
                                  f"--processes or --passes fix the protocol")
            return None
        budget = (None if self.time_budget is None
                  else parse_duration(flag, self.time_budget))
        return Sequential(time_budget_s=budget)

    def to_config(self, timing: bool = True, sequential: bool = False) -> RunConfig:
        """The RunConfig these options ask for. Raises OptionError naming the option.
        sequential: the front door stops early on the verdict (`opbench run`, `compare`)
        unless the user fixed the protocol (fixed_protocol)."""
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
            environments = load_environments(Path.cwd())
            reference = parse_side(self.reference or "torch", environments)
            target = parse_side(self.target or "mindspore", environments)
        except SideSpecError as exc:
            raise OptionError(f"--reference/--target: {exc}") from None
        if (reference.python or target.python) and timing and self.processes == 1:
            raise OptionError("--reference/--target: a side in another interpreter runs in "
                              "worker processes; --processes 1 measures in this one")
        try:
            return RunConfig(
                reference=reference, target=target,
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
                settings=MeasureSettings(**settings_kw),
                sequential=self._sequential(timing, sequential),
                remeasure_machine=bool(self.remeasure_machine),
                profile=bool(self.profile) and timing)
        except ValueError as exc:
            raise OptionError(str(exc)) from None

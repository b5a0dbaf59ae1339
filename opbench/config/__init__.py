"""The run configuration: the leaf every layer of opbench may import.

What a run is asked to do, as frozen records: RunConfig (its two sides, device, threads,
modes, threshold, launch mode, passes, processes), MeasureSettings with the reasons for their
defaults, and the slice of the selection and of the machine a run owns (--shard K/N, a
pytest-xdist worker's placement). The one table of run options every front door declares
its flags from is options.py beside it; limits.py beside it says how much one case may ask
of the machine; vocabulary.py names frameworks, timing and launch modes and dtypes once;
sides.py is a side (Side: framework, interpreter, label) and its spelling, and
environment_table.py the named environments a side may be given by.

Nothing here imports another opbench package (an import-linter contract holds it).
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

# The names of the timing and launch modes, and why each exists, are the vocabulary's
# (re-exported here, where the run configuration uses them).
from opbench.config.sides import Side, parse_side, side_labels
from opbench.config.vocabulary import (
                                       ASYNC,
                                       LAUNCH_BLOCKING,
                                       LAUNCH_MODES,
                                       LAUNCH_QUEUED,
                                       MINDSPORE,
                                       MODES,
                                       SERIAL,
                                       TORCH,
                                       )

__all__ = ["ASYNC", "DEFAULT_MAX_TIME_S", "DEFAULT_MIN_SAMPLE_TIME_S", "DEFAULT_PROCESSES",
           "DEFAULT_ROUNDS", "DEFAULT_THRESHOLD", "DEFAULT_WARMUP_TIME_S", "LAUNCH_BLOCKING",
           "LAUNCH_MODES", "LAUNCH_QUEUED", "MAX_LOOPS", "MIN_ROUNDS", "MODES",
           "OPBENCH_VERSION", "SERIAL", "MeasureSettings", "Placement", "RunConfig",
           "DEFAULT_MAX_PROCESSES", "Sequential", "Shard",
           "ShardError", "ShardInfo", "Side", "default_threads", "parse_shard"]

# opbench's own version, written into every results record (environment.opbench);
# pyproject.toml's [project] version must match (tests/unit/test_packaging.py).
OPBENCH_VERSION = "0.1.0"


# -- the protocol's settings ---------------------------------------------------------

# Default sample length: long enough that scheduler jitter on a shared machine (~0.1-1 ms)
# stays a few percent, short enough that 2 sides x 15 rounds of it, plus a warm-up in each
# of 3 worker processes, fit the ~1.5 s per instance that lets the whole library time in
# under 20 minutes here. (20 ms until worker processes; the gate used 10 ms already.)
DEFAULT_MIN_SAMPLE_TIME_S = 0.01
# 15 interleaved rounds give a distribution-free 95% interval for the median ratio from
# order statistics (n >= 6 is the minimum for 95%; 15 makes it reasonably tight).
DEFAULT_ROUNDS = 15
MIN_ROUNDS = 6
# Warm-up: JIT/kernel selection, allocator pools and caches settle within a few calls; run
# at least this many calls and at least this long.
DEFAULT_WARMUP_TIME_S = 0.05
# Stop growing the loop count here: an op this cheap is pure dispatch anyway.
MAX_LOOPS = 1_000_000
# Per-measurement time budget for the timed rounds: a library of a few hundred instances must
# time in ~20 minutes on 2 cores. Rounds shrink (never below MIN_ROUNDS) and the loop count is
# capped so one slow kernel, or a side 1000x slower than the other, cannot stall a run.
DEFAULT_MAX_TIME_S = 1.2


@dataclass(frozen=True)
class MeasureSettings:
    mode: str = SERIAL
    rounds: int = DEFAULT_ROUNDS
    min_sample_time_s: float = DEFAULT_MIN_SAMPLE_TIME_S
    warmup_time_s: float = DEFAULT_WARMUP_TIME_S
    max_time_s: float = DEFAULT_MAX_TIME_S
    max_loops: int = MAX_LOOPS
    # The floor the time budget may cut rounds to. A measurement spread over several passes
    # (RunConfig.passes) gets a share of it per pass, so the total keeps the floor.
    min_rounds: int = MIN_ROUNDS

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {self.mode!r}")
        if self.rounds < 1:
            raise ValueError("rounds must be >= 1")
        if self.min_rounds < 1:
            raise ValueError("min_rounds must be >= 1")


# -- sequential stopping ---------------------------------------------------------------

# The most worker processes an undecided instance gets under sequential stopping: twice the
# fixed protocol's 3. The between-process spread is what widens an undecided interval
# (matmul[tokens=1]: log SD 0.55 and 1.6 in two runs), and only more processes narrow it.
DEFAULT_MAX_PROCESSES = 6


@dataclass(frozen=True)
class Sequential:
    """Sequential stopping on the verdict (verdicts/sequential.py, runloop/sequential_run.py):
    an instance is measured one process at a time and stops as soon as its interval,
    corrected for the looks, decides PASS or SLOW; the undecided ones get more processes,
    up to max_processes, within time_budget_s (None: no budget but the cap)."""

    max_processes: int = DEFAULT_MAX_PROCESSES
    time_budget_s: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.max_processes, bool) or not isinstance(self.max_processes, int) \
                or self.max_processes < 2:
            raise ValueError(f"max_processes must be an integer >= 2, not "
                             f"{self.max_processes!r}")
        if self.time_budget_s is not None and not self.time_budget_s > 0:
            raise ValueError(f"the time budget must be positive, not {self.time_budget_s!r}")


# -- the run's slice of the selection and of the machine -----------------------------

_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


class ShardError(ValueError):
    """A shard spec that does not parse, or a shard with nothing to run."""


@dataclass(frozen=True)
class Shard:
    """Shard `index` of `count`, 1-based as a user writes it (`--shard 1/4`)."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 1 <= self.index <= self.count:
            raise ShardError(f"shard {self.index}/{self.count} does not exist: K/N needs "
                             f"1 <= K <= N (shards are numbered from 1)")

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """'2/4' -> Shard(2, 4). Raises ShardError with a message fit for a user."""
    match = _SPEC.match(str(text))
    if not match:
        raise ShardError(f"{text!r} is not a shard: write K/N, e.g. 1/4 for the first of 4 "
                         f"shards")
    return Shard(int(match.group(1)), int(match.group(2)))


@dataclass(frozen=True)
class ShardInfo:
    """What the results record keeps about a shard (config.shard): which one, and what the
    whole was, so `opbench merge` can check that shards belong together and cover it."""

    index: int
    count: int
    of_instances: int        # instances in the whole selection
    selection: str           # selection_digest of the whole selection


@dataclass(frozen=True)
class Placement:
    """One worker's share of the machine."""

    worker: str                      # pytest-xdist's id: gw0, gw1, ...
    cpus: tuple[int, ...] | None     # logical CPUs it runs on (None: not pinned)
    device: str                      # the device its frameworks use ("cpu", "cuda:0")
    # intra-op threads: one per physical core it owns (None: not pinned, the run's own
    # setting stands)
    threads: int | None = None
    visible_device: str | None = None   # the physical device it owns (device targets)
    env: Mapping[str, str] = field(default_factory=dict)   # set before frameworks load

    def as_record(self) -> dict:
        """config.worker in a worker's results record."""
        return {"id": self.worker, "cpus": list(self.cpus) if self.cpus else None,
                "device": self.device, "visible_device": self.visible_device}


# -- the run ---------------------------------------------------------------------------

# A target within 20% of the reference (ratio >= 0.8) counts as on par. Gaps that small are
# routinely produced by things outside the operator itself - thread scheduling on a shared
# host, allocator and dispatch-path differences, run-to-run machine state - and are rarely
# worth an engineer's time; a kernel that takes 1.25x as long or more is a real gap to chase.
DEFAULT_THRESHOLD = 0.8
# Worker processes per run for the command line and pytest (RunConfig's own default, 1,
# measures in the calling process, for scripts and tests with fake frameworks). 3 puts a
# process's own speed (6-27% on a ratio here) inside the interval for ~7 s of start-up per
# run and a warm-up per process and instance (docs/measurement.md).
DEFAULT_PROCESSES = 3


def default_threads(cores: int | None = None) -> int:
    """Both frameworks get one thread fewer than the cores (at least 1) unless told
    otherwise. MindSpore's CPU default (25) oversubscribes small machines and would be an
    unequal comparison; and threads = cores leaves no core for a framework's own dispatch
    threads: measured on 2 cores, 2 kernel threads put MindSpore's ops at ~4 ms (one
    scheduler tick) whatever their size and kept its ActorThread spinning for ~200 ms
    after its work, where 1 thread gave steady times and no tail (docs/measurement.md)."""
    cores = os.cpu_count() if cores is None else cores
    return max(1, (cores or 1) - 1)


@dataclass(frozen=True)
class RunConfig:
    # The two sides (config/sides.py): a framework in an interpreter, with a label. A string
    # is read as a side spec (`torch`, `mindspore@envs/ms29/bin/python`). The records key
    # each side by its name (`names`): its framework, or its label when both sides share one.
    reference: Side = Side(TORCH)
    target: Side = Side(MINDSPORE)
    device: str = "cpu"
    threads: int = field(default_factory=default_threads)
    modes: tuple[str, ...] = (SERIAL,)
    # Default threshold for cases that set none; a case's own threshold wins because it
    # records knowledge about that operator.
    threshold: float = DEFAULT_THRESHOLD
    backward: bool = True        # also time forward+backward for cases marked backward
    timing: bool = True          # False: correctness only (`pytest cases/`, `opbench check`)
    # "queued": each framework launches as it does by default; "blocking": every operator
    # runs to completion in its call (config/vocabulary.py says why it matters).
    launch: str = LAUNCH_BLOCKING
    # Spread each measurement's rounds over this many passes through the instance list. The
    # ratio of two frameworks drifts by ~10% over seconds to minutes on a shared machine
    # (measured: one instance's median moved as much between passes in one process as between
    # processes), so rounds taken back to back understate the noise and two runs disagree
    # by more than their intervals say. Passes sample that drift inside the run.
    passes: int = 1
    # Fresh worker processes each instance's rounds are spread over (workers.py). A process
    # keeps an offset of its own for its whole life (thread placement, allocator, kernel
    # choice); with several, that offset lands inside the interval instead of between runs.
    # 1 = the measuring happens in the process that holds the Session.
    processes: int = 1
    # Where the side changes, wait until the other threads of the worker processes are
    # idle (quiesce.py), so one side's leftover work does not land in the other's sample.
    quiesce: bool = True
    settings: MeasureSettings = field(default_factory=MeasureSettings)
    # `--shard K/N` (shard.py): which slice of the selection this run measures; recorded so
    # `opbench merge` can check its shards belong together. None: the whole selection.
    shard: ShardInfo | None = None
    # Under `pytest --benchmark -n N` (placement.py): the cores and device this pytest-xdist
    # worker owns; recorded in its part of the run. None: not an xdist worker.
    worker: Placement | None = None
    # Sequential stopping (`opbench run` / `compare` without --rounds, --processes or
    # --passes): None is the fixed protocol, every instance in every process.
    sequential: Sequential | None = None
    # `--remeasure-machine`: measure the per-call floors and ceilings now even when the
    # machine-facts cache (runner/machine_facts.py) holds them for this machine and build.
    # Not recorded in `config`: the record's `machine_facts` says where its figures came from.
    remeasure_machine: bool = False
    # `--profile` (runner/profiling.py): after an instance's timing, each side's call run
    # again under its framework's profiler; recorded in `config` only when on.
    profile: bool = False

    def __post_init__(self) -> None:
        for which in ("reference", "target"):
            side = getattr(self, which)
            if isinstance(side, str):
                object.__setattr__(self, which, parse_side(side))
            elif not isinstance(side, Side):
                raise ValueError(f"{which} must be a Side, not {side!r}")
        unknown = [m for m in self.modes if m not in MODES]
        if unknown or not self.modes:
            raise ValueError(f"modes must be among {MODES}, not {self.modes}")
        for name in ("passes", "processes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")
        if not (isinstance(self.threshold, (int, float)) and math.isfinite(self.threshold)
                and self.threshold > 0):
            raise ValueError(f"threshold must be a positive finite ratio, not "
                             f"{self.threshold!r}")
        if self.launch not in LAUNCH_MODES:
            raise ValueError(f"launch must be one of {LAUNCH_MODES}, not {self.launch!r}")
        if self.reference.framework == self.target.framework and self.timing \
                and self.processes < 2:
            raise ValueError("both sides on one framework run in worker processes, one per "
                             "side; --processes 1 would hold both in one process")
        if self.sequential is not None and (self.processes < 2 or self.passes != 1):
            raise ValueError("sequential stopping measures one pass per worker process: it "
                             "needs processes >= 2 and passes = 1")

    @property
    def names(self) -> tuple[str, str]:
        """What the records key the sides by (sides.side_labels): their frameworks, or
        their labels when both run one framework."""
        return side_labels(self.reference, self.target)

    @property
    def reference_name(self) -> str:
        return self.names[0]

    @property
    def target_name(self) -> str:
        return self.names[1]

    @property
    def frameworks(self) -> tuple[str, str]:
        """The sides' names (kept under its first name: they were the frameworks)."""
        return self.names

    def side(self, name: str) -> Side:
        """The side named `name` (one of `names`)."""
        reference, target = self.names
        if name == reference:
            return self.reference
        if name == target:
            return self.target
        raise KeyError(f"no side named {name!r} (the sides are {reference} and {target})")

    @property
    def in_workers(self) -> bool:
        """Measured in worker processes: several, a side in another interpreter, or both
        sides on one framework (one process each)."""
        return self.processes > 1 or self.split_sides

    @property
    def split_sides(self) -> bool:
        """Each side needs worker processes of its own: one runs in another interpreter,
        or both run one framework."""
        return (bool(self.reference.python or self.target.python)
                or self.reference.framework == self.target.framework)

    def framework_of(self, name: str) -> str:
        """The framework side `name` runs (its label's, when both sides share one)."""
        return self.side(name).framework if name in self.names else name

    def python_of(self, name: str) -> str | None:
        """The interpreter side `name` runs in (None: this one)."""
        return self.side(name).python

    @property
    def shares(self) -> int:
        """How many pieces each measurement's rounds are cut into: one per pass per
        process."""
        return self.passes * self.processes

    def as_dict(self) -> dict[str, Any]:
        """The record's `config`: each side as its name, its interpreter and (both sides on
        one framework) its framework in four keys after `worker`, as before sides were
        records (results/records.py reads them; the golden runs keep their bytes)."""
        d = asdict(self)
        d["reference"], d["target"] = self.names
        one_framework = self.reference.framework == self.target.framework
        sides = {"reference_python": self.reference.python,
                 "target_python": self.target.python,
                 "reference_framework": self.reference.framework if one_framework else None,
                 "target_framework": self.target.framework if one_framework else None}
        ordered: dict[str, Any] = {}
        for key, value in d.items():
            ordered[key] = value
            if key == "worker":
                ordered.update(sides)
        d = ordered
        d["modes"] = list(self.modes)
        d["settings"].pop("mode", None)
        # records of whole selections, measured outside xdist, stay as they were
        if d["shard"] is None:
            del d["shard"]
        for key in ("reference_python", "target_python", "reference_framework",
                    "target_framework"):
            if d[key] is None:      # runs in this interpreter record as they always have
                del d[key]
        if self.sequential is None:
            del d["sequential"]
        del d["remeasure_machine"]
        if not self.profile:        # runs without --profile record as they always have
            del d["profile"]
        if self.worker is None:
            del d["worker"]
        else:
            d["worker"] = self.worker.as_record()
        return d

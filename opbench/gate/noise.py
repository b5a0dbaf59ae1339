"""Each instance's noise floor: how far its ratio moves between processes of the same code.

Why: on a shared CPU machine most of a ratio's run-to-run noise is an offset that a process
keeps for its whole life (thread placement, allocator state, code layout). Over 25
`--for-gate` processes of 18 shipped instances in a noisy hour here, the per-process median
ratio moved with a standard deviation of 3% (reshape) to 8% (add.bias[hidden=4096]); in a
quiet hour, 2-3% (docs/gate.md). The rounds of one process cannot
show that offset, so an instance whose processes differ by 8% cannot be gated at a 10%
minimum effect: its A/A gates end REGRESSION or INCONCLUSIVE whenever two processes land
apart, and no number of rounds fixes it. Replayed over those processes with a baseline of 2,
such instances gave most of the false failures and INCONCLUSIVEs (docs/gate.md).

`opbench noise RUN.json RUN.json RUN.json ...` measures the spread from 3 or more runs of
the same code recorded in separate processes; `opbench gate --noise noise.json` then raises
each instance's minimum effect to its floor (never lowers it) and says so in every report.

The floor: the smallest drop that a single current process, compared with a baseline
pooled from m processes, shows by its offsets alone only rarely. The offset difference has
a standard deviation of sd * sqrt(1 + 1/m) on log scale; the floor is NOISE_FLOOR_Z of
those: floor = 1 - exp(-NOISE_FLOOR_Z * sd * sqrt(1 + 1/m)).

Pure (records in, a NoiseProfile out) except NoiseProfile.read, which reads a noise file.
"""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from opbench.config.record_codec import record_from
from opbench.gate.decision import PATH_RATIO, PATH_REFERENCE_TIME, PATH_TARGET_TIME
from opbench.gate.pool import check_alike
from opbench.results.records import Measurement, RunRecord

__all__ = ["MIN_PROCESSES", "NOISE_FLOOR_Z", "NOISE_VERSION", "PATHS", "SHRINK_PRIOR_DF",
           "InstanceNoise", "NoiseError", "NoiseProfile", "noise_floor", "process_noise",
           "shrink"]

NOISE_VERSION = 1
# Fewer runs give a standard deviation from one or no difference: not an estimate.
MIN_PROCESSES = 3
# How many offset-difference SDs the floor sits below no change. Chosen by resampling the
# gate (the loop of gate/resample.py) over the noisy hour's 25 processes of 18 shipped
# instances: profile from 5 of them, baseline pooled from 2 others, stages 1 and 2 from two
# more; 200 gates per row:
#   z     A/A gates failed  INCONCLUSIVE   injected 25%: instances caught
#   none        5.5%            41%              97%
#   2.0         1.5%            24%              95%
#   2.5         0.5%            12%              90%
#   3.0         0.0%             6%              82%
# 2.5 buys most of the calm for a modest loss of sensitivity on the noisiest instances.
NOISE_FLOOR_Z = 2.5
# How strongly an instance's SD is pulled towards the run-wide one (see shrink): as much as
# 4 more processes' worth. Chosen by the same resampling at z 2.5: 0 (no pull) left 18% of A/A
# gates INCONCLUSIVE, 4 and 8 left 12% and 11%, with the same 0.5% failing.
SHRINK_PRIOR_DF = 4


class NoiseError(ValueError):
    """The runs cannot give a noise profile, or a noise file is unreadable; says why."""


# The gate's three views of a change (decision.py): the ratio and each side's absolute speed.
PATHS = (PATH_RATIO, PATH_TARGET_TIME, PATH_REFERENCE_TIME)


@dataclass(frozen=True)
class InstanceNoise:
    """One instance's between-process spread: per measurement key and path, the sample
    standard deviation over `processes` runs of the per-process median log ratio (path
    "ratio") or log time of each side ("target time", "reference time")."""

    processes: int
    sd_by_key: Mapping[str, Mapping[str, float]]

    def sd(self, path: str = PATH_RATIO) -> float:
        """The largest over the keys: an instance gets one minimum effect per path."""
        return max(by_path[path] for by_path in self.sd_by_key.values())


@dataclass(frozen=True)
class NoiseProfile:
    instances: Mapping[str, InstanceNoise]
    sources: tuple[str, ...]
    environment: Mapping[str, Any] = field(default_factory=dict)
    frameworks: Mapping[str, Any] = field(default_factory=dict)

    def floors_for(self, instance_id: str, baseline_processes: int) -> dict[str, float] | None:
        """{path: floor} for one instance, None when the profile has no figure for it."""
        noise = self.instances.get(instance_id)
        if noise is None:
            return None
        return {p: noise_floor(noise.sd(p), baseline_processes) for p in PATHS}

    def as_dict(self) -> dict[str, Any]:
        return {"opbench_noise_version": NOISE_VERSION, "sources": list(self.sources),
                "environment": dict(self.environment), "frameworks": dict(self.frameworks),
                "instances": {i: {"processes": n.processes,
                                  "sd": {k: dict(v) for k, v in n.sd_by_key.items()}}
                              for i, n in self.instances.items()}}

    @classmethod
    def read(cls, path: str) -> "NoiseProfile":
        """A noise file written by `opbench noise --json`; NoiseError names the file and
        what is wrong with it."""
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except OSError as exc:
            raise NoiseError(f"{path}: cannot read ({exc.strerror or exc})") from None
        except ValueError as exc:
            raise NoiseError(f"{path}: not JSON ({exc})") from None
        return cls.from_dict(data, path)

    @classmethod
    def from_dict(cls, data: Any, name: str) -> "NoiseProfile":
        if not isinstance(data, dict):
            raise NoiseError(_not_a_noise_file(name))
        stored = record_from(_NoiseFile, data)
        if stored.opbench_noise_version != NOISE_VERSION:
            raise NoiseError(_not_a_noise_file(name))
        if not isinstance(stored.instances, dict):
            raise NoiseError(f"{name}: instances must map instance ids to their spread")
        instances = {}
        for inst_id, item in stored.instances.items():
            entry = record_from(_NoiseEntry, item) if isinstance(item, dict) else _NoiseEntry()
            sd = entry.sd
            if not isinstance(sd, dict) or not sd or not all(_valid_paths(v) for v in sd.values()):
                raise NoiseError(f"{name}: instances.{inst_id}.sd must map each measurement "
                                 f"key to a non-negative number for each of {', '.join(PATHS)}")
            instances[inst_id] = InstanceNoise(
                int(entry.processes or 0),
                {k: {p: float(v[p]) for p in PATHS} for k, v in sd.items()})
        return cls(instances, tuple(stored.sources or ()),
                   stored.environment or {}, stored.frameworks or {})


@dataclass(frozen=True)
class _NoiseFile:
    """A noise file's JSON (NoiseProfile.as_dict), read before it is checked."""

    opbench_noise_version: Any = None
    instances: Any = field(default_factory=dict)
    sources: Any = None
    environment: Any = None
    frameworks: Any = None


@dataclass(frozen=True)
class _NoiseEntry:
    """One instance's entry of a noise file."""

    processes: Any = None
    sd: Any = None


def _not_a_noise_file(name: str) -> str:
    return (f"{name}: not an opbench noise file (opbench_noise_version {NOISE_VERSION} "
            f"missing); write one with `opbench noise`")


def _valid_paths(by_path: Any) -> bool:
    return isinstance(by_path, dict) and all(
        isinstance(by_path.get(p), (int, float)) and not isinstance(by_path.get(p), bool)
        and by_path[p] >= 0 for p in PATHS)


def noise_floor(sd: float, baseline_processes: int) -> float:
    """The minimum effect an instance with this between-process SD (of the log ratio) can be
    gated at against a baseline pooled from `baseline_processes` runs."""
    if sd < 0 or baseline_processes < 1:
        raise ValueError("sd must be >= 0 and baseline_processes >= 1")
    return 1.0 - math.exp(-NOISE_FLOOR_Z * sd * math.sqrt(1.0 + 1.0 / baseline_processes))


def _process_medians(measurement: Measurement, reference: str,
                     target: str) -> dict[str, float]:
    """One process's estimate per path, on log scale, as its run recorded them: the ratio
    (median of the per-round ratios) and each side's median time per call (as a speed, log
    of 1 / time, so the sign agrees with the ratio's; the SD does not care)."""
    summary = measurement.summary
    return {PATH_RATIO: math.log(measurement.ratio),
            PATH_TARGET_TIME: -math.log(summary[target].median_s),
            PATH_REFERENCE_TIME: -math.log(summary[reference].median_s)}


def process_noise(records: Sequence[RunRecord], names: Sequence[str]) -> NoiseProfile:
    """records[i], read from names[i], each one process of the same code measured alike.
    An instance (and key) measured in fewer than MIN_PROCESSES of them gets no figure.
    Raises NoiseError with fewer than MIN_PROCESSES records or when they were not measured
    alike (pool.check_alike's rule: their rounds would mean different things)."""
    if len(records) != len(names):
        raise ValueError("one name per record")
    if len(records) < MIN_PROCESSES:
        raise NoiseError(f"{len(records)} run(s) given; the spread between processes needs "
                         f"at least {MIN_PROCESSES}, each recorded by its own `opbench run`")
    try:
        check_alike(records, names)
    except ValueError as exc:
        raise NoiseError(str(exc)) from None
    first = records[0]
    reference, target = first.config.reference, first.config.target
    medians: dict[str, dict[str, list[dict[str, float]]]] = {}
    for record in records:
        for inst in record.instances:
            for key, m in inst.measurements.items():
                medians.setdefault(inst.id, {}).setdefault(key, []).append(
                    _process_medians(m, reference, target))
    raw = {}
    for inst_id, by_key in medians.items():
        sds = {k: {p: statistics.stdev(run[p] for run in runs) for p in PATHS}
               for k, runs in by_key.items() if len(runs) >= MIN_PROCESSES}
        if sds:
            raw[inst_id] = InstanceNoise(min(len(by_key[k]) for k in sds), sds)
    return NoiseProfile(shrink(raw), tuple(names), first.environment.to_dict(),
                        {name: info.to_dict() for name, info in first.frameworks.items()})


def shrink(instances: Mapping[str, InstanceNoise],
           prior_df: float = SHRINK_PRIOR_DF) -> dict[str, InstanceNoise]:
    """Each SD pulled towards the run-wide typical one: variance = (df * own + prior_df *
    typical) / (df + prior_df), df = processes - 1, typical = the mean variance over all
    instances and keys of that path. Why: from 5 processes a sample SD is rough (here
    add.bias[hidden=768] read 1.3% from 5 processes and 6.3% from 25); borrowing the other
    instances' spread keeps one lucky estimate from leaving an instance unprotected."""
    variances = {p: [v[p] ** 2 for n in instances.values() for v in n.sd_by_key.values()]
                 for p in PATHS}
    if not instances or prior_df <= 0:
        return dict(instances)
    typical = {p: statistics.fmean(values) for p, values in variances.items()}

    def pulled(own: float, df: int, path: str) -> float:
        return math.sqrt((df * own ** 2 + prior_df * typical[path]) / (df + prior_df))

    return {i: InstanceNoise(n.processes, {k: {p: pulled(v[p], n.processes - 1, p)
                                                for p in PATHS}
                                            for k, v in n.sd_by_key.items()})
            for i, n in instances.items()}

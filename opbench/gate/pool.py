"""Several baseline runs as one baseline: `opbench gate --baseline a.json --baseline b.json`.

Why: on the project's shared 2-core machine the torch/MindSpore ratio of one instance moves
by a standard deviation of 2-8% from one process to the next (MindSpore's per-process state,
neighbours on the host), and no statistic inside one run can see that. A baseline recorded
in a single process carries its own process's offset into every gate that compares with
it: in 10 A/A gates against one baseline, `add.bias[hidden=768]` read 9-17% "slower" every
time because the baseline process had been a fast one. Rounds pooled from baselines
recorded in separate processes average those offsets out. Replaying the gate's decision
over 26 independent runs of 18 shipped instances here (docs/gate.md; stage 2 taken from yet
another process), a baseline of 1, 2, 3 and 4 processes gave 1.3%, 0.5%, 0.3% and 0.3% false
REGRESSIONs per instance-gate and 8.9%, 4.5%, 2.9% and 2.1% INCONCLUSIVE.

Pure: records in, one record out. Runs that were not measured alike cannot be pooled (their
rounds would mean different things), so a difference in what the gate compares is an error
naming the file, not a note.
"""
from __future__ import annotations

import copy
from typing import Any, Mapping, Sequence

from opbench.config import DEFAULT_THRESHOLD
from opbench.results.io import framework_versions
from opbench.verdicts.conclusions import measurement_statistics, share_of_round

__all__ = ["PoolError", "check_alike", "pool_baselines"]

# What must be equal for two runs' rounds to be pooled: the pair compared, how a sample was
# taken, and what a round holds.
_SAME_CONFIG = ("reference", "target", "device", "threads", "modes", "backward", "launch",
                "passes", "processes")
_SAME_SETTINGS = ("rounds", "min_sample_time_s", "max_time_s")


class PoolError(ValueError):
    """The baselines cannot be pooled; the message names the file and the difference."""


def check_alike(records: Sequence[Mapping[str, Any]], names: Sequence[str]) -> None:
    first_cfg = records[0].get("config") or {}
    for name, record in zip(names[1:], records[1:]):
        cfg = record.get("config") or {}
        for key in _SAME_CONFIG:
            if cfg.get(key) != first_cfg.get(key):
                raise PoolError(f"{name}: {key} is {cfg.get(key)!r}, {names[0]} has "
                                f"{first_cfg.get(key)!r}; only baselines measured alike can "
                                f"be pooled")
        settings, first_settings = cfg.get("settings") or {}, first_cfg.get("settings") or {}
        for key in _SAME_SETTINGS:
            if settings.get(key) != first_settings.get(key):
                raise PoolError(f"{name}: settings.{key} is {settings.get(key)!r}, {names[0]} "
                                f"has {first_settings.get(key)!r}; only baselines measured "
                                f"alike can be pooled")
        if framework_versions(record) != framework_versions(records[0]):
            raise PoolError(f"{name}: framework versions {framework_versions(record)} differ "
                            f"from {names[0]}'s {framework_versions(records[0])}; a baseline "
                            f"pools runs of the same code")


def _pool_measurement(parts: Sequence[Mapping[str, Any]], reference: str,
                      target: str) -> dict[str, Any]:
    """One measurement key of one instance over several runs: rounds concatenated in run
    order (each run's rounds stay paired), statistics redone on the pool."""
    pooled = copy.deepcopy(dict(parts[0]))
    samples = {n: [x for p in parts for x in p["samples_s"][n]] for n in parts[0]["samples_s"]}
    pooled["samples_s"] = samples
    pooled["order"] = [o for p in parts for o in p.get("order", [])]
    pooled["run_of_round"] = [i for i, p in enumerate(parts)
                              for _ in range(len(p["samples_s"][reference]))]
    pooled["rounds"] = len(samples[reference])
    # Every run's processes are processes of their own: run 2's process 1 is not run 1's.
    pooled["process_of_round"] = []
    pooled["pass_of_round"] = []
    for run_index, p in enumerate(parts):
        n = len(p["samples_s"][reference])
        labels = p.get("process_of_round") or [1] * n
        pooled["process_of_round"] += [f"{run_index + 1}.{label}" for label in labels]
        # per round, not first-run-only: a share is (process, pass), and the order-effect
        # test restarts the alternation at every share
        pooled["pass_of_round"] += p.get("pass_of_round") or [1] * n
    pooled.update(measurement_statistics(samples, reference, target,
                                         pooled.get("threshold", DEFAULT_THRESHOLD),
                                         order=pooled["order"] or None,
                                         groups=pooled["process_of_round"],
                                         shares=share_of_round(pooled)))
    return pooled


def _pool_instance(versions: Sequence[Mapping[str, Any]], reference: str,
                   target: str) -> dict[str, Any]:
    measured = [v for v in versions if v.get("measurements")]
    if not measured:
        return copy.deepcopy(dict(versions[0]))   # ERROR / MISMATCH everywhere: as it was
    pooled = copy.deepcopy(dict(measured[0]))
    keys = [k for k in measured[0]["measurements"]
            if all(k in v["measurements"] for v in measured)]
    pooled["measurements"] = {k: _pool_measurement([v["measurements"][k] for v in measured],
                                                   reference, target) for k in keys}
    pooled["pooled_runs"] = len(measured)
    return pooled


def pool_baselines(records: Sequence[Mapping[str, Any]],
                   names: Sequence[str]) -> dict[str, Any]:
    """records[i] was read from names[i]. One record: returned unchanged. Several: one
    record whose instances carry every run's rounds (`run_of_round` says whose), with
    ratio, interval and verdict recomputed; an instance measured in only some runs pools
    those. `pooled_from` lists the names. The environment is the first run's, with
    machine_id cleared unless every run has the same one (absolute times are compared only
    on one machine). Raises PoolError when the runs were not measured alike."""
    if len(records) != len(names) or not records:
        raise ValueError("one name per record, at least one record")
    if len(records) == 1:
        return dict(records[0])
    check_alike(records, names)
    cfg = records[0].get("config") or {}
    reference, target = cfg.get("reference", "torch"), cfg.get("target", "mindspore")
    by_id: dict[str, list[Mapping[str, Any]]] = {}
    for record in records:
        for inst in record.get("instances", []):
            by_id.setdefault(inst["id"], []).append(inst)
    pooled = copy.deepcopy({k: v for k, v in records[0].items() if k != "instances"})
    pooled["instances"] = [_pool_instance(versions, reference, target)
                           for versions in by_id.values()]
    machine_ids = {(r.get("environment") or {}).get("machine_id") for r in records}
    if len(machine_ids) != 1:
        pooled.setdefault("environment", {})["machine_id"] = None
    pooled["pooled_from"] = list(names)
    return pooled

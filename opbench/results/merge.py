"""Join results records that each hold part of one selection into one record: the shards of
a CI matrix (`opbench run --shard K/N`, `opbench merge`) and the workers of `pytest -n N`.

Unlike gate/pool.py, which pools several runs of the *same* instances, a merge puts
*different* instances side by side: no instance is measured twice, so every ratio, interval
and verdict is kept exactly as its part measured it, nothing is recomputed.

What the parts must share for the whole to mean one run (else MergeError, naming the files
and the key): the opbench version, the framework versions, the case files (the selection
digest a shard records, and the git commit of the checkout), and the run configuration
(every key but the part's own `shard` and `worker`). An instance id in two parts is refused
too: which of its two measurements would be the run's?

Machines. A ratio is measured within one process on one machine, so ratios of instances
measured on different machines may sit side by side in one table. Their absolute times may
not: a CI matrix lands on runners with other CPUs, loads and clocks, and a table of medians
from three machines invites comparisons no one measured. So parts from different machines
(environment.machine_id) are refused unless the caller allows it (`--allow-machines`); then
the merged record says `absolute_times_comparable: false`, its machine_id is `mixed:...`
(which never equals another record's, so the gate compares ratios only, as it does across
machines), each instance carries the machine_id it was measured on, and the overheads
(one machine's dispatch floors) are dropped.

Pure: records in, one record out; no printing, no files.
"""
from __future__ import annotations

import copy
from typing import Any, Mapping, Sequence

from opbench.results.io import (
    MIXED_MACHINES_PREFIX,
    SCHEMA_VERSION,
    framework_versions,
    measuring_seconds,
)

__all__ = ["MergeError", "PART_CONFIG_KEYS", "merge_records"]

# Config keys that describe one part, not the run: they differ between parts by design.
PART_CONFIG_KEYS = ("shard", "worker")


class MergeError(ValueError):
    """The records cannot be joined; the message names the files and the key."""


def _env(record: Mapping[str, Any], key: str) -> Any:
    return (record.get("environment") or {}).get(key)


def _shared_config(record: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in (record.get("config") or {}).items() if k not in PART_CONFIG_KEYS}


def _shard(record: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return (record.get("config") or {}).get("shard")


def _refuse_differences(records: Sequence[Mapping[str, Any]], names: Sequence[str]) -> None:
    first, first_name = records[0], names[0]

    def differs(name: str, what: str, mine: Any, theirs: Any, why: str) -> MergeError:
        return MergeError(f"{name}: {what} is {mine!r}, {first_name} has {theirs!r}; {why}")

    for name, record in zip(names[1:], records[1:]):
        if record.get("schema_version") != first.get("schema_version"):
            raise differs(name, "schema_version", record.get("schema_version"),
                          first.get("schema_version"), "records of one format only")
        if _env(record, "opbench") != _env(first, "opbench"):
            raise differs(name, "environment.opbench", _env(record, "opbench"),
                          _env(first, "opbench"), "parts measured by different opbench "
                          "versions are not one run")
        if framework_versions(record) != framework_versions(first):
            raise differs(name, "framework versions (frameworks.*.version)",
                          framework_versions(record), framework_versions(first),
                          "parts must measure the same framework builds")
        if _env(record, "git_commit") != _env(first, "git_commit"):
            raise differs(name, "environment.git_commit", _env(record, "git_commit"),
                          _env(first, "git_commit"), "parts of one run come from one "
                          "checkout (its case files)")
        mine, theirs = _shard(record), _shard(first)
        if (mine is None) != (theirs is None):
            raise MergeError(f"{name} and {first_name}: one is a shard (config.shard) and "
                             f"the other is not; merge the shards of one matrix")
        if mine is not None:
            for key, why in (("selection", "the shards ran different case files or "
                                           "selections (config.shard.selection digests "
                                           "the whole selection)"),
                             ("count", "shards of different matrices")):
                if mine.get(key) != theirs.get(key):
                    raise differs(name, f"config.shard.{key}", mine.get(key),
                                  theirs.get(key), why)
        cfg, first_cfg = _shared_config(record), _shared_config(first)
        for key in sorted(set(cfg) | set(first_cfg)):
            if cfg.get(key) != first_cfg.get(key):
                raise differs(name, f"config.{key}", cfg.get(key), first_cfg.get(key),
                              "parts of one run are measured with one configuration")


def _refuse_duplicates(records: Sequence[Mapping[str, Any]], names: Sequence[str]) -> None:
    seen: dict[str, str] = {}
    for name, record in zip(names, records):
        for inst in record.get("instances", []):
            where = seen.get(inst["id"])
            if where is not None:
                raise MergeError(f"instance {inst['id']!r} is in both {where} and {name}; a "
                                 f"merge joins parts that measured different instances "
                                 f"(to pool repeated runs of one selection, give them to "
                                 f"`opbench gate` as several --baseline)")
            seen[inst["id"]] = name


def _machines(records: Sequence[Mapping[str, Any]]) -> list[str]:
    return list(dict.fromkeys(str(_env(r, "machine_id")) for r in records))


def _missing_shards(records: Sequence[Mapping[str, Any]]) -> list[int]:
    shards = [_shard(r) for r in records]
    if not shards or shards[0] is None or all(s == shards[0] for s in shards):
        return []
    have = {s["index"] for s in shards}
    return [k for k in range(1, shards[0]["count"] + 1) if k not in have]


def merge_records(records: Sequence[Mapping[str, Any]], names: Sequence[str], *,
                  allow_machines: bool = False) -> dict[str, Any]:
    """One record holding every part's instances, in the parts' order. records[i] was read
    from names[i]. Raises MergeError (see the module doc). The result is `complete` only
    when every part is and, for shards, every shard 1..N is there."""
    if len(records) != len(names) or not records:
        raise MergeError("nothing to merge: give at least one results record")
    _refuse_differences(records, names)
    _refuse_duplicates(records, names)
    machines = _machines(records)
    if len(machines) > 1 and not allow_machines:
        where = ", ".join(f"{n} ({_env(r, 'machine_id')})" for n, r in zip(names, records))
        raise MergeError(f"environment.machine_id differs: {where}. Absolute times from "
                         f"different machines are not comparable and are not pooled into one "
                         f"record; --allow-machines merges them anyway with the ratios side "
                         f"by side and the absolute times marked not comparable")
    first = records[0]
    merged = copy.deepcopy({k: v for k, v in first.items()
                            if k not in ("instances", "between_process_prior", "setup_s")})
    # between_process_prior is one run's estimate; each instance already carries what it
    # applied, so the merged record does not claim one for the whole. Set-up time is each
    # part's own (merged_from[].setup_s).
    merged["schema_version"] = SCHEMA_VERSION
    merged["config"] = _shared_config(first)
    shards = [_shard(r) for r in records]
    if shards[0] is not None and all(s == shards[0] for s in shards):
        # the workers of one shard's run (pytest -n N --opbench-shard K/N): still that shard
        merged["config"]["shard"] = copy.deepcopy(shards[0])
    merged["created_utc"] = min(r["created_utc"] for r in records)
    finished = [r["finished_utc"] for r in records if r.get("finished_utc")]
    if finished:
        merged["finished_utc"] = max(finished)
    missing = _missing_shards(records)
    merged["complete"] = all(r.get("complete") for r in records) and not missing
    merged["interrupted"] = any(r.get("interrupted") for r in records)
    merged["instances"] = []
    for name, record in zip(names, records):
        for inst in record.get("instances", []):
            inst = copy.deepcopy(dict(inst))
            if len(machines) > 1:
                inst["machine_id"] = _env(record, "machine_id")
            # which worker (cores, device) measured it: on a host whose cores differ, the
            # rows of one worker are comparable with each other first
            worker = (record.get("config") or {}).get("worker")
            if worker and worker.get("id"):
                inst["worker"] = worker["id"]
            merged["instances"].append(inst)
    merged["merged_from"] = [_part(name, record) for name, record in zip(names, records)]
    if missing:
        merged["missing_shards"] = missing
    merged["absolute_times_comparable"] = len(machines) == 1
    if len(machines) > 1:
        env = merged["environment"]
        env["machine_id"] = MIXED_MACHINES_PREFIX + "+".join(machines)
        for key in ("cpu_model", "platform"):
            values = list(dict.fromkeys(str(_env(r, key)) for r in records))
            env[key] = " | ".join(values)
        if len({_env(r, "cpu_count") for r in records}) > 1:
            env["cpu_count"] = None
        merged["overhead"] = {}      # one machine's floors explain no other's times
    return merged


def _part(name: str, record: Mapping[str, Any]) -> dict[str, Any]:
    cfg = record.get("config") or {}
    part = {"file": name, "machine_id": _env(record, "machine_id"),
            "instances": len(record.get("instances", [])),
            "complete": bool(record.get("complete")),
            "shard": cfg.get("shard"), "worker": cfg.get("worker"),
            # where the part's wall time went: what a scale-out's speed-up is made of
            "measuring_s": round(measuring_seconds(record), 3)}
    if record.get("setup_s") is not None:
        part["setup_s"] = record["setup_s"]
    return part

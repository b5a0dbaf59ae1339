"""Join results records that each hold part of one selection into one record: the shards of
a CI matrix (`opbench run --shard K/N`, `opbench merge`) and the workers of `pytest -n N`.

Unlike gate/pool.py, which pools several runs of the *same* instances, a merge puts
*different* instances side by side: no instance is measured twice, so every ratio, interval
and verdict is kept exactly as its part measured it, nothing is recomputed.

What the parts must share for the whole to mean one run (else MergeError, naming the files
and the key): the opbench version, the framework versions and builds (two builds of one
version are different code), the case files (the selection digest a shard records, and the
git commit of the checkout), and the run configuration
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

from typing import Any, Sequence

from opbench.results.io import MIXED_MACHINES_PREFIX, SCHEMA_VERSION
from opbench.results.records import RunRecord, ShardRecord, as_plain

__all__ = ["MergeError", "PART_CONFIG_KEYS", "merge_records"]

# Config keys that describe one part, not the run: they differ between parts by design.
PART_CONFIG_KEYS = ("shard", "worker")


class MergeError(ValueError):
    """The records cannot be joined; the message names the files and the key."""


def _shared_config(record: RunRecord) -> dict[str, Any]:
    return {k: v for k, v in record.config.to_dict().items() if k not in PART_CONFIG_KEYS}


def _refuse_differences(records: Sequence[RunRecord], names: Sequence[str]) -> None:
    first, first_name = records[0], names[0]

    def differs(name: str, what: str, mine: Any, theirs: Any, why: str) -> MergeError:
        return MergeError(f"{name}: {what} is {mine!r}, {first_name} has {theirs!r}; {why}")

    for name, record in zip(names[1:], records[1:]):
        env, first_env = record.environment, first.environment
        if record.schema_version != first.schema_version:
            raise differs(name, "schema_version", record.schema_version,
                          first.schema_version, "records of one format only")
        if env.opbench != first_env.opbench:
            raise differs(name, "environment.opbench", env.opbench, first_env.opbench,
                          "parts measured by different opbench versions are not one run")
        if record.other_builds(first):
            raise differs(name, "the frameworks (frameworks.*.version and .build)",
                          record.framework_builds(), first.framework_builds(),
                          "parts must measure the same framework builds")
        if env.git_commit != first_env.git_commit:
            raise differs(name, "environment.git_commit", env.git_commit,
                          first_env.git_commit, "parts of one run come from one checkout "
                          "(its case files)")
        mine, theirs = record.config.shard, first.config.shard
        if (mine is None) != (theirs is None):
            raise MergeError(f"{name} and {first_name}: one is a shard (config.shard) and "
                             f"the other is not; merge the shards of one matrix")
        if mine is not None and theirs is not None:
            if mine.selection != theirs.selection:
                raise differs(name, "config.shard.selection", mine.selection, theirs.selection,
                              "the shards ran different case files or selections "
                              "(config.shard.selection digests the whole selection)")
            if mine.count != theirs.count:
                raise differs(name, "config.shard.count", mine.count, theirs.count,
                              "shards of different matrices")
        cfg, first_cfg = _shared_config(record), _shared_config(first)
        for key in sorted(set(cfg) | set(first_cfg)):
            if cfg.get(key) != first_cfg.get(key):
                raise differs(name, f"config.{key}", cfg.get(key), first_cfg.get(key),
                              "parts of one run are measured with one configuration")


def _refuse_duplicates(records: Sequence[RunRecord], names: Sequence[str]) -> None:
    seen: dict[str, str] = {}
    for name, record in zip(names, records):
        for inst in record.instances:
            where = seen.get(inst.id)
            if where is not None:
                raise MergeError(f"instance {inst.id!r} is in both {where} and {name}; a "
                                 f"merge joins parts that measured different instances "
                                 f"(to pool repeated runs of one selection, give them to "
                                 f"`opbench gate` as several --baseline)")
            seen[inst.id] = name


def _machines(records: Sequence[RunRecord]) -> list[str]:
    return list(dict.fromkeys(str(r.environment.machine_id) for r in records))


def _missing_shards(shards: Sequence[ShardRecord | None]) -> list[int]:
    first = shards[0] if shards else None
    if first is None or all(s == first for s in shards):
        return []
    have = {s.index for s in shards if s is not None}
    return [k for k in range(1, first.count + 1) if k not in have]


def merge_records(records: Sequence[RunRecord], names: Sequence[str], *,
                  allow_machines: bool = False) -> RunRecord:
    """One record holding every part's instances, in the parts' order. records[i] was read
    from names[i]. Raises MergeError (see the module doc). The result is `complete` only
    when every part is and, for shards, every shard 1..N is there."""
    if len(records) != len(names) or not records:
        raise MergeError("nothing to merge: give at least one results record")
    _refuse_differences(records, names)
    _refuse_duplicates(records, names)
    machines = _machines(records)
    if len(machines) > 1 and not allow_machines:
        where = ", ".join(f"{n} ({r.environment.machine_id})" for n, r in zip(names, records))
        raise MergeError(f"environment.machine_id differs: {where}. Absolute times from "
                         f"different machines are not comparable and are not pooled into one "
                         f"record; --allow-machines merges them anyway with the ratios side "
                         f"by side and the absolute times marked not comparable")
    first = records[0]
    # between_process_prior is one run's estimate; each instance already carries what it
    # applied, so the merged record does not claim one for the whole. Set-up time is each
    # part's own (merged_from[].setup_s).
    merged = {k: v for k, v in first.to_dict().items()
              if k not in ("instances", "between_process_prior", "setup_s")}
    merged["schema_version"] = SCHEMA_VERSION
    config = _shared_config(first)
    shards = [r.config.shard for r in records]
    if shards[0] is not None and all(s == shards[0] for s in shards):
        # the workers of one shard's run (pytest -n N --opbench-shard K/N): still that shard
        config["shard"] = shards[0].to_dict()
    merged["config"] = config
    merged["created_utc"] = min(r.created_utc for r in records)
    finished = [r.finished_utc for r in records if r.finished_utc]
    if finished:
        merged["finished_utc"] = max(finished)
    missing = _missing_shards(shards)
    merged["complete"] = all(r.complete for r in records) and not missing
    merged["interrupted"] = any(r.interrupted for r in records)
    instances = []
    for record in records:
        # which worker (cores, device) measured it: on a host whose cores differ, the rows
        # of one worker are comparable with each other first
        worker = record.config.worker
        for inst in record.instances:
            inst_dict = inst.to_dict()
            if len(machines) > 1:
                inst_dict["machine_id"] = record.environment.machine_id
            if worker is not None and worker.id:
                inst_dict["worker"] = worker.id
            instances.append(inst_dict)
    merged["instances"] = instances
    merged["merged_from"] = [_part(name, record) for name, record in zip(names, records)]
    if missing:
        merged["missing_shards"] = missing
    merged["absolute_times_comparable"] = len(machines) == 1
    if len(machines) > 1:
        env = first.environment.to_dict()
        env["machine_id"] = MIXED_MACHINES_PREFIX + "+".join(machines)
        env["cpu_model"] = _joined(str(r.environment.cpu_model) for r in records)
        env["platform"] = _joined(str(r.environment.platform) for r in records)
        if len({r.environment.cpu_count for r in records}) > 1:
            env["cpu_count"] = None
        merged["environment"] = env
        merged["overhead"] = {}      # one machine's floors explain no other's times
    return RunRecord.from_dict(merged)


def _joined(values: Any) -> str:
    return " | ".join(dict.fromkeys(values))


def _part(name: str, record: RunRecord) -> dict[str, Any]:
    cfg = record.config
    part = {"file": name, "machine_id": record.environment.machine_id,
            "instances": len(record.instances),
            "complete": bool(record.complete),
            "shard": as_plain(cfg.shard), "worker": as_plain(cfg.worker),
            # where the part's wall time went: what a scale-out's speed-up is made of
            "measuring_s": round(record.measuring_s, 3)}
    if record.setup_s is not None:
        part["setup_s"] = record.setup_s
    return part

"""`--shard K/N`: a stable slice of a selection, so a CI matrix of N jobs covers it once.

The slice depends only on the selection (every job loads the same case files with the same
-k/--op/--tag), never on the machine, the clock or hash randomisation, so the N jobs of a
matrix agree on who runs what without talking to each other. Rules:
  - a case's instances (its sizes and dtypes) stay in one shard: the gate and the report
    read a case's sweep together, and a case's warm-up cost is paid in one job only;
  - shards are balanced by instance count: cases are handed out largest first, each to the
    shard with the fewest instances so far (ties: the lowest shard), a deterministic
    longest-processing-time schedule (within 4/3 of the best possible makespan);
  - inside a shard the instances keep the selection's order.
Adding a case to the library can move others between shards: a matrix must run one
version of the cases in all its jobs, which `opbench merge` checks (the selection digest).

Pure: no click, no pytest, no printing. Both front doors call `assign`.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Callable, Hashable, Iterable, Sequence, TypeVar

from opbench.config import Shard, ShardError, ShardInfo

__all__ = ["assign", "select", "selection_digest", "shard_info", "case_key"]

T = TypeVar("T")


def case_key(instance: Any) -> str:
    """What keeps instances together: the case's name (not its file's path, which differs
    between checkouts and machines)."""
    return instance.case.name


def assign(keys: Sequence[Hashable], count: int) -> dict[Hashable, int]:
    """Shard number (1..count) of every distinct key, where `keys` has one entry per
    instance (so a key's weight is how often it occurs). Deterministic; see the module doc."""
    sizes: dict[Hashable, int] = {}
    first_seen: dict[Hashable, int] = {}
    for position, key in enumerate(keys):
        sizes[key] = sizes.get(key, 0) + 1
        first_seen.setdefault(key, position)
    # largest first; among equals, the selection's order (never a hash or a sort of
    # unorderable keys)
    order = sorted(sizes, key=lambda k: (-sizes[k], first_seen[k]))
    load = [0] * count
    shard_of: dict[Hashable, int] = {}
    for key in order:
        lightest = min(range(count), key=lambda i: (load[i], i))
        shard_of[key] = lightest + 1
        load[lightest] += sizes[key]
    return shard_of


def select(items: Sequence[T], shard: Shard,
           key: Callable[[T], Hashable] = case_key) -> list[T]:
    """The items of `shard`, in their order. Raises ShardError when it is empty (more
    shards than cases): a matrix job that runs nothing is a mistake in the matrix."""
    keys = [key(item) for item in items]
    shard_of = assign(keys, shard.count)
    chosen = [item for item, k in zip(items, keys) if shard_of[k] == shard.index]
    if not chosen:
        raise ShardError(f"shard {shard} is empty: the selection has {len(shard_of)} "
                         f"case(s) of {len(items)} instance(s), and a case's instances stay "
                         f"in one shard; use at most {len(shard_of)} shards")
    return chosen


def selection_digest(instances: Iterable[Any]) -> str:
    """A fingerprint of the whole (unsharded) selection: ids, APIs and inputs of every
    instance. Shards of one matrix carry the same digest; a different one means a job ran
    other case files (or another selection), so its shard is not part of this whole."""
    h = hashlib.sha256()
    for inst in instances:
        facts = [inst.id, sorted((n, c.api) for n, c in inst.calls.items()),
                 [(s.name, list(s.shape), s.dtype, s.dist) for s in inst.inputs]]
        h.update(json.dumps(facts, default=str).encode())
        h.update(b"\n")
    return h.hexdigest()[:16]


def shard_info(shard: Shard, whole: Sequence[Any]) -> ShardInfo:
    return ShardInfo(shard.index, shard.count, len(whole), selection_digest(whole))

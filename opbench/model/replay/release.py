"""When a timed replay lets go of each call's result: right after the last thing in the
step that reads it, as the script's Python frees `h @ w.T` once `+ b` has read it.

Kept alive, every intermediate of a step stays allocated until the next step overwrites it:
on torch/linear_composed's 8 layers of 128x256 (docs/model.md, "Affinity pairs") that
cost the naive form its 2 extra live 128 KB tensors a layer and priced the swap at 0.165 ms
a step where the script, freeing them, saves 0.047.

A timed path runs the step as an order of units (a call, or one of MindSpore's
differentiated blocks, forward and backward as one: one a backward); each unit reads some results and writes others. The plan is
computed once from those orders (executor.py builds them after the probe), so the timed
loops only drop the references it lists. Pure: no framework, no printing."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable, Iterable, Sequence

from opbench.model.program import Ref, Seq

__all__ = ["Unit", "Block", "refs_read", "step_order", "per_call_order", "read_before_written",
           "releases"]


@dataclass(frozen=True)
class Unit:
    key: Hashable                # what the timed loop knows the unit by (a call's index, ...)
    reads: frozenset[int]        # results read before the unit writes
    writes: frozenset[int]       # results the unit sets


@dataclass(frozen=True)
class Block:
    """MindSpore's differentiated forward (executor.Differentiated): the `inside` calls run
    together at `first`, then the gradients land in `backward`'s result."""
    inside: frozenset[int]
    first: int
    backward: int
    outside_reads: frozenset[int]     # read by the block besides its calls (the written
                                      # forward output in `differentiate`)


def refs_read(args: Iterable[Any]) -> frozenset[int]:
    """The calls whose results these program arguments read, through Seqs: the walk the
    executor's getters make (a Ref reads its call's result, whatever its path)."""
    found: set[int] = set()
    stack = list(args)
    while stack:
        arg = stack.pop()
        if isinstance(arg, Ref):
            found.add(arg.call)
        elif isinstance(arg, Seq):
            stack.extend(arg.items)
        elif isinstance(arg, (tuple, list)):
            stack.extend(arg)
    return frozenset(found)


def _block_unit(key: Hashable, block: Block, reads: Sequence[frozenset[int] | None],
                writes: frozenset[int]) -> Unit:
    # the inside calls run in program order, each after those it reads: what the block
    # reads before writing is what they read from outside it, and the written output
    inner = set(block.outside_reads)
    for i in sorted(block.inside):
        inner |= reads[i] or frozenset()
    return Unit(key, frozenset(inner - block.inside), writes)


def step_order(reads: Sequence[frozenset[int] | None], blocks: Sequence[Block]) -> list[Unit]:
    """executor.Replayer._run's order: every call with a plan entry (None in `reads`: none)
    in program order; each block's inside calls as one unit at its `first`."""
    starts = {block.first: block for block in blocks}
    inside = frozenset().union(*(block.inside for block in blocks))
    units = []
    for i, read in enumerate(reads):
        block = starts.get(i)
        if block is not None:
            units.append(_block_unit(i, block, reads, block.inside | {block.backward}))
        elif read is not None and i not in inside:
            units.append(Unit(i, read, frozenset((i,))))
    return units


FORWARD, GRADIENTS = "forward", "gradients"


def per_call_order(reads: Sequence[frozenset[int] | None], passed_through: Iterable[int],
                   blocks: Sequence[Block]) -> list[Unit]:
    """executor.Replayer.time_calls's order: every call with a plan entry but the
    pass-through ones (aliases, folded calls), each alone, the inside calls too; then, per
    block in program order, its forward alone ((FORWARD, backward)) and forward with
    gradients ((GRADIENTS, backward))."""
    skipped = set(passed_through)
    units = [Unit(i, read, frozenset((i,))) for i, read in enumerate(reads)
             if read is not None and i not in skipped]
    for block in blocks:
        units.append(_block_unit((FORWARD, block.backward), block, reads, block.inside))
        units.append(_block_unit((GRADIENTS, block.backward), block, reads,
                                 block.inside | {block.backward}))
    return units


def read_before_written(order: Sequence[Unit]) -> frozenset[int]:
    """Results the order reads before it sets them: the last step's (or the probe's)
    values, which must outlive the order."""
    written: set[int] = set()
    early: set[int] = set()
    for unit in order:
        early |= unit.reads - written
        written |= unit.writes
    return frozenset(early)


def releases(order: Sequence[Unit], keep: Iterable[int]) -> dict[Hashable, tuple[int, ...]]:
    """Per unit key, the results to drop right after the unit: each result the order sets
    and does not keep, after the last unit that reads or sets it (a result nothing reads is
    dropped as soon as it is made). Units with nothing to drop are left out."""
    kept = set(keep)
    last: dict[int, int] = {}
    written: set[int] = set()
    for position, unit in enumerate(order):
        written |= unit.writes
        for result in unit.reads | unit.writes:
            last[result] = position
    dropped: dict[Hashable, list[int]] = {}
    for result, position in sorted(last.items()):
        if result in written and result not in kept:
            dropped.setdefault(order[position].key, []).append(result)
    return {key: tuple(results) for key, results in dropped.items()}

"""Activation checkpointing in a captured program, and the rule both replays follow.

`torch.utils.checkpoint.checkpoint(block, x)` (and `transformers`' gradient checkpointing,
which calls it per layer) runs the block's forward keeping no activations, then runs it
again inside `loss.backward()` to get them back. The tracer sees the block's calls once, in
the forward (the recompute happens inside the traced backward call, whose time holds it),
so before this rule both replays ran the forward once and a backward that kept every
activation: the backward had no recompute in it. On the corpus script
activation_checkpoint_mlp.py the torch self-check read -37% to -69% (the traced backward,
59% of its region, holding three blocks' forward a second time).

The capture (capture/torch_checkpoint.py) wraps `checkpoint` and marks the calls captured
inside it (Call.recompute). With `use_reentrant=True` the block ran under no_grad (torch's
CheckpointFunction) and its calls were recorded so; they are marked as made with grad on
where the checkpoint was entered with it, since that is how their recompute runs and how
the gradient reaches the weights inside.

Both replays model the recompute the same way, in the backward's window: after the
step's forward, the backward that follows a checkpointed block runs the block's calls once
more (their values discarded; grad on in torch, as the recompute builds its graph), then
differentiates as before. What it leaves out: the memory the real checkpoint saves (the
replay still holds the first forward's activations) and the graph the recompute makes being
the one differentiated (the replayed backward goes through the first forward's). The time
is the recompute's work, run as the script ran it. A MindSpore port would write the same
with `mindspore.recompute(cell)`.
"""
from __future__ import annotations

from typing import Callable, Sequence

from opbench.model.program import Call

__all__ = ["CHECKPOINT_API", "recomputed_before", "recompute_note"]

# The function the capture wraps (for messages and tests).
CHECKPOINT_API = "torch.utils.checkpoint.checkpoint"


def recomputed_before(calls: Sequence[Call],
                      is_backward: Callable[[Call], bool]) -> dict[int, tuple[int, ...]]:
    """Per backward call (by index), the calls the backward recomputes: those marked
    `recompute` after the previous backward (or the step's start) and before it, in program
    order. A backward with none is left out; marked calls after the last backward (an
    evaluation under checkpoint with no backward) are recomputed by none."""
    out: dict[int, tuple[int, ...]] = {}
    pending: list[int] = []
    for call in calls:
        if is_backward(call):
            if pending:
                out[call.index] = tuple(pending)
            pending = []
        elif call.recompute:
            pending.append(call.index)
    return out


def recompute_note(calls: Sequence[Call], is_backward: Callable[[Call], bool]) -> str | None:
    """The region note for a step with checkpointed calls, or None."""
    regions = recomputed_before(calls, is_backward)
    if not regions:
        return None
    count = sum(len(r) for r in regions.values())
    return (f"activation checkpointing: {count} call(s) recomputed in "
            f"{len(regions)} backward(s), replayed as those calls run once more in the "
            f"backward's window (the recompute's time; not its memory saving)")

"""An alias whose traced window holds work the capture did not see.

An alias (an Identity, an eval-mode Dropout, `ops.depend`) computes nothing: both replays
run it as nothing. Its traced window is the time between its clock reads, and in a queued
launch (MindSpore's) the capture's sync at the end of the call also waits for whatever was
queued before it. Where that work is not a traced call (nn.TrainOneStepCell's
`GradOperation` backward and its `@jit` optimizer, run inside the cell), the window of the
alias after it holds it: in ms_train_one_step_cell.py the grad reducer's Identity and the
`ops.depend` held 24-52% of the region in three captures, where written out and synced
alone they take 0.021-0.025 ms and 0.005 ms against the backward's 1.4-4.6 ms and the
optimizer's 0.8 ms (tools/train_one_step_windows.py, 2026-11-28). Counting such a window
as covered (an alias "replays") said 100% coverage of a step whose backward neither
framework ran. Such an alias is not covered, with this reason, and is left out of the
self-check's like-for-like sums (no replay runs its window's work).

TrainOneStepCell's two are captured since (capture/ms_grad_operation.py: GradOperation's call
as a backward; capture/lowering.py: nn.AdamWeightDecay as an optimizer call), and its
aliases' windows are the aliases' own again (0.025 ms and 0.005 ms a step in a capture of
ms_train_one_step_cell.py, 2026-11-28). The rule stays for what is still not captured: an
optimizer Cell without a rule (its @jit construct traced through as nothing), a graph-mode
or sens-seeded GradOperation.
"""
from __future__ import annotations

from opbench.model.steady import StepProgram

__all__ = ["alias_windows", "ALIAS_WINDOW_NS", "ALIAS_WINDOW_SHARE"]

# An alias synced alone took at most 0.025 ms here (MindSpore's Identity on a tuple, above);
# a window four times that holds other work.
ALIAS_WINDOW_NS = 100_000
# ... and it matters to the step: at least 1% of its traced time (the replay's resolution
# on the suggestions, affinity/saving.py RESOLUTION_SHARE).
ALIAS_WINDOW_SHARE = 0.01


def alias_windows(step: StepProgram) -> dict[int, str]:
    """Per alias call whose traced window holds unseen work: why it is not covered."""
    total = sum(step.traced_ns)
    found = {}
    for i, call in enumerate(step.calls):
        ns = step.traced_ns[i]
        if call.alias_of is None or ns < ALIAS_WINDOW_NS or not total \
                or ns < ALIAS_WINDOW_SHARE * total:
            continue
        found[i] = (f"an alias (it computes nothing) whose window holds {ns / 1e6:.3g} ms a "
                    f"step: queued work the capture did not see as calls (a backward or a "
                    f"compiled function run inside a framework cell), waited for at its sync; "
                    f"no replay runs it")
    return found

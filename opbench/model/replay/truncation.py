"""Which captured calls hold integers truncated from floating values, and the difference
their outputs may show between two frameworks that both compute right.

A float -> integer conversion truncates toward zero, so two values equal up to float32
rounding land one integer apart when they straddle an integer: transformers' T5 buckets
relative positions by `max_exact + (log(n / max_exact) / log(...) * k).to(torch.long)`,
and MindSpore 2.10's log(1/8) / log(16) * 8 is -5.9999986 where torch's is -6.0 (checked on
CPU): truncated, -5 against -6. hf_t5_training.py read 4 MISMATCHes there (Tensor.to and
the __radd__ after it, "values differ by up to 0.5 / 1 (relative)"), none of them a port's
error. The output check (impact/pipeline.py) allows such a call, and the integer calls
computed from it, one integer step at the points compared; a wrong conversion or a wrong
formula is off by more.
"""
from __future__ import annotations

from typing import Any, Sequence

from opbench.config.vocabulary import FLOAT_DTYPES, INTEGER_DTYPES
from opbench.model.program import Call, output_at, refs_in

__all__ = ["ONE_INTEGER_STEP", "truncation_tolerances"]

# the absolute difference a truncated value may show: one integer
ONE_INTEGER_STEP = 1.0


def _dtype(node: Any) -> str | None:
    return node[2] if node and node[0] == "tensor" and len(node) > 2 else None


def truncation_tolerances(calls: Sequence[Call]) -> dict[int, float]:
    """Per call index, ONE_INTEGER_STEP for a call returning integers from a floating input
    (x.to(torch.long), x.long(), astype) and for each call returning integers from such a
    call's output; absent for every other call."""
    by_index = {c.index: c for c in calls}
    found: dict[int, float] = {}
    for call in calls:
        if _dtype(call.outputs) not in INTEGER_DTYPES:
            continue
        for ref in refs_in(call):
            source = by_index.get(ref.call)
            if source is None:
                continue
            if ref.call in found or _dtype(output_at(source.outputs, ref.path)) in FLOAT_DTYPES:
                found[call.index] = ONE_INTEGER_STEP
                break
    return found

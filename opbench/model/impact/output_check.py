"""The model's one output check: two replays' fingerprints of a call's outputs
(replay/executor.py fingerprint: fixed positions and two moments) agree within a tolerance.
Used across frameworks (impact/pipeline.py) and within one, original against swapped step
(model/affinity/measure.py)."""
from __future__ import annotations

import math
from typing import Any

__all__ = ["CHECK_RTOL", "CHECK_ATOL", "compare"]

# Relative difference of the outputs' fingerprints above which two frameworks' replays of a
# call disagree (float32 kernels differ in summation order: 1e-3 relative is far above it).
CHECK_RTOL = 2e-3
CHECK_ATOL = 1e-4


def compare(a: Any, b: Any, atol: float = CHECK_ATOL) -> str | None:
    """None when two fingerprints agree, else what differs. `atol`: the absolute difference
    allowed (an Adam update's: optimizer_fold.adam_update_tolerances)."""
    if a is None or b is None:
        return None
    if isinstance(a, list) or isinstance(b, list):
        if not isinstance(a, list) or not isinstance(b, list) or len(a) != len(b):
            return "different numbers of outputs"
        for x, y in zip(a, b):
            found = compare(x, y, atol)
            if found:
                return found
        return None
    if a["shape"] != b["shape"]:
        return f"shape {a['shape']} against {b['shape']}"
    if a.get("n", 0) == 0:
        return None
    worst = 0.0
    for x, y in zip(a["points"] + [a["mean"] or 0.0, a["mean_abs"] or 0.0],
                    b["points"] + [b["mean"] or 0.0, b["mean_abs"] or 0.0]):
        if math.isnan(x) and math.isnan(y):
            continue
        diff = abs(x - y)
        if diff > atol + CHECK_RTOL * max(abs(x), abs(y)):
            worst = max(worst, diff / max(abs(x), abs(y), 1e-12))
    return f"values differ by up to {worst:.2g} (relative)" if worst else None

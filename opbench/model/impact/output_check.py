"""The model's one output check: two replays' fingerprints of a call's outputs
(replay/executor.py fingerprint: fixed positions and two moments) agree within a tolerance;
complex outputs by the magnitude of the difference (|x - y| against |x|, |y|).
Used across frameworks (impact/pipeline.py) and within one, original against swapped step
(model/affinity/measure.py)."""
from __future__ import annotations

import cmath
from dataclasses import dataclass
from typing import Any

from opbench.model.json_records import from_object, json_field, tuple_of

__all__ = ["CHECK_RTOL", "CHECK_ATOL", "Fingerprint", "compare"]

# Relative difference of the outputs' fingerprints above which two frameworks' replays of a
# call disagree (float32 kernels differ in summation order: 1e-3 relative is far above it).
CHECK_RTOL = 2e-3
CHECK_ATOL = 1e-4


@dataclass(frozen=True)
class Fingerprint:
    """One output array's fingerprint as a replay process sends it (a plain object in its
    reply: executor.fingerprint), read here by its fields."""
    shape: tuple[int, ...] = json_field(codec=tuple_of())
    n: int = 0                           # elements (0: empty, nothing else is sent)
    mean: float | None = None            # over the finite elements (None: none finite)
    mean_abs: float | None = None
    points: tuple[float, ...] = json_field(codec=tuple_of(), default=())   # fixed positions
    # a complex output's imaginary parts: of the points and of the mean (None: a real output;
    # its mean_abs is then the mean magnitude)
    imag_points: tuple[float, ...] | None = json_field(codec=tuple_of(), default=None)
    mean_imag: float | None = None

    @property
    def is_complex(self) -> bool:
        return self.imag_points is not None

    def values(self) -> list[complex | float]:
        """What is compared: the points, then the two moments (None as 0); complex numbers
        for a complex output."""
        if not self.is_complex:
            return [*self.points, self.mean or 0.0, self.mean_abs or 0.0]
        points = [complex(r, i) for r, i in zip(self.points, self.imag_points)]
        return [*points, complex(self.mean or 0.0, self.mean_imag or 0.0),
                self.mean_abs or 0.0]


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
    a, b = from_object(Fingerprint, a), from_object(Fingerprint, b)
    if a.shape != b.shape:
        return f"shape {list(a.shape)} against {list(b.shape)}"
    if a.n == 0:
        return None
    if a.is_complex != b.is_complex:
        # a route returning complex values where the traced call returned real ones
        # (MindSpore's abs of a complex tensor is complex): not the same computation
        return "complex values against real ones"
    worst = 0.0
    for x, y in zip(a.values(), b.values()):
        if cmath.isnan(x) and cmath.isnan(y):
            continue
        # complex values: the magnitude of their difference against their magnitudes
        diff = abs(x - y)
        if diff > atol + CHECK_RTOL * max(abs(x), abs(y)):
            worst = max(worst, diff / max(abs(x), abs(y), 1e-12))
    return f"values differ by up to {worst:.2g} (relative)" if worst else None

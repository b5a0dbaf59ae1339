"""Do two frameworks compute the same thing? Compared before any timing: a fast wrong
answer is a MISMATCH, not a win. Pure numpy; outputs arrive already converted."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

VALUES = "values"
SHAPE = "shape"   # random ops (dropout): only shape and dtype kind can agree


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    max_abs_err: float
    max_rel_err: float
    rtol: float
    atol: float
    detail: str = ""          # why it failed, or what differed harmlessly (dtype)
    # Where they differ, when values differ beyond the tolerance: the output's position
    # among the flattened outputs and the index of its out-of-tolerance element with the
    # largest absolute difference (the element `detail` quotes; for booleans the first that
    # differs); None when they agree or differ in count, shape or dtype kind.
    worst_output: int | None = None
    worst_index: tuple[int, ...] | None = None
    # The case's expect_mismatch reason, on a check that failed as the case expects (the
    # instance is then timed, and every view says why its outputs differ).
    expected_mismatch: str | None = None

    def as_dict(self) -> dict[str, Any]:
        found = {"ok": self.ok, "max_abs_err": _finite(self.max_abs_err),
                 "max_rel_err": _finite(self.max_rel_err), "rtol": self.rtol,
                 "atol": self.atol, "detail": self.detail}
        if self.worst_index is not None:
            found.update(worst_output=self.worst_output, worst_index=list(self.worst_index))
        if self.expected_mismatch is not None:
            found["expected_mismatch"] = self.expected_mismatch
        return found

    def expected_by(self, reason: str | None) -> "CheckResult":
        """The check as the case sees it: a failure it expects (`reason`, its
        expect_mismatch) carries the reason; anything else is unchanged."""
        if self.ok or not reason:
            return self
        return replace(self, expected_mismatch=reason)


def _finite(x: float) -> float | None:
    # JSON has no inf/nan; an unbounded error is written as null
    return float(x) if np.isfinite(x) else None


def select_outputs(value: Any, output: int | tuple[int, ...] | None) -> Any:
    """Pick the outputs a case compares from an API that returns a tuple."""
    if output is None:
        return value
    # numpy.split / numpy.meshgrid return lists where torch and MindSpore return tuples
    if not isinstance(value, (tuple, list)):
        raise ValueError(f"'output: {output}' selects from a tuple, but the API returned "
                         f"{type(value).__name__}")
    if isinstance(output, int):
        return value[output]
    return tuple(value[i] for i in output)


def flatten(value: Any) -> list[np.ndarray]:
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in flatten(v)]
    return [np.asarray(value)]


def compare_outputs(reference: Any, target: Any, rtol: float, atol: float,
                    mode: str = VALUES) -> CheckResult:
    """Compare nested outputs elementwise: |t - r| <= atol + rtol * |r| (numpy.isclose's
    rule, measured against the reference), NaN equal to NaN, inf equal to same-sign inf."""
    refs, tgts = flatten(reference), flatten(target)
    if len(refs) != len(tgts):
        return CheckResult(False, np.inf, np.inf, rtol, atol,
                           f"{len(refs)} outputs against {len(tgts)}")
    worst_abs = worst_rel = 0.0
    notes = []
    for i, (r, t) in enumerate(zip(refs, tgts)):
        label = f"output {i}: " if len(refs) > 1 else ""
        if r.shape != t.shape:
            return CheckResult(False, np.inf, np.inf, rtol, atol,
                               f"{label}shape {tuple(r.shape)} against {tuple(t.shape)}")
        if r.dtype != t.dtype:
            notes.append(f"{label}dtype {r.dtype} against {t.dtype}")
        if mode == SHAPE:
            # int32 against int64 indices is the same answer; float against int is not
            if r.dtype.kind != t.dtype.kind:
                return CheckResult(False, np.inf, np.inf, rtol, atol,
                                   f"{label}dtype {r.dtype} against {t.dtype}")
            continue
        if r.dtype == bool or t.dtype == bool:
            differs = r.astype(bool) != t.astype(bool)
            diff = np.count_nonzero(differs)
            if diff:
                first = np.unravel_index(int(np.argmax(differs)), differs.shape)
                return CheckResult(False, 1.0, np.inf, rtol, atol,
                                   f"{label}{diff} of {r.size} boolean values differ",
                                   worst_output=i, worst_index=tuple(int(k) for k in first))
            continue
        # complex outputs (an rfft2) compared as complex: |t - r| is the modulus of the
        # difference, so the imaginary part is checked too (a cast to float64 dropped it,
        # with numpy's ComplexWarning)
        wide = (np.complex128 if np.iscomplexobj(r) or np.iscomplexobj(t) else np.float64)
        r64, t64 = r.astype(wide), t.astype(wide)
        same_special = (np.isnan(r64) & np.isnan(t64)) | ((r64 == t64) & np.isinf(r64))
        with np.errstate(invalid="ignore", over="ignore"):
            abs_err = np.where(same_special, 0.0, np.abs(t64 - r64))
            abs_err = np.where(np.isnan(abs_err), np.inf, abs_err)
            # Relative error is undefined where the reference is 0 (relu, masks): dividing
            # by a tiny floor there would report ~1e300 for any rounding difference. Those
            # elements are judged by atol and counted in max_abs_err only.
            nonzero = r64 != 0   # NaN counts as non-zero: its error is unbounded
            rel_err = np.where(nonzero & (abs_err > 0),
                               abs_err / np.where(nonzero, np.abs(r64), 1.0), 0.0)
            rel_err = np.where(np.isnan(rel_err), np.inf, rel_err)   # inf / inf
        bad = abs_err > atol + rtol * np.abs(np.where(np.isfinite(r64), r64, 0.0))
        if abs_err.size:
            worst_abs = max(worst_abs, float(abs_err.max()))
            worst_rel = max(worst_rel, float(rel_err.max()))
        if bad.any():
            n = int(np.count_nonzero(bad))
            idx = np.unravel_index(int(np.argmax(np.where(bad, abs_err, -1))), abs_err.shape)
            where = "[" + ",".join(str(int(k)) for k in idx) + "]"
            return CheckResult(False, worst_abs, worst_rel, rtol, atol,
                               f"{label}{n} of {r.size} values differ; worst at {where}: "
                               f"{r64[idx]!r} against {t64[idx]!r}",
                               worst_output=i, worst_index=tuple(int(k) for k in idx))
    return CheckResult(True, worst_abs, worst_rel, rtol, atol, "; ".join(notes))

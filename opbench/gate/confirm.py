"""Confirmation before alarm: a candidate change point (results/changes.py) holds only if a
fresh measurement of its instance, taken after the scan, still sits at the new level.

A change point from the history is one test among many series; a fresh rerun is an
independent second test, so a chance alarm at rate p survives both at about p^2. The rerun
is passed in (`rerun(instance, mode) -> (ratio, ci_low, ci_high)`): the run loop measures
it on the real frameworks, a test fakes it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from opbench.results.changes import Change
from opbench.verdicts.rules import DEFAULT_MIN_EFFECT, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_SLOW

__all__ = ["Confirmation", "Rerun", "confirm_changes", "exit_code"]

Rerun = Callable[[str, str], tuple[float, float, float]]
HOLDS, GONE, UNSURE = "holds", "gone", "inconclusive"


@dataclass(frozen=True)
class Confirmation:
    change: Change
    fresh_ratio: float
    fresh_ci_low: float
    fresh_ci_high: float
    outcome: str


def _outcome(change: Change, low: float, high: float, min_effect: float) -> str:
    """The fresh run's interval relative to the level before the change. A regression holds
    when that interval excludes the old level and its midpoint is a step of min_effect or
    more; it is gone (a false alarm) when the interval excludes a slowdown of min_effect
    (the gate's PASS); anything else could not tell. An improvement, mirrored."""
    lo, hi = low / change.before_ratio, high / change.before_ratio
    mid = (lo * hi) ** 0.5
    if change.direction == "regression":
        if hi < 1 and mid * (1 + min_effect) <= 1:
            return HOLDS
        return GONE if lo * (1 + min_effect) > 1 else UNSURE
    if lo > 1 and mid >= 1 + min_effect:
        return HOLDS
    return GONE if hi < 1 + min_effect else UNSURE


def confirm_changes(changes: Sequence[Change], rerun: Rerun, *,
                    min_effect: float = DEFAULT_MIN_EFFECT) -> list[Confirmation]:
    out = []
    for c in changes:
        ratio, low, high = rerun(c.key.instance, c.key.mode)
        out.append(Confirmation(c, ratio, low, high, _outcome(c, low, high, min_effect)))
    return out


def exit_code(confirmations: Sequence[Confirmation]) -> int:
    """As the gate's: 1 a confirmed regression, 3 a regression neither confirmed nor gone,
    0 otherwise."""
    regressions = [c for c in confirmations if c.change.direction == "regression"]
    if any(c.outcome == HOLDS for c in regressions):
        return EXIT_SLOW
    if any(c.outcome == UNSURE for c in regressions):
        return EXIT_INCONCLUSIVE
    return EXIT_OK

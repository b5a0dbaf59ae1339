"""The interval a float external is drawn in, from the replay's default draw and the range
the capture observed (capture/float_range.py): the default narrowed to the observed range.

The default draw (executor.py) is [-1, 1] for a tensor, scaled by its fan-in for a weight,
and [0.5, 1.5] for a vector (a norm's scale, a running variance: positive). A torch.rand
target in [0, 1] is then drawn in [0, 1], and a binary cross-entropy accepts it in both
frameworks; a weight or activation whose range holds the default draw is drawn as before
(the same values: None below). Where the two do not meet (a bias of zeros against the
vector's [0.5, 1.5], float positions in [2, 500]), the observed range is drawn; a constant
one (a norm's scale of ones) is that constant, as the script had.

Pure: floats in, floats out (no framework, no numpy).
"""
from __future__ import annotations

__all__ = ["drawn_interval"]


def drawn_interval(default_low: float, default_high: float, low: float | None,
                   high: float | None) -> tuple[float, float] | None:
    """(low, high) to draw uniformly in; None where the observed range (low, high: None is
    unbounded on that side) holds the default interval, which is drawn as before."""
    if low is None and high is None:
        return None
    lo = default_low if low is None else max(default_low, low)
    hi = default_high if high is None else min(default_high, high)
    if lo == default_low and hi == default_high:
        return None
    if lo <= hi:
        return lo, hi
    # beside the default interval: the observed range, or from its one finite bound the
    # default's width away from the default
    width = default_high - default_low
    if low is not None and high is not None:
        return low, high
    if low is not None:                 # all of it above the default interval
        return low, low + width
    return high - width, high           # all of it below

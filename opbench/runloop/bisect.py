"""`opbench bisect ENV_0 ... ENV_N-1`: in an ordered list of environments (framework
versions, builds), where did each operator that is slower in the last than in the first
get slower?

A probe measures environment k against the first in one run (both sides interleaved in
their own processes, docs/measurement.md), so each probe gives every instance's ratio
time(first) / time(k) with its interval, free of the machine's drift between runs. The
first probe is the last environment: the instances it finds slower are the regressions.
Each regression is then bisected on its own interval (last environment like the first,
first environment like the last), and a probe serves every regression whose interval it
falls in, so one step shared by all is found in 1 + ceil(log2(N - 1)) probes (5 for 16).

At a probe, an instance is
- like the first: its interval holds 1 and lies above the last environment's;
- like the last: its interval lies below 1 and overlaps the last environment's;
- between: below 1 and above the last environment's: it got slower here, but not by all
  of it: more slowing follows (creep, or several steps);
- unclear: its interval holds both 1 and the last environment's ratio; bisecting it
  stops there, with the interval it had.
The search looks for the first environment where it got slower (like the last or
between); a regression whose first slower environment does not already hold the whole
slowdown is reported as creep.

Pure: the probe is a callable (the CLI's runs; a fake in the tests); nothing is printed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

__all__ = ["Estimate", "Regression", "BisectResult", "bisect_environments", "LIKE_FIRST",
           "LIKE_LAST", "BETWEEN", "UNCLEAR", "DEFAULT_MIN_SLOWDOWN", "estimates_of"]

LIKE_FIRST, LIKE_LAST, BETWEEN, UNCLEAR = "like first", "like last", "between", "unclear"
# A regression is slower in the last environment with its whole interval and by at least
# this much at its estimate: below it, a "step" is within what fresh runs of the same
# environment move by here (ratio spread median 1.04x over 3 runs, docs/measurement.md).
DEFAULT_MIN_SLOWDOWN = 0.05


@dataclass(frozen=True)
class Estimate:
    """One instance in one probe: ratio = time in the first environment / time in this
    one (below 1: slower here), with its interval."""

    ratio: float
    low: float
    high: float


# probe(k) -> {instance id: Estimate of environment k against environment 0}
Probe = Callable[[int], Mapping[str, Estimate]]


@dataclass(frozen=True)
class Regression:
    instance: str
    total: Estimate                  # the last environment against the first
    last_like_first: int             # the last environment known to be like the first
    first_slower: int                # the first environment known to be slower
    kind: str                        # "step", "creep" or "undecided"
    at_first_slower: Estimate | None  # that environment against the first
    probes: Mapping[int, Estimate]   # every probe of this instance, by environment

    @property
    def found(self) -> bool:
        """The step is pinned to one pair of neighbouring environments."""
        return self.first_slower - self.last_like_first == 1


@dataclass(frozen=True)
class BisectResult:
    environments: tuple[str, ...]
    probed: tuple[int, ...]          # the environments probed, in order
    regressions: tuple[Regression, ...]
    # instances the last probe measured and found not slower (errors and mismatches have
    # no estimate and are in neither list)
    not_slower: tuple[str, ...]


def classify(estimate: Estimate, total: Estimate) -> str:
    """Where one probe's estimate lies between the first environment (1) and the last."""
    holds_one = estimate.high >= 1.0
    above_last = estimate.low > total.high
    if holds_one and above_last:
        return LIKE_FIRST
    if not holds_one and not above_last:
        return LIKE_LAST
    if not holds_one:
        return BETWEEN
    return UNCLEAR


def is_regression(total: Estimate, min_slowdown: float = DEFAULT_MIN_SLOWDOWN) -> bool:
    return total.high < 1.0 and total.ratio <= 1.0 / (1.0 + min_slowdown)


@dataclass
class _Search:
    instance: str
    total: Estimate
    low: int                         # like the first
    high: int                        # slower
    done: bool = False
    unclear: bool = False


def _next_probe(search: _Search, probed: Mapping[int, Mapping[str, Estimate]]) -> int | None:
    """An environment inside the search's interval already probed (nearest its middle),
    or None when it needs a new one."""
    inside = [k for k in probed if search.low < k < search.high]
    if not inside:
        return None
    middle = (search.low + search.high) / 2
    return min(inside, key=lambda k: (abs(k - middle), k))


def bisect_environments(environments: Sequence[str], probe: Probe,
                        min_slowdown: float = DEFAULT_MIN_SLOWDOWN) -> BisectResult:
    """Bisect every regression of the last environment against the first (module doc)."""
    n = len(environments)
    if n < 2:
        raise ValueError("bisect needs at least two environments: the first and the last")
    probed: dict[int, Mapping[str, Estimate]] = {}
    order: list[int] = []

    def take(k: int) -> Mapping[str, Estimate]:
        if k not in probed:
            probed[k] = probe(k)
            order.append(k)
        return probed[k]

    last = take(n - 1)
    searches = [_Search(i, e, 0, n - 1) for i, e in sorted(last.items())
                if is_regression(e, min_slowdown)]
    while True:
        wanted: dict[int, int] = {}
        for s in searches:
            while not s.done:
                if s.high - s.low <= 1:
                    s.done = True
                    break
                k = _next_probe(s, probed)
                if k is None:
                    middle = (s.low + s.high) // 2
                    wanted[middle] = wanted.get(middle, 0) + 1
                    break
                estimate = probed[k].get(s.instance)
                place = classify(estimate, s.total) if estimate is not None else UNCLEAR
                if place == LIKE_FIRST:
                    s.low = k
                elif place in (LIKE_LAST, BETWEEN):
                    s.high = k
                else:
                    s.done = s.unclear = True
        if not wanted:
            break
        # the environment most searches want next (the earliest of a tie)
        take(max(wanted, key=lambda k: (wanted[k], -k)))

    regressions = []
    for s in searches:
        mine = {k: probed[k][s.instance] for k in order if s.instance in probed[k]}
        at = mine.get(s.high)
        if s.unclear:
            kind = "undecided"
        elif at is not None and classify(at, s.total) == BETWEEN:
            kind = "creep"
        else:
            kind = "step"
        regressions.append(Regression(s.instance, s.total, s.low, s.high, kind, at, mine))
    regressed = {s.instance for s in searches}
    return BisectResult(tuple(environments), tuple(order), tuple(regressions),
                        tuple(sorted(i for i in last if i not in regressed)))


def estimates_of(record: Any, key: str = "serial") -> dict[str, Estimate]:
    """A probe's run record (results/records.RunRecord) -> each measured instance's
    Estimate in view `key`; instances without one (errors, mismatches) are left out."""
    found = {}
    for instance in record.instances:
        m = instance.measurements.get(key)
        if m is None or m.ratio is None or m.ci_low is None or m.ci_high is None:
            continue
        found[instance.id] = Estimate(m.ratio, m.ci_low, m.ci_high)
    return found

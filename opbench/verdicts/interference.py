"""Detect one side's work landing in the other side's samples, from the samples themselves.

The interleaved rounds already hold the evidence. Round i runs the sides in order A B or
B A, so each side has samples taken first and samples taken right after the other side.
If the other side's leftovers (spinning threads, a launch queue still draining, caches it
flushed) reach a sample, that side is slower when it runs second: an *order effect*.
Measured here before isolation: torch's add 16x64 took 1.1 us when it ran first and
6-8 us right after MindSpore. The second sign is samples that fall into *separate clusters*
inside one process, like MindSpore's 2-thread operators that took either ~0.15 ms or a
4 ms scheduler tick. Either one, beyond the noise, means the ratio is not the operators'
own, and the measurement must not conclude PASS or SLOW on it.

Pure functions of the samples, their order and their process; no printing.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from opbench.verdicts.stats import change_estimate

__all__ = ["ORDER_EFFECT", "CLUSTERS", "Finding", "contaminated_versions",
           "detect_interference", "order_effect", "sample_clusters"]

ORDER_EFFECT = "order effect"
CLUSTERS = "clusters"

# An order effect must be at least this large to count: smaller position effects (a
# warmer cache for the side that ran second, timer placement) are part of an operator's
# ordinary cost and cancel in the A B / B A design anyway.
MIN_ORDER_EFFECT = 0.10
# ... and clear of the noise at this confidence. 99%, not 95%: the test runs on every side
# of every measurement, and each false alarm makes a good measurement INCONCLUSIVE.
ORDER_CONFIDENCE = 0.99
# Each position needs this many samples for the test to mean anything.
MIN_PER_POSITION = 3
# Two clusters: sorted log samples with a gap of at least this factor between neighbours...
CLUSTER_GAP_FACTOR = 1.5
# ... that is also this many times wider than the larger cluster's own spread ...
CLUSTER_GAP_OVER_SPREAD = 3.0
# ... and a minor cluster of at least this many samples and this share (one burst is an
# outlier the median already ignores, not a second mode).
MIN_CLUSTER_SAMPLES = 2
MIN_CLUSTER_SHARE = 0.1


@dataclass(frozen=True)
class Finding:
    kind: str            # ORDER_EFFECT or CLUSTERS
    side: str
    effect: float        # order: second/first time; clusters: upper/lower centre
    detail: str          # one sentence for the report

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _centred_logs(samples: Sequence[float], groups: Sequence[int]) -> np.ndarray:
    """log samples minus their process's median: a process's own offset is not an order
    effect (the statistics treat it as between-process variation)."""
    logs = np.log(np.asarray(samples, dtype=float))
    g = np.asarray(groups)
    out = np.empty_like(logs)
    for label in set(g.tolist()):
        mask = g == label
        out[mask] = logs[mask] - np.median(logs[mask])
    return out


def _share_starts(n: int, shares: Sequence[Any] | None) -> set[int]:
    """Rounds that open a share (a pass in a process): what ran before them was a warm-up or
    a calibration probe, not a round of this measurement."""
    starts = {0}
    if shares is not None:
        starts |= {i for i in range(1, n) if shares[i] != shares[i - 1]}
    return starts


def order_effect(side: str, samples: Sequence[float], order: Sequence[Sequence[str]],
                 groups: Sequence[int] | None = None,
                 shares: Sequence[Any] | None = None) -> Finding | None:
    """A Finding when `side` is clearly (ORDER_CONFIDENCE) and substantially
    (MIN_ORDER_EFFECT) slower or faster right after another side's sample than right after
    its own. Inside a share the rounds alternate (A B, B A, ...), so a side that runs first
    in a round follows itself; the first round of each share is left out (it follows a
    warm-up or calibration, whichever side that was)."""
    groups = list(groups) if groups is not None else [1] * len(samples)
    centred = _centred_logs(samples, groups)
    skip = _share_starts(len(samples), shares)
    kept = [(v, o) for i, (v, o) in enumerate(zip(centred, order)) if i not in skip and o]
    first = [v for v, o in kept if o[0] == side]
    later = [v for v, o in kept if o[0] != side]
    if len(first) < MIN_PER_POSITION or len(later) < MIN_PER_POSITION:
        return None
    est = change_estimate(np.exp(first), np.exp(later), confidence=ORDER_CONFIDENCE)
    if est.too_few_rounds:
        return None
    clear = est.ci_low > 1.0 or est.ci_high < 1.0
    big = abs(math.log(est.change)) >= math.log1p(MIN_ORDER_EFFECT)
    if not (clear and big):
        return None
    raw = [(t, o) for i, (t, o) in enumerate(zip(samples, order)) if i not in skip and o]
    first_raw = [t for t, o in raw if o[0] == side]
    later_raw = [t for t, o in raw if o[0] != side]
    return Finding(ORDER_EFFECT, side, est.change,
                   f"{side} is {est.change:.2f}x as long when it runs right after the other "
                   f"side (median {_time(float(np.median(later_raw)))}) as right after itself "
                   f"({_time(float(np.median(first_raw)))}): the other side's work reaches "
                   f"its samples")


def _cluster_split(values: np.ndarray) -> int | None:
    """Where the sorted samples split into two well-separated clusters (the index of the
    upper cluster's first sample in sorted order), or None."""
    n = values.size
    minimum = max(MIN_CLUSTER_SAMPLES, math.ceil(MIN_CLUSTER_SHARE * n))
    if n < 2 * minimum:
        return None
    logs = np.log(np.sort(values))
    # only splits that leave `minimum` samples on each side
    candidates = np.diff(logs)[minimum - 1: n - minimum]
    if candidates.size == 0:
        return None
    split = int(np.argmax(candidates)) + minimum
    gap = float(logs[split] - logs[split - 1])
    spread = max(float(logs[split - 1] - logs[0]), float(logs[-1] - logs[split]))
    if gap < math.log(CLUSTER_GAP_FACTOR) or gap < CLUSTER_GAP_OVER_SPREAD * spread:
        return None
    return split


def sample_clusters(side: str, samples: Sequence[float],
                    groups: Sequence[int] | None = None) -> Finding | None:
    """A Finding when `side`'s samples split into two well-separated clusters and both
    clusters occur within one process (clusters made only by different processes are
    process-to-process variation, which the interval covers)."""
    values = np.asarray(samples, dtype=float)
    n = values.size
    split = _cluster_split(values)
    if split is None:
        return None
    order = np.argsort(values)
    logs = np.log(values[order])
    g = np.asarray(groups if groups is not None else [1] * n)[order]
    lower, upper = set(g[:split].tolist()), set(g[split:].tolist())
    if not lower & upper:
        return None
    low_centre = float(np.exp(np.median(logs[:split])))
    high_centre = float(np.exp(np.median(logs[split:])))
    return Finding(CLUSTERS, side, high_centre / low_centre,
                   f"{side}'s samples fall into two clusters within one process: "
                   f"{split} near {_time(low_centre)} and {n - split} near "
                   f"{_time(high_centre)} ({high_centre / low_centre:.1f}x apart): something "
                   f"else shares the cores during some samples")


def detect_interference(per_call_s: Mapping[str, Sequence[float]],
                        order: Sequence[Sequence[str]],
                        groups: Sequence[int] | None = None,
                        shares: Sequence[Any] | None = None) -> list[Finding]:
    """Every finding for every side of one measurement. groups: each round's process;
    shares: each round's share (process, pass), where the alternation restarts."""
    findings = []
    for side, samples in per_call_s.items():
        for found in (order_effect(side, samples, order, groups, shares),
                      sample_clusters(side, samples, groups)):
            if found is not None:
                findings.append(found)
    return findings


def _contaminated(finding: Finding, samples: np.ndarray,
                  order: Sequence[Sequence[str]]) -> np.ndarray:
    """Which of a side's samples a finding says were reached by something else: the
    upper cluster, or the samples taken right after the other side."""
    if finding.kind == CLUSTERS:
        split = _cluster_split(samples)
        if split is None:   # the finding came from these samples, so this does not happen
            return np.zeros(samples.size, dtype=bool)
        return samples >= np.sort(samples)[split]
    return np.array([bool(o) and o[0] != finding.side for o in order])


def contaminated_versions(per_call_s: Mapping[str, Sequence[float]],
                          order: Sequence[Sequence[str]], findings: Sequence[Finding]
                          ) -> dict[str, dict[str, list[float]]]:
    """The samples as they would be if the interference were everywhere, and if it were
    nowhere: for each finding, the side's clean samples scaled by the finding's effect
    (every sample at the contaminated level: its worst), and its contaminated samples
    scaled back (without them); then, when both sides show some, each side's largest at
    its worst together, and all removed. Scaling keeps every round and its pairing, so
    each version's interval is computed by the same rule as the measured one. A verdict
    that every version agrees with cannot have been made by the interference."""
    versions: dict[str, dict[str, list[float]]] = {}
    worst_all = {n: np.asarray(v, dtype=float) for n, v in per_call_s.items()}
    clean_all = {n: np.asarray(v, dtype=float) for n, v in per_call_s.items()}
    # Together, each side's largest finding: an order effect and the clusters it makes are
    # one phenomenon seen twice, and scaling by both would count it twice.
    largest = {f.side: f for f in sorted(findings, key=lambda f: abs(math.log(f.effect)))}
    for f in findings:
        samples = np.asarray(per_call_s[f.side], dtype=float)
        hit = _contaminated(f, samples, order)
        worst = np.where(hit, samples, samples * f.effect)
        clean = np.where(hit, samples / f.effect, samples)
        label = f"{f.side}'s {f.kind}"
        versions[f"{label} at its worst"] = {**{n: list(v) for n, v in per_call_s.items()},
                                             f.side: worst.tolist()}
        versions[f"without {label}"] = {**{n: list(v) for n, v in per_call_s.items()},
                                        f.side: clean.tolist()}
        if largest[f.side] is not f:
            continue
        worst_all[f.side] = np.where(hit, worst_all[f.side], worst_all[f.side] * f.effect)
        clean_all[f.side] = np.where(hit, clean_all[f.side] / f.effect, clean_all[f.side])
    if len(largest) > 1:
        versions["every finding at its worst"] = {n: v.tolist() for n, v in worst_all.items()}
        versions["without any finding"] = {n: v.tolist() for n, v in clean_all.items()}
    return versions


def _time(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} us"

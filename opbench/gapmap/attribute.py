"""Why each SLOW measurement is slow, and which causes many rows share.

Each SLOW measurement gets one main cause:
  - threading or launch: its views disagree (SLOW in one mode, PASS in the other), so
    how the calls are launched or waited for decides the verdict, not the op;
  - per-call overhead: the target's time is below its trivial-op floor (no kernel is
    launched: a view or metadata change) or within DISPATCH_BOUND_FACTOR of it, or its sweep
    fit puts most of the gap in the fixed cost;
  - kernel throughput: its sweep fit puts most of the gap in the cost per unit of work;
  - without a usable sweep fit, the gap at the one size is split by the two sides'
    trivial-op floors (their fixed costs): per-call overhead when the floors' difference is
    at least half of it, else kernel throughput;
  - unknown: no usable fit and no floors (the basis says why in one line).
With both sides' sweep fits the gap at a size splits exactly into a fixed part and a
per-work part, (a_t - a_r) + w (c_t - c_r); the larger part is the cause. That is the
question a framework engineer asks ("fix dispatch, or fix the kernel?").

A cause shared by many rows is reported once with its count (`headlines`), not as one
note per row. Pure: the report prints what this returns.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from opbench.config.record_codec import record_from
from opbench.gapmap.sweep import OK, OVERHEAD_BOUND, Sweep, by_instance
from opbench.results.records import InstanceRecord, Measurement, Overhead, RunRecord
from opbench.verdicts.explain import DISPATCH_BOUND_FACTOR, NO_KERNEL, below_floor

OVERHEAD = "per-call overhead"
KERNEL = "kernel throughput"
THREADING = "threading or launch (views disagree)"
UNKNOWN = "unknown"
CAUSES = (OVERHEAD, KERNEL, THREADING, UNKNOWN)

SLOW = "SLOW"
# The cause's short name in the results JSON (gapmap/figures.py), and back.
CAUSE_KINDS = {OVERHEAD: "overhead", KERNEL: "kernel", THREADING: "threading",
               UNKNOWN: "unknown"}
_CAUSE_OF_KIND = {kind: cause for cause, kind in CAUSE_KINDS.items()}


@dataclass(frozen=True)
class Attribution:
    instance_id: str
    key: str
    cause: str
    basis: str               # the evidence, in a few words
    overhead_share: float | None = None   # of the fitted gap, when the fits give one


def _fits_usable(sweep: Sweep | None) -> bool:
    return sweep is not None and all(f.status in (OK, OVERHEAD_BOUND)
                                     for f in sweep.fits.values())


def _split_gap(sweep: Sweep, work: float) -> float | None:
    """Share of the fitted time gap (target - reference) at `work` that is fixed cost."""
    ref, tgt = sweep.fits[sweep.reference], sweep.fits[sweep.target]
    fixed_gap = tgt.fixed_s - ref.fixed_s
    work_gap = work * (tgt.per_unit_s - ref.per_unit_s)
    total = fixed_gap + work_gap
    if total <= 0:
        return None
    return min(max(fixed_gap / total, 0.0), 1.0)


def _views_disagree(inst: InstanceRecord, key: str) -> bool:
    """The same direction (forward, or forward+backward) measured in another mode
    reached another verdict."""
    suffix = key[key.index("+"):] if "+" in key else ""
    verdicts = {k: m.verdict for k, m in inst.measurements.items()
                if (k[k.index("+"):] if "+" in k else "") == suffix}
    return len(verdicts) > 1 and len(set(verdicts.values()) - {"INCONCLUSIVE"}) > 1


def _target_overhead(record: RunRecord) -> Overhead:
    return record.overhead.get(record.config.target) or Overhead()


def attribute(record: RunRecord, found: Sequence[Sweep]) -> list[Attribution]:
    """One Attribution per SLOW measurement of the record, in record order."""
    target, reference = record.config.target, record.config.reference
    sweep_of = by_instance(found)
    overhead = _target_overhead(record)
    reference_overhead = record.overhead.get(reference) or Overhead()
    out = []
    for inst in record.instances:
        for key, m in inst.measurements.items():
            if m.verdict != SLOW:
                continue
            out.append(_attribute_one(inst, key, m, sweep_of.get((inst.id, key)),
                                      overhead, target, reference, reference_overhead))
    return out


def _attribute_one(inst: InstanceRecord, key: str, m: Measurement, sweep: Sweep | None,
                   overhead: Overhead, target: str, reference: str,
                   reference_overhead: Overhead) -> Attribution:
    iid = inst.id
    if _views_disagree(inst, key):
        return Attribution(iid, key, THREADING, "SLOW in one mode, not in another")
    if _fits_usable(sweep):
        point = next(p for p in sweep.points if p.instance_id == iid)
        share = _split_gap(sweep, point.work)
        if share is not None:
            cause = OVERHEAD if share >= 0.5 else KERNEL
            return Attribution(iid, key, cause, f"{share:.0%} of the fitted gap is fixed "
                                                f"cost per call", share)
    floor_s = overhead.floor_s(key)
    median_s = m.summary[target].median_s
    if below_floor(median_s, floor_s):
        return Attribution(iid, key, OVERHEAD, f"below {target}'s per-call floor "
                                               f"({median_s * 1e6:.3g} us against "
                                               f"{floor_s * 1e6:.3g} us): {NO_KERNEL}")
    if floor_s and median_s < DISPATCH_BOUND_FACTOR * floor_s:
        return Attribution(iid, key, OVERHEAD, f"within {DISPATCH_BOUND_FACTOR:g}x of "
                                               f"{target}'s per-call floor")
    why_no_fit = _why_no_fit(sweep)
    share = _floor_split(m, key, reference, target, reference_overhead, overhead)
    if share is not None:
        cause = OVERHEAD if share >= 0.5 else KERNEL
        return Attribution(iid, key, cause, f"{why_no_fit}; the per-call floors' difference "
                                            f"is {share:.0%} of the gap", share)
    return Attribution(iid, key, UNKNOWN, f"{why_no_fit}, and no per-call floors to split "
                                          f"the gap with")


def _why_no_fit(sweep: Sweep | None) -> str:
    """One line: why the sweep gave no usable fit."""
    if sweep is None:
        return "no size sweep (fewer than 3 sizes of this case and view)"
    reasons = sorted({f"{side}: {f.reason}" for side, f in sweep.fits.items()
                      if f.status not in (OK, OVERHEAD_BOUND)})
    return "sweep fit unusable (" + "; ".join(reasons) + ")"


def _floor_split(m: Measurement, key: str, reference: str, target: str,
                 reference_overhead: Overhead, overhead: Overhead) -> float | None:
    """Without a sweep fit, the one-size split: the two sides' trivial-op floors stand for
    their fixed costs, so the floors' difference is the fixed part of the time gap and the
    rest grows with the work. The share of the gap that is fixed (0..1), or None without
    both floors or a gap."""
    tgt_floor, ref_floor = overhead.floor_s(key), reference_overhead.floor_s(key)
    ref_s, tgt_s = m.median_s(reference), m.median_s(target)
    if not tgt_floor or ref_floor is None or ref_s is None or tgt_s is None:
        return None
    gap = tgt_s - ref_s
    if gap <= 0:
        return None
    return min(max((tgt_floor - ref_floor) / gap, 0.0), 1.0)


def stored_attributions(record: RunRecord) -> list[Attribution] | None:
    """The causes the record holds, one per SLOW measurement in record order; None when a
    SLOW measurement has none (a file written before the key, or a partial run)."""
    out = []
    for inst in record.instances:
        for key, m in inst.measurements.items():
            if m.verdict != SLOW:
                continue
            cause = None if m.cause is None else record_from(_StoredCause, m.cause)
            if cause is None or cause.kind not in _CAUSE_OF_KIND:
                return None
            out.append(Attribution(inst.id, key, _CAUSE_OF_KIND[cause.kind], cause.basis,
                                   cause.overhead_share))
    return out


@dataclass(frozen=True)
class _StoredCause:
    """A measurement's `cause` as the results file holds it (gapmap/figures.py writes it)."""

    kind: str | None = None
    basis: str = ""
    overhead_share: float | None = None



def near_floor(record: RunRecord, attributions: Sequence[Attribution],
               below: bool = False) -> int:
    """How many of the SLOW measurements run within DISPATCH_BOUND_FACTOR of the target's
    per-call floor in their mode (with `below`: how many under the floor itself)."""
    target = record.config.target
    overhead = _target_overhead(record)
    by_id = {inst.id: inst for inst in record.instances}
    count = 0
    for a in attributions:
        floor_s = overhead.floor_s(a.key)
        median_s = by_id[a.instance_id].measurements[a.key].summary[target].median_s
        count += (below_floor(median_s, floor_s) if below
                  else bool(floor_s) and median_s < DISPATCH_BOUND_FACTOR * floor_s)
    return count


def headlines(record: RunRecord, attributions: Sequence[Attribution]) -> list[str]:
    """The causes, most common first, each once with its count; then the floor line the
    issue asks for ("N of M SLOW instances are within 3x of MindSpore's per-call floor")."""
    total = len(attributions)
    if not total:
        return []
    target = record.config.target
    counts = Counter(a.cause for a in attributions)
    lines = [f"{n} of {total} SLOW measurements: {cause} ({_CAUSE_MEANING[cause]})"
             for cause, n in counts.most_common()]
    floor = _target_overhead(record).dispatch_floor_serial_s
    if floor:
        below = near_floor(record, attributions, below=True)
        lines.append(f"{near_floor(record, attributions)} of {total} SLOW measurements are "
                     f"within {DISPATCH_BOUND_FACTOR:g}x of {target}'s per-call floor "
                     f"({floor * 1e6:.3g} us serial)"
                     + (f"; {below} of them below it ({NO_KERNEL})" if below else ""))
    return lines


_CAUSE_MEANING = {
    OVERHEAD: "most of the gap is paid per call, whatever the size",
    KERNEL: "most of the gap grows with the work: the kernel is slower per byte or FLOP",
    THREADING: "the verdict changes between serial and async: launching or waiting decides",
    UNKNOWN: "no usable size-sweep fit and no per-call floors to split the gap",
}


# Per-row notes that a headline states once for the whole run: the report leaves them out
# of the per-row notes and counts them instead.
SHARED_NOTE_FAMILIES = {
    "is dispatch-bound here": "a side ran within {factor}x of its trivial-op floor "
                              "(per-call overhead more than kernel)",
    "runs below its per-call floor": "a side ran below its trivial-op floor: " + NO_KERNEL,
    "loop count held at": "the loop count was held by the time budget because one side is "
                          "much slower per call (the faster side's samples are shorter)",
    "rounds cut from": "rounds were cut to stay within the time budget",
}


def note_family(note: str) -> str | None:
    for marker in SHARED_NOTE_FAMILIES:
        if marker in note:
            return marker
    return None


def shared_note_lines(notes: Sequence[str]) -> list[str]:
    """'N measurements: ...' once per family of shared notes, most common first."""
    counts = Counter(f for n in notes if (f := note_family(n)))
    return [f"{n} measurements: " + SHARED_NOTE_FAMILIES[f].format(
        factor=f"{DISPATCH_BOUND_FACTOR:g}") for f, n in counts.most_common()]


__all__ = ["Attribution", "attribute", "stored_attributions", "CAUSE_KINDS", "headlines", "near_floor", "note_family",
           "shared_note_lines", "OVERHEAD", "KERNEL", "THREADING", "UNKNOWN", "CAUSES"]

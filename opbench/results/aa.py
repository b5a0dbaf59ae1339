"""An A/A run (`opbench run --aa`): the target side measured against itself, each side in
its own worker processes. Every difference it finds is the protocol's own noise, so the
count of SLOW verdicts and of intervals that exclude 1 is how many a real comparison of
that selection would flag by chance."""
from __future__ import annotations

from dataclasses import dataclass

from opbench.config.sides import AGAIN_SUFFIX
from opbench.results.records import RunRecord
from opbench.verdicts.rules import Verdict

__all__ = ["AASummary", "aa_summary", "is_aa"]


@dataclass(frozen=True)
class AASummary:
    side: str
    measured: int          # measurements with an interval
    slow: int              # SLOW verdicts: flagged against the threshold by chance
    off_one: int           # intervals that exclude 1: "different" by chance, either way
    confidence: float      # the intervals' level (0.95: ~5% should exclude 1)


def is_aa(record: RunRecord) -> bool:
    cfg = record.config
    reference, target = cfg.sides
    return (reference.framework == target.framework
            and cfg.target == cfg.reference + AGAIN_SUFFIX
            and reference.python == target.python)


def aa_summary(record: RunRecord) -> AASummary | None:
    """None unless the record is an A/A run."""
    if not is_aa(record):
        return None
    measured = slow = off_one = 0
    confidence = 0.95
    for instance in record.instances:
        for m in instance.measurements.values():
            if m.ci_low is None or m.ci_high is None:
                continue
            measured += 1
            slow += m.verdict == Verdict.SLOW
            off_one += not (m.ci_low <= 1.0 <= m.ci_high)
            confidence = m.confidence if m.confidence is not None else confidence
    return AASummary(record.config.reference, measured, slow, off_one, confidence)

"""From an instance's result record to a pytest outcome and the text a reader sees.

Pure functions over the instance's typed record (results/records.py, what opbench writes to
JSON): no pytest, no frameworks. The text names the instance, its inputs and where it is
defined, then what went wrong in opbench's own terms (both medians, the ratio with its
interval and threshold, or the output error), never a framework's stack.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from opbench.report.text import describe_inputs, fmt_time, verdict_of
from opbench.results.records import Check, InstanceRecord, Measurement
from opbench.verdicts.rules import Verdict

# Verdicts that fail a pytest item: definite findings, and a case that could not run.
FAILING = frozenset({Verdict.SLOW.value, Verdict.MISMATCH.value, Verdict.ERROR.value})
# Reported as its own outcome, not failed: the measurement could not tell (the rule,
# and the verdict module's: a noisy measurement is never a silent pass or a fail).
INCONCLUSIVE = Verdict.INCONCLUSIVE.value
INDENT = "  "


@dataclass(frozen=True)
class Outcome:
    verdict: str        # a Verdict value
    failed: bool
    inconclusive: bool
    message: str        # readable, multi-line; empty for a plain PASS


def judge(record: InstanceRecord, reference: str, target: str) -> Outcome:
    verdict = verdict_of(record)
    failed = verdict in FAILING
    inconclusive = verdict == INCONCLUSIVE
    message = describe(record, reference, target) if (failed or inconclusive) else ""
    return Outcome(verdict, failed, inconclusive, message)


def describe(record: InstanceRecord, reference: str, target: str) -> str:
    """The whole story of one instance's result, for a failure report."""
    verdict = verdict_of(record)
    lines = [f"{verdict}: {headline(record, reference, target)}",
             f"{INDENT}instance  {record.id}  ({record.file}:{record.line})"]
    inputs = describe_inputs(record)
    if inputs:
        lines.append(f"{INDENT}inputs    {inputs}")
    if record.error:
        lines.append(f"{INDENT}error     {record.error}")
    # a later pass that failed (its worker process died): the verdict stands on the others
    lines += [f"{INDENT}error     {e} (the other passes' rounds are kept)"
              for e in record.pass_errors]
    for what, check in (("outputs", record.check), ("gradients", record.grad_check)):
        if check is not None and (not check.ok or verdict == Verdict.MISMATCH.value):
            lines += [f"{INDENT}{line}" for line in check_lines(what, check)]
    for mode, m in record.measurements.items():
        lines += [f"{INDENT}{line}" for line in measurement_lines(mode, m, reference, target)]
    return "\n".join(lines)


def headline(record: InstanceRecord, reference: str, target: str) -> str:
    verdict = record.verdict
    if verdict == Verdict.MISMATCH.value:
        grads = record.grad_check
        what = "gradients" if grads is not None and not grads.ok else "outputs"
        return f"{reference} and {target} {what} differ"
    if verdict == Verdict.SLOW.value:
        return f"{target} is slower than {reference} beyond the threshold"
    if verdict == Verdict.INCONCLUSIVE.value:
        return "the measurement cannot tell whether the ratio is above or below the threshold"
    if verdict == Verdict.ERROR.value:
        return "the case could not be run"
    return f"{target} is on par with {reference} or faster"


def check_lines(what: str, check: Check) -> list[str]:
    state = "agree" if check.ok else "differ"
    lines = [f"{what} {state}: max abs err {_num(check.max_abs_err)}, max rel err "
             f"{_num(check.max_rel_err)} (rtol {check.rtol:g}, atol {check.atol:g})"]
    if check.detail:
        lines.append(f"{INDENT}{check.detail}")
    if check.expected_mismatch:
        lines.append(f"{INDENT}expected by the case: {check.expected_mismatch}")
    return lines


def measurement_lines(mode: str, m: Measurement, reference: str, target: str) -> list[str]:
    medians = (f"{reference} {fmt_time(m.median_s(reference))}, "
               f"{target} {fmt_time(m.median_s(target))} per call "
               f"(medians of {m.rounds} rounds x {m.loops} calls)")
    lines = [f"[{mode}] {medians}", f"{INDENT}{ratio_text(m)}",
             f"{INDENT}(ratio = {reference} time / {target} time; below 1: {target} slower)"]
    lines += [f"{INDENT}note: {note}" for note in m.notes]
    return lines


def ratio_text(m: Measurement) -> str:
    """'ratio 0.27 [0.25, 0.29] (95% interval): whole interval below threshold 0.8 -> SLOW'"""
    confidence = m.confidence
    interval = f"{confidence:.0%} interval" if confidence else "interval"
    ratio, low, high, threshold = m.ratio, m.ci_low, m.ci_high, m.threshold
    if m.too_few_rounds:
        relation = (f"too few rounds ({m.rounds}) for a {interval}, min..max shown; "
                    f"threshold {threshold:g}")
    elif high < threshold:
        relation = f"whole interval below threshold {threshold:g}"
    elif low >= threshold:
        relation = f"whole interval at or above threshold {threshold:g}"
    else:
        relation = f"interval straddles threshold {threshold:g}"
    return (f"ratio {ratio:.3g} [{low:.3g}, {high:.3g}] ({interval}): {relation} "
            f"-> {m.verdict}")


def _num(value: Any) -> str:
    return "unbounded" if value is None else f"{value:.3g}"

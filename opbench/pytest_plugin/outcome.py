"""From an instance's result record to a pytest outcome and the text a reader sees.

Pure functions over the record dict (the one opbench writes to JSON): no pytest, no
frameworks. The text names the instance, its inputs and where it is defined, then what went
wrong in opbench's own terms (both medians, the ratio with its interval and threshold, or
the output error), never a framework's stack.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from opbench.report.text import describe_inputs, fmt_time
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


def judge(record: Mapping[str, Any], reference: str, target: str) -> Outcome:
    verdict = record.get("verdict") or Verdict.ERROR.value
    failed = verdict in FAILING
    inconclusive = verdict == INCONCLUSIVE
    message = describe(record, reference, target) if (failed or inconclusive) else ""
    return Outcome(verdict, failed, inconclusive, message)


def describe(record: Mapping[str, Any], reference: str, target: str) -> str:
    """The whole story of one instance's result, for a failure report."""
    verdict = record.get("verdict") or Verdict.ERROR.value
    lines = [f"{verdict}: {headline(record, reference, target)}",
             f"{INDENT}instance  {record.get('id')}  ({record.get('file')}:{record.get('line')})"]
    inputs = describe_inputs(dict(record))
    if inputs:
        lines.append(f"{INDENT}inputs    {inputs}")
    if record.get("error"):
        lines.append(f"{INDENT}error     {record['error']}")
    # a later pass that failed (its worker process died): the verdict stands on the others
    lines += [f"{INDENT}error     {e} (the other passes' rounds are kept)"
              for e in record.get("pass_errors") or []]
    for what, key in (("outputs", "check"), ("gradients", "grad_check")):
        check = record.get(key)
        if check and (not check.get("ok") or verdict == Verdict.MISMATCH.value):
            lines += [f"{INDENT}{line}" for line in check_lines(what, check)]
    for mode, m in (record.get("measurements") or {}).items():
        lines += [f"{INDENT}{line}" for line in measurement_lines(mode, m, reference, target)]
    return "\n".join(lines)


def headline(record: Mapping[str, Any], reference: str, target: str) -> str:
    verdict = record.get("verdict")
    if verdict == Verdict.MISMATCH.value:
        grads = record.get("grad_check") or {}
        what = "gradients" if grads and not grads.get("ok") else "outputs"
        return f"{reference} and {target} {what} differ"
    if verdict == Verdict.SLOW.value:
        return f"{target} is slower than {reference} beyond the threshold"
    if verdict == Verdict.INCONCLUSIVE.value:
        return "the measurement cannot tell whether the ratio is above or below the threshold"
    if verdict == Verdict.ERROR.value:
        return "the case could not be run"
    return f"{target} is on par with {reference} or faster"


def check_lines(what: str, check: Mapping[str, Any]) -> list[str]:
    state = "agree" if check.get("ok") else "differ"
    lines = [f"{what} {state}: max abs err {_num(check.get('max_abs_err'))}, max rel err "
             f"{_num(check.get('max_rel_err'))} (rtol {check.get('rtol'):g}, "
             f"atol {check.get('atol'):g})"]
    if check.get("detail"):
        lines.append(f"{INDENT}{check['detail']}")
    if check.get("expected_mismatch"):
        lines.append(f"{INDENT}expected by the case: {check['expected_mismatch']}")
    return lines


def measurement_lines(mode: str, m: Mapping[str, Any], reference: str,
                      target: str) -> list[str]:
    summary = m.get("summary") or {}
    medians = (f"{reference} {fmt_time(summary.get(reference, {}).get('median_s'))}, "
               f"{target} {fmt_time(summary.get(target, {}).get('median_s'))} per call "
               f"(medians of {m.get('rounds')} rounds x {m.get('loops')} calls)")
    lines = [f"[{mode}] {medians}", f"{INDENT}{ratio_text(m)}",
             f"{INDENT}(ratio = {reference} time / {target} time; below 1: {target} slower)"]
    lines += [f"{INDENT}note: {note}" for note in m.get("notes") or []]
    return lines


def ratio_text(m: Mapping[str, Any]) -> str:
    """'ratio 0.27 [0.25, 0.29] (95% interval): whole interval below threshold 0.8 -> SLOW'"""
    confidence = m.get("confidence")
    interval = f"{confidence:.0%} interval" if confidence else "interval"
    ratio, low, high, threshold = m["ratio"], m["ci_low"], m["ci_high"], m["threshold"]
    if m.get("too_few_rounds"):
        relation = (f"too few rounds ({m.get('rounds')}) for a {interval}, min..max shown; "
                    f"threshold {threshold:g}")
    elif high < threshold:
        relation = f"whole interval below threshold {threshold:g}"
    elif low >= threshold:
        relation = f"whole interval at or above threshold {threshold:g}"
    else:
        relation = f"interval straddles threshold {threshold:g}"
    return (f"ratio {ratio:.3g} [{low:.3g}, {high:.3g}] ({interval}): {relation} "
            f"-> {m.get('verdict')}")


def _num(value: Any) -> str:
    return "unbounded" if value is None else f"{value:.3g}"

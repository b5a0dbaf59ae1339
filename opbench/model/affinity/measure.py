"""Each candidate measured: the swapped program built (swap.py), its outputs checked
against the original's (the model's one fingerprint comparison, impact/output_check.py), then
the original and swapped step timed interleaved in fresh replay processes of the script's
framework, in its launch mode (replay/paired.py), and the saving judged (saving.py).

A swap whose replacement does not run, or whose outputs differ, is not timed: it is listed
with why (and the largest difference). Nothing here prints: progress goes to a callback.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from opbench.model.affinity.patterns import Candidate
from opbench.model.affinity.graph import op_of
from opbench.model.affinity.source_diff import mechanical_diff
from opbench.model.affinity.saving import Saving, saving_from, verdict_of
from opbench.model.affinity.swap import SwappedStep, swapped_step
from opbench.model.impact.output_check import compare as compare_fingerprints
from opbench.model.impact.processes import Interpreter, ReplayFailed, run_replay
from opbench.model.impact.record import SuggestionRow
from opbench.model.program import refs_in
from opbench.runner import ipc
from opbench.model.steady import StepProgram

__all__ = ["SuggestSettings", "measure_candidates", "row_for", "outputs_check",
           "OUTPUTS_DIFFER", "DID_NOT_RUN", "DEFAULT_SUGGEST_PROCESSES"]

OUTPUTS_DIFFER = "outputs differ"
DID_NOT_RUN = "did not run"
# Replay processes per candidate: each times both programs in alternating rounds, so a
# process is one paired difference; 3 give a t interval of 2 degrees of freedom (a wide
# one: --suggest-processes raises it where a saving is small against the step).
DEFAULT_SUGGEST_PROCESSES = 3

# Rounds a replay process times past the first six, until they have taken this long (as
# tools/affinity_pairs.py times the script pairs 1.5 s a process): a small step's swap was
# measured on 30 samples a program, a few milliseconds of timing, and its claims spread
# more than the savings (torch/tensor_creation_in_loop: 0.148 ms [0.066, 0.230] claimed,
# 0.090 [0.089, 0.092] measured). A step of 20 ms or more takes this long in six rounds.
TIMED_SECONDS_PER_PROCESS = 1.0

# a row's detail where a replay process could not hold its allocator (replay/allocator.py)
HEAP_NOTE = "timed with the C allocator's thresholds moving"

# a replay of one paired request: its result, or why it failed
Replay = Callable[["ipc.ReplayPaired"], "ipc.PairedResult | str"]


@dataclass(frozen=True)
class SuggestSettings:
    framework: str
    launch: str
    device: str = "cpu"
    threads: int | None = None
    cpus: tuple[int, ...] = ()
    processes: int = DEFAULT_SUGGEST_PROCESSES
    rounds: int = 6                # alternating rounds per process (A B, B A, ...), at least
    samples: int = 5               # step samples per round
    seconds: float = TIMED_SECONDS_PER_PROCESS   # and more rounds until they took this long


def _picked(fingerprint: Any, path: tuple[int, ...]) -> Any:
    """The fingerprint of one element of a call's result (a list per sequence)."""
    for p in path:
        if not isinstance(fingerprint, list) or p >= len(fingerprint):
            return None
        fingerprint = fingerprint[p]
    return fingerprint


def outputs_check(step: StepProgram, swapped: SwappedStep, original: list[Any],
                  after: list[Any]) -> tuple[bool, str]:
    """Equal outputs? Each swap's output against the call it replaced, and the step's final
    outputs (calls nothing in the step reads) against themselves, by the model's one
    comparison (impact/output_check.py); and what differs first (empty when equal)."""
    pairs = [(old, new, swapped.picks.get(old, ())) for old, new in swapped.roots.items()
             if new is not None]
    read = {r for c in step.calls for r in _reads(c)}
    pairs += [(old, new, ()) for old, new in swapped.kept.items() if old not in read]
    for old, new, path in pairs:
        found = compare_fingerprints(original[old], _picked(after[new], path))
        if found is not None:
            return False, found
    return True, ""


def _reads(call: Any) -> list[int]:
    return [r.call for r in refs_in(call)]


def _num(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def row_for(candidate: Candidate, verdict: str, *, outputs_equal: bool | None = None,
            max_difference: float | None = None, saving: Saving | None = None,
            detail: str = "", diff: str = "") -> SuggestionRow:
    site = candidate.site
    return SuggestionRow(
        file=site.file if site else "", start_line=site.first_line if site else 0,
        end_line=site.last_line if site else 0, api_type=candidate.api_type,
        api=candidate.api, affinity_api=candidate.affinity_api, family=candidate.family,
        replacement=candidate.replacement, calls=candidate.calls, verdict=verdict,
        outputs_equal=outputs_equal, max_difference=_num(max_difference),
        saving_s=None if saving is None else {"estimate": saving.estimate,
                                              "ci_low": _num(saving.ci_low),
                                              "ci_high": _num(saving.ci_high)},
        share=None if saving is None else saving.share,
        time_now_s=None if saving is None else saving.time_now_s,
        time_after_s=None if saving is None else saving.time_after_s, detail=detail,
        diff=diff)


def _request(settings: SuggestSettings, steps: list[StepProgram], fingerprints: bool,
             rounds: int) -> ipc.ReplayPaired:
    return ipc.ReplayPaired(framework=settings.framework, programs=tuple(steps),
                            fingerprints=fingerprints, device=settings.device,
                            threads=settings.threads, cpus=tuple(settings.cpus),
                            launch=settings.launch, rounds=rounds, samples=settings.samples,
                            min_timed_s=settings.seconds if rounds else 0.0)


def measure_one(step: StepProgram, candidate: Candidate, settings: SuggestSettings,
                replay: Replay, on_progress: Callable[[str], None] = lambda m: None
                ) -> SuggestionRow:
    swapped = swapped_step(step, candidate)
    pair = [step, swapped.step]
    # A swap whose new call stands for several removed calls (an optimizer loop's nn.SGD
    # for its write-backs) is checked in a process of its own, on the program returning
    # the whole result (every weight compared), and timed on the one returning the root's
    # element (a sample ends reading one tensor back, as the original's does).
    separate = any(s.stands_for for s in candidate.swaps)
    checked = swapped_step(step, candidate, whole_results=True) if separate else swapped
    first = replay(_request(settings, [step, checked.step], True,
                            0 if separate else settings.rounds))
    if isinstance(first, str):
        return row_for(candidate, DID_NOT_RUN, detail=first)
    failed = [s for s in first.status[1] if not s.ok or s.stand_in]
    if failed:
        return row_for(candidate, DID_NOT_RUN,
                       detail=f"{failed[0].api}: {failed[0].problem or 'stood in'}")
    equal, differs = outputs_check(step, checked, first.fingerprints[0],
                                   first.fingerprints[1])
    if not equal:
        return row_for(candidate, OUTPUTS_DIFFER, outputs_equal=False,
                       detail=f"outputs differ: {differs}")
    timed = [] if separate else [first.samples_s]
    errors = []
    if not separate and first.heap_note:
        errors.append(f"{HEAP_NOTE}: {first.heap_note}")
    for n in range(len(timed) + 1, settings.processes + 1):
        on_progress(f"timing {candidate.affinity_api} at line {row_site(candidate)}: "
                    f"process {n} of {settings.processes}")
        result = replay(_request(settings, pair, False, settings.rounds))
        if isinstance(result, str):
            errors.append(result)
            continue
        broken = [s for s in result.status[1] if not s.ok or s.stand_in]
        if broken:        # the timed program is not the checked one where separate
            errors.append(f"{broken[0].api}: {broken[0].problem or 'stood in'}")
        else:
            timed.append(result.samples_s)
            note = f"{HEAP_NOTE}: {result.heap_note}"
            if result.heap_note and note not in errors:
                errors.append(note)
    if not timed:
        return row_for(candidate, DID_NOT_RUN, outputs_equal=True,
                       detail="; ".join(errors) or "no process was timed")
    saving = saving_from([(t[0], t[1]) for t in timed])
    return row_for(candidate, verdict_of(saving), outputs_equal=True, saving=saving,
                   detail="; ".join(errors))


def row_site(candidate: Candidate) -> str:
    site = candidate.site
    return f"{site.first_line}" if site else "?"


def measure_candidates(step: StepProgram, candidates: Sequence[Candidate],
                       settings: SuggestSettings, interpreter: Interpreter, work: Path,
                       on_progress: Callable[[str], None] = lambda m: None
                       ) -> list[SuggestionRow]:
    def replay(request: ipc.ReplayPaired) -> ipc.PairedResult | str:
        try:
            return run_replay(interpreter.path, request, work)
        except ReplayFailed as exc:
            return str(exc)

    rows = []
    for n, candidate in enumerate(candidates, 1):
        on_progress(f"suggestion {n} of {len(candidates)}: {candidate.api} -> "
                    f"{candidate.affinity_api} (line {row_site(candidate)})")
        row = measure_one(step, candidate, settings, replay, on_progress)
        rows.append(replace(row, diff=diff_for(step, candidate)))
    return sort_rows(rows)


def diff_for(step: StepProgram, candidate: Candidate) -> str:
    """The swap as a unified diff of the script, where it is mechanical (source_diff.py)."""
    site = candidate.site
    if site is None:
        return ""
    try:
        source = Path(site.file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""
    root = step.calls[candidate.swaps[0].root]
    return mechanical_diff(candidate, op_of(root.api), source, site.file)


def sort_rows(rows: Sequence[SuggestionRow]) -> list[SuggestionRow]:
    """Faster first, largest saving first; then the rest by saving; untimed last."""
    def key(row: SuggestionRow) -> tuple[int, float]:
        timed = row.saving_s is not None
        return (0 if row.verdict == "faster" else 1 if timed else 2,
                -(row.saving_s["estimate"] if timed else 0.0))
    return sorted(rows, key=key)

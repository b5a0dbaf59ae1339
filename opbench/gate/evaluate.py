"""The whole gate over two runs: pair instances, decide each measurement (two stages), roll
up per instance and into an exit code.

Pure: results records in (the baseline, the current run, and the stage-2 re-measurements
of the instances that asked for one), a frozen GateResult out. The command does the
measuring; this module only reads records, so every rule here is tested without frameworks.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from opbench.gate.baseline import (
                                   KIND_NOISE,
                                   HygieneNote,
                                   Pair,
                                   environment_notes,
                                   is_measured,
                                   match_instances,
                                   same_machine,
                                   select_records,
                                   )
from opbench.gate.decision import (
                                   PATH_RATIO,
                                   Decision,
                                   GateVerdict,
                                   RunSamples,
                                   StagedDecision,
                                   decide,
                                   needs_remeasure,
                                   path_priors,
                                   staged,
                                   )
from opbench.gate.noise import NoiseProfile
from opbench.results.records import InstanceRecord, Measurement, RunRecord
from opbench.verdicts.rules import DEFAULT_MIN_EFFECT, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_SLOW
from opbench.verdicts.stats import DEFAULT_CONFIDENCE, BetweenProcessPrior

__all__ = [
    "GateResult",
    "GateSettings",
    "InstanceResult",
    "MeasurementResult",
    "evaluate",
    "gate_exit_code",
    "min_effect_for",
]

# The cross-framework verdicts of the core that mean "this run measured nothing usable".
_UNMEASURED = ("ERROR", "MISMATCH")


@dataclass(frozen=True)
class GateSettings:
    """min_effect: --min-effect, for instances that neither a pattern nor their case give
    one (see min_effect_for).
    min_effect_overrides: (pattern, min_effect) pairs (--min-effect-for); a pattern matches
    an instance whose op equals it or whose id matches it as a shell glob; the last match
    wins, over the case's own `min_effect` too.
    fail_on_slow: also fail (exit 1) when the current run finds a case SLOW against the
    reference - the cross-framework question - not only when it regressed.
    noise: a NoiseProfile (--noise): an instance's minimum effect is raised to its noise
    floor when that is higher (gate/noise.py says why), never lowered."""

    min_effect: float = DEFAULT_MIN_EFFECT
    min_effect_overrides: tuple[tuple[str, float], ...] = ()
    fail_on_slow: bool = False
    ops: tuple[str, ...] = ()
    keyword: str | None = None
    tags: tuple[str, ...] = ()
    noise: NoiseProfile | None = None

    def __post_init__(self) -> None:
        for value in [self.min_effect, *(v for _, v in self.min_effect_overrides)]:
            if not 0.0 < value < 1.0:
                raise ValueError(f"min_effect must be in (0, 1), got {value!r}")


def min_effect_for(instance_id: str, op: str | None, settings: GateSettings,
                   case_min_effect: float | None = None) -> float:
    """The minimum effect that applies to one instance, most explicit first:
    1. the last --min-effect-for pattern matching its op or id: written on this command
       line, for this gate, so it beats what the case file says;
    2. case_min_effect: the case's own `min_effect` key (as recorded in the run);
    3. settings.min_effect: --min-effect (default 0.10)."""
    chosen = None
    for pattern, value in settings.min_effect_overrides:
        if pattern == op or fnmatch.fnmatchcase(instance_id, pattern):
            chosen = value
    if chosen is not None:
        return chosen
    return case_min_effect if case_min_effect is not None else settings.min_effect


def _case_min_effect(pair: Pair) -> float | None:
    """The case's own min_effect: as the current run recorded it, since that is the case
    file as it is now (null there: the case sets none); from the baseline only when the
    current record predates the key (absent)."""
    source, record = (("this run", pair.current) if pair.current.has("min_effect")
                      else ("the baseline", pair.baseline))
    value = record.min_effect
    if value is not None and not (isinstance(value, (int, float))
                                  and not isinstance(value, bool) and 0.0 < value < 1.0):
        raise ValueError(f"{record.id}: min_effect in {source} must be a number in "
                         f"(0, 1), got {value!r}")
    return value


@dataclass(frozen=True)
class MeasurementResult:
    """One measurement key (serial, async, serial+backward, ...) of an instance."""

    key: str
    verdict: GateVerdict
    decision: StagedDecision | None = None   # None for a key present on one side only
    note: str = ""

    @property
    def reason(self) -> str:
        return self.decision.reason if self.decision is not None else self.note

    @property
    def decided_by(self) -> str:
        return self.decision.decided_by if self.decision is not None else ""


@dataclass(frozen=True)
class InstanceResult:
    """The gate's answer for one instance: the regression question (verdict, decided_by,
    reason) and the cross-framework one (current_verdict, current ratio [CI])."""

    id: str
    op: str
    verdict: GateVerdict
    decided_by: str
    reason: str
    baseline_id: str | None = None
    min_effect: float = DEFAULT_MIN_EFFECT     # the one applied (raised to noise_floor)
    noise_floor: float | None = None           # from --noise; None: no figure for it
    measurements: tuple[MeasurementResult, ...] = ()
    current_verdict: str | None = None       # the core's verdict now: PASS / SLOW / ...
    baseline_verdict: str | None = None
    current_ratio: tuple[float, float, float] | None = None    # ratio, ci_low, ci_high
    baseline_ratio: tuple[float, float, float] | None = None
    remeasured: bool = False
    stage1_verdict: GateVerdict | None = None

    @property
    def worst_change(self) -> float | None:
        """The smallest ratio change among the measurements (for worst-first ordering)."""
        changes = [m.decision.last.ratio.estimate.change for m in self.measurements
                   if m.decision is not None]
        return min(changes) if changes else None

    @property
    def renamed(self) -> bool:
        return self.baseline_id is not None and self.baseline_id != self.id

    @property
    def raised_by_noise(self) -> bool:
        """The noise floor, not the configured minimum effect, set min_effect."""
        return self.noise_floor is not None and self.min_effect == self.noise_floor


@dataclass(frozen=True)
class GateResult:
    instances: tuple[InstanceResult, ...]
    notes: tuple[HygieneNote, ...]
    same_machine: bool
    settings: GateSettings = field(default_factory=GateSettings)
    # each interval's confidence: 95%, or a share of it per planned look when the stages
    # stopped instances early (runloop/gate_early_stop.py)
    confidence: float = DEFAULT_CONFIDENCE

    @property
    def exit_code(self) -> int:
        return gate_exit_code(self)

    @property
    def compared(self) -> int:
        return sum(1 for i in self.instances if i.baseline_id is not None
                   and i.verdict is not GateVerdict.MISSING)

    def to_remeasure(self) -> list[str]:
        """Current instance ids whose stage 1 asks for a second measurement."""
        return [i.id for i in self.instances if i.stage1_verdict is not None
                and not i.remeasured and needs_remeasure(i.stage1_verdict)]

    def counts(self) -> dict[str, int]:
        counts = {v.value: 0 for v in GateVerdict}
        for inst in self.instances:
            counts[inst.verdict.value] += 1
        return counts

    def worst_first(self) -> list[InstanceResult]:
        """Most severe verdict first; within a verdict, the largest slowdown first."""
        return sorted(self.instances, key=lambda i: (
            -i.verdict.severity,
            i.worst_change if i.worst_change is not None else float("inf"), i.id))

    def slow_now(self) -> list[InstanceResult]:
        return [i for i in self.instances if i.current_verdict == "SLOW"]


def gate_exit_code(result: GateResult) -> int:
    """1 (EXIT_SLOW) when some instance REGRESSED or BROKE (or, with fail_on_slow, is SLOW
    now); else 3 (EXIT_INCONCLUSIVE) when some is INCONCLUSIVE or MISSING from this run;
    else 0. NEW instances are listed but cannot fail a gate: there is nothing to compare."""
    verdicts = {i.verdict for i in result.instances}
    if verdicts & {GateVerdict.REGRESSION, GateVerdict.BROKEN}:
        return EXIT_SLOW
    if result.settings.fail_on_slow and result.slow_now():
        return EXIT_SLOW
    if verdicts & {GateVerdict.INCONCLUSIVE, GateVerdict.MISSING}:
        return EXIT_INCONCLUSIVE
    return EXIT_OK


def _samples(measurement: Measurement, reference: str, target: str) -> RunSamples:
    """The rounds, with their worker processes where the record names them (a record from
    before worker processes has no labels: its rounds count as independent)."""
    samples = measurement.samples_s
    process: Sequence[int | str] | None = measurement.process_of_round
    if not measurement.has("process_of_round") or len(process) != len(samples[reference]):
        process = None     # a hand-edited or truncated record: do not guess which is which
    return RunSamples.of(samples[reference], samples[target], process)


def _comparisons(pairs: Sequence[Pair], reference: str, target: str
                 ) -> list[tuple[RunSamples, RunSamples]]:
    """Every measurement compared in stage 1 (both runs measured it): the material of the
    gate's per-path priors."""
    found = []
    for pair in pairs:
        if not (is_measured(pair.baseline) and is_measured(pair.current)):
            continue
        base_ms, cur_ms = pair.baseline.measurements, pair.current.measurements
        found += [(_samples(base_ms[k], reference, target), _samples(cur_ms[k], reference,
                                                                     target))
                  for k in cur_ms if k in base_ms]
    return found


def _ratio_of(inst: InstanceRecord | None) -> tuple[float, float, float] | None:
    if inst is None or not is_measured(inst):
        return None
    return tuple(next(iter(inst.measurements.values())).interval)


def _noise_floors(pair: Pair, noise: NoiseProfile | None) -> dict[str, float] | None:
    """The instance's floors per path against this baseline (pooled from `pooled_runs`
    processes); looked up by its current id, else by its baseline id (a renamed case)."""
    if noise is None:
        return None
    processes = int(pair.baseline.pooled_runs or 1)
    floors = noise.floors_for(pair.id, processes)
    return floors if floors is not None else noise.floors_for(pair.baseline_id, processes)


def _noise_note(results: Sequence[InstanceResult], noise: NoiseProfile,
                current: RunRecord) -> HygieneNote:
    """What the noise profile did to this gate, so a raised minimum effect is never silent."""
    compared = [r for r in results if r.baseline_id is not None
                and r.verdict not in (GateVerdict.MISSING, GateVerdict.NEW)]
    raised = sorted((r for r in compared if r.raised_by_noise), key=lambda r: -r.min_effect)
    without = [r for r in compared if r.noise_floor is None]
    text = (f"from {len(noise.sources)} processes ({', '.join(noise.sources)}): "
            f"min effect raised for {len(raised)} of {len(compared)} compared instances")
    if raised:
        shown = ", ".join(f"{r.id} {r.min_effect:.1%}" for r in raised[:5])
        text += f" ({shown}{', ...' if len(raised) > 5 else ''})"
    if without:
        text += (f"; {len(without)} have no figure in the profile and keep their configured "
                 f"min effect")
    here = current.environment.machine_id
    there = noise.environment.get("machine_id")
    if here and there and here != there:
        text += "; the profile was measured on another machine, whose noise may differ"
    return HygieneNote(KIND_NOISE, text)


def _decide_keys(pair: Pair, second: InstanceRecord | None, reference: str, target: str,
                 min_effect: float, machine: bool, floors: Mapping[str, float] | None,
                 priors: Mapping[str, BetweenProcessPrior],
                 confidence: float) -> list[MeasurementResult]:
    base_ms = pair.baseline.measurements
    cur_ms = pair.current.measurements
    second_ms = second.measurements if second is not None else {}
    results = []
    for key in list(cur_ms) + [k for k in base_ms if k not in cur_ms]:
        if key not in base_ms:
            results.append(MeasurementResult(key, GateVerdict.NEW,
                                             note=f"{key}: not measured in the baseline"))
            continue
        if key not in cur_ms:
            results.append(MeasurementResult(key, GateVerdict.MISSING,
                                             note=f"{key}: in the baseline, not measured now"))
            continue
        baseline = _samples(base_ms[key], reference, target)

        def judge(measurement: Measurement, stage: InstanceRecord) -> Decision:
            return decide(baseline, _samples(measurement, reference, target),
                          min_effect=min_effect, same_machine=machine, floors=floors,
                          priors=priors, confidence=_confidence_of(stage, confidence))

        first = judge(cur_ms[key], pair.current)
        again = judge(second_ms[key], second) if (key in second_ms
                                                  and needs_remeasure(first.verdict)) else None
        decision = staged(first, again)
        results.append(MeasurementResult(key, decision.verdict, decision))
    return results


def _confidence_of(stage: InstanceRecord | None, confidence: float) -> float:
    """An instance a stage stopped early (runloop/gate_early_stop.py) is judged at the confidence of
    the look that stopped it, as its record says; the others at the stage's last look's."""
    course = stage.sequential if stage is not None else None
    if course is not None and course.look_confidence is not None:
        return course.look_confidence
    return confidence


def _worst_measurement(results: Sequence[MeasurementResult]) -> MeasurementResult:
    return max(results, key=lambda m: m.verdict.severity)


def _verdict_text(inst: InstanceRecord) -> str | None:
    """The core's verdict as plain text, for InstanceResult (None: the record has none)."""
    return None if inst.verdict is None else str(inst.verdict)


def _pair_result(pair: Pair, second: InstanceRecord | None, reference: str, target: str,
                 settings: GateSettings, machine: bool,
                 priors: Mapping[str, BetweenProcessPrior], confidence: float) -> InstanceResult:
    configured = min_effect_for(pair.id, pair.current.op, settings, _case_min_effect(pair))
    floors = _noise_floors(pair, settings.noise)
    floor = None if floors is None else floors[PATH_RATIO]
    min_effect = configured if floor is None else max(configured, floor)
    common = dict(id=pair.id, op=pair.current.op, baseline_id=pair.baseline_id,
                  min_effect=min_effect, noise_floor=floor,
                  baseline_verdict=_verdict_text(pair.baseline),
                  baseline_ratio=_ratio_of(pair.baseline))
    latest = second if second is not None else pair.current
    common.update(current_verdict=_verdict_text(latest), current_ratio=_ratio_of(latest))
    base_verdict, now_verdict = pair.baseline.verdict, pair.current.verdict

    if not is_measured(pair.baseline):
        if not is_measured(pair.current):
            return InstanceResult(**common, verdict=GateVerdict.INCONCLUSIVE, decided_by="",
                                  reason=f"not measured in either run (baseline "
                                         f"{base_verdict}, now {now_verdict})")
        return InstanceResult(**common, verdict=GateVerdict.NEW, decided_by="",
                              reason=f"the baseline has no measurement (its verdict was "
                                     f"{base_verdict}: "
                                     f"{pair.baseline.error or 'no timing'})")
    if not is_measured(pair.current):
        why = pair.current.error or now_verdict
        if second is None:
            return InstanceResult(**common, verdict=GateVerdict.BROKEN, decided_by="",
                                  reason=f"measured in the baseline, now {now_verdict}: {why}",
                                  stage1_verdict=GateVerdict.BROKEN)
        if not is_measured(second):
            return InstanceResult(**common, verdict=GateVerdict.BROKEN, decided_by="",
                                  reason=f"{now_verdict} in both stages: "
                                         f"{second.error or why}",
                                  remeasured=True, stage1_verdict=GateVerdict.BROKEN)
        return InstanceResult(**common, verdict=GateVerdict.INCONCLUSIVE, decided_by="",
                              reason=f"stage 1 {now_verdict} ({why}); the "
                                     f"re-run succeeded: flaky, not compared",
                              remeasured=True, stage1_verdict=GateVerdict.BROKEN)

    measured_second = second if second is not None and is_measured(second) else None
    keys = _decide_keys(pair, measured_second, reference, target, configured, machine, floors,
                        priors, confidence)
    stage1 = max((m.decision.first.verdict if m.decision else m.verdict for m in keys),
                 key=lambda v: v.severity)
    if second is not None and not needs_remeasure(stage1):
        # The two-stage rule is fixed: a passing instance is never re-rolled.
        raise ValueError(f"{pair.id}: stage 1 was {stage1.value}; the rule takes no second "
                         f"stage")
    worst = _worst_measurement(keys)
    reason = worst.reason if len(keys) == 1 else f"{worst.key}: {worst.reason}"
    if min_effect > configured:
        reason += (f"; min effect {min_effect:.1%}, raised from {configured:.0%} to this "
                   f"instance's noise floor")
    if second is not None and measured_second is None:
        reason += (f"; the re-measurement failed ({second.verdict}: "
                   f"{second.error}), stage 1 stands")
    return InstanceResult(**common, verdict=worst.verdict, decided_by=worst.decided_by,
                          reason=reason, measurements=tuple(keys),
                          remeasured=second is not None, stage1_verdict=stage1)


def evaluate(baseline: RunRecord, current: RunRecord, *,
             remeasured: Mapping[str, InstanceRecord] | None = None,
             settings: GateSettings = GateSettings(),
             extra_notes: Sequence[HygieneNote] = (),
             confidence: float = DEFAULT_CONFIDENCE) -> GateResult:
    """The gate over a baseline and a current record. remeasured: stage-2 instance records
    by current instance id (only for ids that GateResult.to_remeasure() named; others are
    refused by the two-stage rule). extra_notes: listed first (e.g. the self-test marker).
    confidence: every interval's (a planned look's share when the stages stop early)."""
    remeasured = remeasured or {}
    reference, target = current.config.reference, current.config.target
    machine = same_machine(baseline, current)
    expected = select_records(baseline.instances, settings.ops, settings.keyword, settings.tags)
    matching = match_instances(expected, current.instances)
    # One prior per path for the whole gate, from stage 1 (stage 2 re-measures only the few
    # instances that did not pass: too few to say what is typical).
    priors = path_priors(_comparisons(matching.pairs, reference, target))
    results = [_pair_result(pair, remeasured.get(pair.id), reference, target, settings,
                            machine, priors, confidence) for pair in matching.pairs]
    results += [InstanceResult(id=inst.id, op=inst.op,
                               verdict=GateVerdict.MISSING, decided_by="", baseline_id=inst.id,
                               reason="in the baseline, not in this run",
                               baseline_verdict=_verdict_text(inst),
                               baseline_ratio=_ratio_of(inst))
                for inst in matching.missing]
    results += [InstanceResult(id=inst.id, op=inst.op, verdict=GateVerdict.NEW,
                               decided_by="", reason="no baseline for this instance",
                               current_verdict=_verdict_text(inst),
                               current_ratio=_ratio_of(inst))
                for inst in matching.new]
    noise = ([_noise_note(results, settings.noise, current)] if settings.noise is not None
             else [])
    notes = [*extra_notes, *environment_notes(baseline, current), *noise, *matching.notes()]
    return GateResult(instances=tuple(results), notes=tuple(notes), same_machine=machine,
                      settings=settings, confidence=confidence)

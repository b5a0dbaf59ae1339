"""The gate's early stop: a stage stops measuring an instance once the gate's own evidence
rules (decision.py, evaluate.py) decide it, at the end of a worker process.

A gate stage measures every instance in config.processes worker processes in turn (4 by
default, 5 passes each). After each process but the last, every instance still measured
is judged against its baseline exactly as the whole gate judges it - every path, the
noise floors, the per-path priors from the instances measured so far - and stops when
every measurement's verdict for that stage is decided: PASS or REGRESSION (stage 1's
REGRESSION still goes to stage 2, which is measured the same way). The rest go on; the
last process's look is the final evaluation.

Looking after every process would raise the gate's error rates (each look is another
chance for noise to cross a bound), so the looks are planned and the error rate is spent
over them with the sequential run's rule (verdicts/sequential.look_confidences; a union
bound): by it a stage's false REGRESSION and false PASS rates stay at or below 2.5% each
(tests/unit/test_gate_early_stop.py simulates both). Unlike `opbench run`'s equal shares,
the last look keeps most of the error rate (LAST_LOOK_SHARE): the gate's instances are
mostly unchanged code, whose between-process spread (2-8% here) rarely lets a look of 1-3
processes exclude a 10% drop, so they mostly run every process anyway, and their last
interval should be close to the fixed protocol's 95%. Each instance is judged at the
confidence of the look that stopped it (recorded in its `sequential`), the others at the
last look's.

The fixed protocol stays where the user fixed it (--rounds, --processes or --passes on the
command line) and with --fail-on-slow, whose cross-framework verdict is not what the looks
decide. A stage of one process has no look before its end.

Pure: the rule reads records; results/recorded_run.run_passes does the stopping.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Mapping, Sequence

from opbench.config import RunConfig
from opbench.config.options import RunOptions
from opbench.gate.baseline import HygieneNote
from opbench.gate.decision import GateVerdict
from opbench.gate.evaluate import GateSettings, InstanceResult, evaluate
from opbench.results.io import new_record
from opbench.results.records import InstanceRecord, RunRecord
from opbench.runloop.sequential_run import EarlyStop
from opbench.verdicts.sequential import look_confidences

__all__ = ["KIND_EARLY_STOP", "LAST_LOOK_SHARE", "confidences", "early_stop_note",
           "stage1_stop", "stage2_stop", "stops_early"]

KIND_EARLY_STOP = "early stop"

# The last look's share of a stage's 5% (two-sided): with 4 processes the looks after
# processes 1-3 are at 99.5%, the last at 96.5%. Simulated (tests/unit/test_gate_early_stop.py,
# 6% between-process SD, 600 instance-gates): identical code PASS 83% (fixed protocol 89%,
# equal shares of 98.75%: 75%), a 25% slowdown caught as often with 60% fewer processes
# (equal shares: 66% fewer); 0.85 gave PASS 84% and 54% fewer.
LAST_LOOK_SHARE = 0.7
# A stage's verdicts that more rounds are not needed for. NEW: nothing to compare with.
_DECIDED = (GateVerdict.PASS, GateVerdict.REGRESSION, GateVerdict.NEW)


def stops_early(options: Mapping[str, Any], settings: GateSettings,
                config: RunConfig) -> bool:
    """Whether this gate's stages stop instances early: not when the user fixed the protocol
    (RunOptions.fixed_protocol, on the options as given, not those taken from the
    baseline), not with --fail-on-slow, not with one process (no look before the end)."""
    given = RunOptions.from_mapping(dict(options))
    return (not given.fixed_protocol() and not settings.fail_on_slow
            and config.processes > 1 and config.timing)


def confidences(config: RunConfig) -> tuple[float, ...]:
    """Each look's confidence: one look per worker process of a stage."""
    return look_confidences(config.processes, last_share=LAST_LOOK_SHARE)


def stage1_stop(baseline: RunRecord, config: RunConfig, settings: GateSettings) -> EarlyStop:
    """Stage 1's rule: an instance stops when each of its measurements is PASS or
    REGRESSION against the baseline at the look's confidence."""
    spent = confidences(config)
    # the header of the record being measured: its config and this machine's id (whether
    # absolute times are compared), as results/recorded_run.run writes them
    header = new_record(config.as_dict(), {}, {})

    def settled(processes: int, records: Sequence[dict[str, Any]]) -> set[str]:
        current = RunRecord.from_dict({**header, "instances": list(records)})
        result = evaluate(baseline, current, settings=settings,
                          confidence=spent[processes - 1])
        return {inst.id for inst in result.instances if _stage_decided(inst, second=False)}

    return EarlyStop(settled=settled, confidences=spent)


def stage2_stop(baseline: RunRecord, stage1: RunRecord, config: RunConfig,
                settings: GateSettings) -> EarlyStop:
    """Stage 2's rule: a re-measured instance stops when each of its re-measured
    measurements is PASS or REGRESSION against the baseline (stage 1 is as it was)."""
    spent = confidences(config)

    def settled(processes: int, records: Sequence[dict[str, Any]]) -> set[str]:
        second = {r["id"]: InstanceRecord.from_dict(r) for r in records}
        result = evaluate(baseline, stage1, remeasured=second, settings=settings,
                          confidence=spent[processes - 1])
        return {inst.id for inst in result.instances
                if inst.id in second and _stage_decided(inst, second=True)}

    return EarlyStop(settled=settled, confidences=spent)


def _stage_decided(inst: InstanceResult, *, second: bool) -> bool:
    """Every measurement of the instance decided in this stage (a key measured on one side
    only, or not re-measured in stage 2 because it passed, has nothing left to decide)."""
    if inst.verdict is GateVerdict.NEW:
        return True
    if not inst.measurements:
        return False
    for m in inst.measurements:
        decision = m.decision
        if decision is None:
            continue
        stage = decision.second if second else decision.first
        if stage is not None and stage.verdict not in _DECIDED:
            return False
    return True


def early_stop_note(config: RunConfig, stage1: RunRecord,
                    stage2: Mapping[str, InstanceRecord]) -> HygieneNote:
    """What the early stop did, so a shorter run and the wider intervals are never silent."""
    looks = config.processes
    spent = confidences(config)
    parts = [f"each stage stopped an instance once decided ({looks} planned looks: "
             f"{spent[0]:.2%} after each process but the last, {spent[-1]:.2%} at the end)"]
    for name, records in (("stage 1", list(stage1.instances)),
                          ("stage 2", list(stage2.values()))):
        if not records:
            continue
        stopped = Counter(r.sequential.processes for r in records
                          if r.sequential is not None and r.sequential.stopped == "decided")
        early = ", ".join(f"{n} after {p} process{'es' if p > 1 else ''}"
                          for p, n in sorted(stopped.items()))
        whole = len(records) - sum(stopped.values())
        parts.append(f"{name}: {early or 'none early'}; {whole} of {len(records)} measured "
                     f"in all {looks} processes")
    return HygieneNote(KIND_EARLY_STOP, "; ".join(parts))

"""`opbench gate` as one library call: the run options completed from the baseline and the
gate's settings, the set-up checks that must fail before anything is measured, stage 1
measured through the front door's run path, the evaluation, stage 2 for what did not pass
(in fresh processes, or in this one when they fail), and the run recorded in the history.

No printing and no click: the front door hands in its stage-1 run path (which opens the
session and runs through runloop/recorded_run.py with its own progress and error display)
and its progress callbacks (GateHooks), and shows the GateRun it gets back. A set-up problem
is a GateSetupError whose message is fit for the user.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Sequence

from opbench.cases.case_files import CaseInstance
from opbench.config import RunConfig
from opbench.config.options import OptionError, RunOptions
from opbench.gate.baseline import (
                                   KIND_STAGE2,
                                   HygieneNote,
                                   inherit_settings,
                                   match_instances,
                                   select_records,
                                   )
from opbench.runloop.gate_early_stop import early_stop_note, stage1_stop, stage2_stop, stops_early
from opbench.gate.evaluate import GateResult, GateSettings, evaluate
from opbench.runloop.gate_fresh_stage import FreshStageError, remeasure_in_fresh_processes
from opbench.gate.settings import GATE_RUN_SETTINGS
from opbench.results.history import HistoryError, HistoryStore
from opbench.results.records import InstanceRecord, RecordedConfig, RunRecord
from opbench.runloop.sequential_run import EarlyStop
from opbench.runloop.recorded_run import (InstanceCallback, PassCallback, machine_facts,
                                          open_session, run_passes)
from opbench.runner.injection import Injection, injection_from_env
from opbench.runner.raw_records import instance_header
from opbench.verdicts.stats import DEFAULT_CONFIDENCE

__all__ = ["GateHooks", "GateRequest", "GateRun", "GateSetupError", "HistoryOutcome",
           "gate_config", "run_gate"]

# A note kind of its own: every output says the run was a self-test with an injected slowdown.
KIND_SELF_TEST = "self-test"


class GateSetupError(Exception):
    """The gate cannot run as asked (a bad option, a baseline of other frameworks or other
    cases, an unusable history database); nothing, or nothing usable, was measured."""


@dataclass(frozen=True)
class GateRequest:
    """What a front door asks of one gate."""

    baseline: RunRecord                  # the baseline record (pooled: gate/pool.py)
    baseline_path: str                   # its file(s), as messages and outputs name it
    instances: Sequence[CaseInstance]    # the selected instances to measure now
    options: Mapping[str, Any]           # RunOptions keywords as given (None: not given)
    settings: GateSettings               # how to decide (minimum effects, noise, selection)
    json_path: str                       # where this run's results record goes
    history_db: str | None = None        # record the run there once the verdict is known


def _nothing(*args: Any) -> None:
    return None


@dataclass(frozen=True)
class GateHooks:
    """What the front door does for the gate. measure(instances, config, json_path,
    injection, early_stop) -> record is stage 1: the front door's one run path
    (results.recorded_run's open_session and run, given early_stop, its progress display,
    its handling of a missing framework, an unknown API or an interrupt). The others only
    tell the user what is happening."""

    measure: Callable[[Sequence[CaseInstance], RunConfig, str, Injection | None,
                       EarlyStop | None], RunRecord]
    # the options taken from the baseline, as a user types them, before measuring
    inherited: Callable[[Sequence[str]], None] = _nothing
    # stage 2 is about to re-measure this many instances
    stage2_starting: Callable[[int], None] = _nothing
    stage2_progress: InstanceCallback = _nothing
    stage2_pass: PassCallback = _nothing
    # the fresh processes failed (the reason); stage 2 is measured in this process instead
    stage2_here: Callable[[str], None] = _nothing


@dataclass(frozen=True)
class HistoryOutcome:
    """What became of --history-db: recorded (run id, or already there) or why not."""

    recorded: bool
    message: str


@dataclass(frozen=True)
class GateRun:
    result: GateResult
    record: RunRecord                          # stage 1's results record
    remeasured: Mapping[str, InstanceRecord]   # stage 2's instance records by id
    config: RunConfig
    inherited: tuple[str, ...]                 # options taken from the baseline
    history: HistoryOutcome | None = None      # None: no history database asked for


def gate_config(options: Mapping[str, Any],
                baseline_config: RecordedConfig) -> tuple[RunConfig, list[str]]:
    """The RunConfig a gate measures with: the options given, then the baseline's for those
    left out (baseline.inherit_settings), then the gate's run settings (GATE_RUN_SETTINGS) for
    what neither set. Also the inherited options, as a user types them. Raises
    GateSetupError naming a bad option."""
    given, inherited = inherit_settings(options, baseline_config)
    try:
        return RunOptions.from_mapping(GATE_RUN_SETTINGS.fill(given)).to_config(), inherited
    except OptionError as exc:
        raise GateSetupError(str(exc)) from None


def run_gate(request: GateRequest, hooks: GateHooks) -> GateRun:
    """Measure request.instances like the baseline was measured and decide, in two stages;
    record the run in the history database (after the verdict: a failure there is reported,
    never a change of the verdict). Raises GateSetupError before measuring when the gate
    cannot run as asked."""
    b_cfg = request.baseline.config
    config, inherited = gate_config(request.options, b_cfg)
    if inherited:
        hooks.inherited(inherited)
    if (b_cfg.reference, b_cfg.target) != (config.reference, config.target):
        raise GateSetupError(
            f"{request.baseline_path} compares {b_cfg.reference} with {b_cfg.target}; this "
            f"run compares {config.reference} with {config.target}")
    try:
        injection = injection_from_env()
    except ValueError as exc:
        raise GateSetupError(str(exc)) from None
    if request.history_db and not injection:   # a self-test's run is never recorded (below)
        _check_history(request.history_db)     # before measuring: a bad database costs no run
    _check_baseline_covers(request, config)

    # instances stop once the gate's rules decide them (runloop/gate_early_stop.py), each look's
    # intervals at its share of the error rate, the final evaluation's too
    early = (stage1_stop(request.baseline, config, request.settings)
             if stops_early(request.options, request.settings, config) else None)
    confidence = early.confidences[-1] if early is not None else DEFAULT_CONFIDENCE
    record = hooks.measure(request.instances, config, request.json_path, injection, early)
    extra = (HygieneNote(KIND_SELF_TEST, injection.describe()),) if injection else ()
    result = evaluate(request.baseline, record, settings=request.settings, extra_notes=extra,
                      confidence=confidence)
    if result.compared == 0:
        raise GateSetupError(
            f"{request.baseline_path} shares no instance with this run (baseline ids: "
            f"{_first_ids(request.baseline)} ...); a gate needs a baseline of the same cases")
    second: dict[str, InstanceRecord] = {}
    ids = result.to_remeasure()
    if ids:
        hooks.stage2_starting(len(ids))
        second_stop = (stage2_stop(request.baseline, record, config, request.settings)
                       if early is not None else None)
        second, stage2_notes = _remeasure(request.instances, ids, config, injection, hooks,
                                          second_stop)
        extra += stage2_notes
        result = evaluate(request.baseline, record, remeasured=second,
                          settings=request.settings, extra_notes=extra, confidence=confidence)
    if early is not None:     # after the run's own notes: how it was measured, not a warning
        result = replace(result, notes=result.notes + (early_stop_note(config, record,
                                                                       second),))
    history = None
    if request.history_db:
        history = _record_history(request.history_db, record, request.json_path,
                                  injection is not None)
    return GateRun(result=result, record=record, remeasured=second, config=config,
                   inherited=tuple(inherited), history=history)


def _remeasure(instances: Sequence[CaseInstance], ids: Sequence[str], config: RunConfig,
               injection: Injection | None, hooks: GateHooks, early_stop: EarlyStop | None
               ) -> tuple[dict[str, InstanceRecord], tuple[HygieneNote, ...]]:
    """Stage 2 in fresh worker processes (runloop/gate_fresh_stage.py says why), each instance until
    early_stop's rule decides it, or, when they fail, in this process (one process: no
    look before its end), with a note saying so: (records by id, extra notes)."""
    try:
        return remeasure_in_fresh_processes(
            instances, ids, config, on_progress=hooks.stage2_progress,
            on_pass=hooks.stage2_pass, early_stop=early_stop), ()
    except FreshStageError as exc:
        hooks.stage2_here(str(exc))
        note = HygieneNote(KIND_STAGE2, f"re-measured in the first stage's processes, which "
                                      f"share their offsets, because the fresh processes "
                                      f"failed: {exc}")
        return _remeasure_here(instances, ids, config, injection, hooks), (note,)


def _remeasure_here(instances: Sequence[CaseInstance], ids: Sequence[str],
                    config: RunConfig, injection: Injection | None,
                    hooks: GateHooks) -> dict[str, InstanceRecord]:
    """Stage 2 in this process: the instances that did not pass, measured again the same
    way (all passes; a self-test's injection applies here too)."""
    session = open_session(replace(config, processes=1), injection=injection)
    try:
        machine_facts(session, session.config)     # the floors: from the cache, as a run's
        wanted = set(ids)
        subset = [inst for inst in instances if inst.id in wanted]
        records = run_passes(session, subset, [], on_progress=hooks.stage2_progress,
                             on_pass=hooks.stage2_pass)
    finally:
        session.close()
    return {inst.id: InstanceRecord.from_dict(record) for inst, record in zip(subset, records)}


def _check_history(db_path: str) -> None:
    """Open the history database once before measuring: a garbage file, a newer schema or
    a lock held past LOCK_WAIT_S is a set-up error while nothing is lost yet."""
    try:
        HistoryStore(db_path).close()
    except HistoryError as exc:
        raise GateSetupError(str(exc)) from None


def _check_baseline_covers(request: GateRequest, config: RunConfig) -> None:
    """A baseline of other cases is refused before measuring (it used to be found only
    after the whole run): same rule as the gate's, by id or by what the instance is."""
    settings = request.settings
    current = [InstanceRecord.from_dict(instance_header(inst, config))
               for inst in request.instances]
    selected = select_records(request.baseline.instances, settings.ops, settings.keyword,
                              settings.tags)
    if not match_instances(selected, current).pairs:
        raise GateSetupError(
            f"{request.baseline_path} shares no instance with the selected cases (baseline "
            f"ids: {_first_ids(request.baseline)} ...); a gate needs a baseline of the same "
            f"cases")


def _first_ids(record: RunRecord) -> str:
    """The first few instance ids of a record, for a message that says what it holds."""
    return ", ".join(inst.id for inst in record.instances[:5])


def _record_history(db_path: str, record: RunRecord, json_path: str | None,
                    injected: bool) -> HistoryOutcome:
    """Recording comes after the verdict is known: a failure is a warning, never a change
    of the gate's exit code (a locked database used to turn a pass into exit 1)."""
    if injected:
        return HistoryOutcome(False, "history: not recording a self-test run with an "
                                     "injected slowdown")
    try:
        with HistoryStore(db_path) as store:
            run_id, added = store.record_run(record, source=json_path, label="gate")
    except HistoryError as exc:
        return HistoryOutcome(False, f"history: not recorded: {exc}")
    return HistoryOutcome(True, f"history: run #{run_id} "
                                f"{'recorded in' if added else 'already in'} {db_path}")

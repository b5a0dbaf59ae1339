"""The `model` object `opbench model --json` writes (schema: opbench/schema/model.schema.json).

Times are seconds. `traced_s` and `projected_s` cover the measured region: the steady
steps of the captured run. Per API and per signature rows give per-call times in context
(inside the replay) and `lost_s = calls x (target_s - reference_s)` with its interval.
"""
from __future__ import annotations

import json
import math
from importlib import resources
from pathlib import Path
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Mapping

from opbench.model.autograd_function import straight_through_note
from opbench.model.recompute import recompute_note
from opbench.model.replay.trainable import is_differentiation
from opbench.model.impact.mode_match import MODE_FACTOR
from opbench.model.impact.project import modes_apart
from opbench.model.json_records import (PLAIN, Codec, JsonRecordError, by_name, each,
                                        from_object, json_field, object_of, optional,
                                        tuple_of)

if TYPE_CHECKING:      # the record reads the impact; nothing here runs it
    from opbench.model.impact.alone_cases import IsolatedFinding
    from opbench.model.impact.pipeline import ModelImpact
    from opbench.model.program import Program

__all__ = ["MODEL_FORMAT", "impact_json", "SuggestionRow", "model_schema", "ModelRecord", "LostRow",
           "Projection", "ModelRecordError", "is_model_file", "load_model_record"]

# Version of the `model` object: bump and say what changed when its shape changes.
#   1  first format
#   (1) `suggestions` (opbench model --suggest) added: absent when not asked for
MODEL_FORMAT = 1


def model_schema() -> dict[str, Any]:
    text = resources.files("opbench").joinpath("schema/model.schema.json").read_text()
    return json.loads(text)


def _num(value: float | None) -> float | None:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return None
    return float(value)


def _row(row: Any, other: str, reference: str) -> dict[str, Any]:
    return {
        "api": row.api, "mapped_api": row.mapped_api, "calls": row.calls,
        "reference_s": _num(row.reference_s), "target_s": _num(row.target_s),
        "ratio": _num(row.ratio), "ratio_ci": [_num(row.ratio_low), _num(row.ratio_high)],
        "lost_s": _num(row.lost_s), "lost_ci": [_num(row.lost_low), _num(row.lost_high)],
    }


def _isolated(found: IsolatedFinding | None) -> dict[str, Any]:
    if found is None:
        return {}
    alone = found.alone
    return {"isolated_ratio": _num(alone.ratio),
            "isolated_ratio_ci": [_num(v) for v in alone.ratio_ci] if alone.ratio_ci
            else None,
            "verdict": alone.verdict, "cause": found.cause or None,
            "cause_detail": found.why or alone.reason or None,
            "context_factor": {k: _num(v) for k, v in found.context.items()}}


def _api_isolated(impact: ModelImpact, api_row: Any) -> dict[str, Any]:
    """An API row takes its heaviest measured signature's isolated figures."""
    for sig in impact.signatures:                  # sorted by time lost
        if sig.api == api_row.api and sig.mapped_api == api_row.mapped_api:
            found = impact.isolated.get((sig.api, sig.signature, sig.mapped_api))
            if found is not None and found.alone.ratio is not None:
                return {**_isolated(found), "isolated_signature": sig.signature}
    for sig in impact.signatures:
        if sig.api == api_row.api and sig.mapped_api == api_row.mapped_api:
            found = impact.isolated.get((sig.api, sig.signature, sig.mapped_api))
            if found is not None:
                return {"cause": found.cause or None,
                        "cause_detail": found.why or found.alone.reason or None}
    return {}


def _speed_modes(impact: ModelImpact) -> dict[str, Any] | None:
    match = impact.mode_match
    if match is None:
        return None
    return {"capture_probe_s": match.capture_probe_s,
            "replay_probe_s": list(match.replay_probe_s),
            "rounds_in_capture_mode": match.rounds_in_mode, "rounds": match.rounds,
            "mode_factor": MODE_FACTOR,
            "self_check_in_capture_mode": _num(impact.self_check_in_capture_mode)}


def _training(impact: ModelImpact) -> dict[str, Any] | None:
    backward = [c.index for c in impact.step.calls if c.backward]
    if not backward:
        return None
    traced = impact.steps * sum(impact.step.traced_ns[i] for i in backward) / 1e9
    covered = all(impact.covered[i] for i in backward)
    return {"backward_calls": len(backward) * impact.steps, "backward_traced_s": traced,
            "backward_share": traced / impact.traced_s if impact.traced_s else 0.0,
            "covered": covered,
            "how": {name: _backward_how(impact.framework_of(name))
                    for name in (impact.traced_framework, impact.other)}}


def _backward_how(framework: str) -> str:
    """MindSpore has no backward call: either side of the pair differentiates its forward."""
    if framework == "mindspore":
        return "value_and_grad over the replayed forward, less the forward's in-context time"
    return "loss.backward() on the replayed forward"


def _side_json(impact: ModelImpact, name: str) -> dict[str, Any]:
    side = impact.sides.get(name)
    return {"framework": impact.framework_of(name),
            "python": side.python if side else None,
            "version": impact.versions.get(name),
            "label": impact.described(name)}


def impact_json(impact: ModelImpact) -> dict[str, Any]:
    program, step = impact.program, impact.step
    projected = {}
    for framework in (impact.reference, impact.target):
        e = impact.projected_s(framework)
        if e is not None:
            projected[framework] = {**e.as_json(),
                                    "launch": impact.launch.get(framework),
                                    "scale": _num(impact.scale.get(framework))}
    region = impact.region
    return {
        "format": MODEL_FORMAT,
        "command": impact.command,
        "interpreter": impact.interpreter,
        "reference": impact.reference,
        "target": impact.target,
        "sides": {name: _side_json(impact, name) for name in (impact.reference, impact.target)},
        "traced_framework": impact.traced_framework,
        "traced_version": program.version,
        "threads": impact.threads,
        "traced_s": impact.traced_s,
        "covered_traced_s": impact.covered_traced_s,
        "projected_s": projected,
        "ratio": {k: _num(v) if isinstance(v, float) else v
                  for k, v in impact.step_ratio.items()},
        "self_check": _num(impact.self_check),
        "own_traced_s": impact.own_traced_s(impact.traced_framework),
        "speed_modes": _speed_modes(impact),
        "replayed_calls_s": {fw: s * impact.steps for fw, s in impact.call_sum_s.items()},
        "coverage": impact.coverage,
        "stand_in_share": dict(impact.stand_in_share),
        "region": {"rule": region.rule, "steps": impact.steps,
                   "calls_per_step": len(step.calls),
                   "excluded_calls": region.excluded_calls,
                   "excluded_s": region.excluded_ns / 1e9,
                   "note": "; ".join(n for n in (region.note, program.ended_early,
                                                  _light_note(program),
                                                  _function_note(step),
                                                  _recompute_note(step)) if n),
                   "traced_base": program.traced_base},
        "script": {"status": program.script_status, "error": program.script_error,
                   "captured_calls": len(program.calls),
                   "dropped_calls": program.dropped_calls},
        "apis": [{**_row(r, impact.other, impact.reference), "share": r.share,
                  "signatures": r.signatures, **_api_isolated(impact, r)}
                 for r in impact.apis],
        "signatures": [{**_row(r, impact.other, impact.reference),
                        "signature": r.signature, "traced_s": r.traced_s,
                        **_isolated(impact.isolated.get((r.api, r.signature, r.mapped_api)))}
                       for r in impact.signatures],
        "isolated": {"share": impact.isolated_share, "seconds": impact.isolated_s,
                     **({"note": impact.isolated_note} if impact.isolated_note else {})},
        "training": _training(impact),
        "not_covered": impact.uncovered,
        "mismatches": impact.mismatches,
        "errors": impact.errors,
        "measuring_s": impact.measuring_s,
    }


def _function_note(step: Any) -> str | None:
    """The custom autograd.Functions the step replays as straight-through stand-ins
    (model/autograd_function.py), or None."""
    return straight_through_note(c.function.name for c in step.calls
                                 if c.function is not None)


def _recompute_note(step: Any) -> str | None:
    """The checkpointed calls the step's backwards run again (model/recompute.py), or
    None."""
    return recompute_note(step.calls, is_differentiation)


def _light_note(program: Program) -> str:
    """Why the traced times are the captured run's own, not the light timing pass's
    (model/capture/light.py); "" where the light pass's are used (or a capture file from
    before the pass says nothing)."""
    if program.light_ns or not program.light_note:
        return ""
    return f"traced times as observed under the capture: {program.light_note}"


# -- reading: the typed record the views take ---------------------------------------------
# Each record below is read from its JSON object by its fields (model/json_records.py): a
# field from the key of its name, through the codec its json_field names; absent keys take
# the field's default (older files, rows not measured alone).

def _object_or_empty(cls: type) -> Codec:
    """A nested object; null reads as the record of no keys (its defaults)."""
    return Codec(lambda value, where: from_object(cls, value or {}, where),
                 object_of(cls).encode)


_PAIR = tuple_of()
_BY_NAME = by_name()


@dataclass(frozen=True)
class Projection:
    estimate: float
    ci_low: float
    ci_high: float
    processes: int = 0
    method: str = ""
    launch: str | None = None
    scale: float | None = None
    process_medians: tuple[float, ...] = json_field(codec=tuple_of(), default=())

    def modes_apart(self) -> float:
        """Slowest process median over the fastest (1 for one process)."""
        return modes_apart(self.process_medians)


@dataclass(frozen=True)
class LostRow:
    """A row per API (or per signature): per-call times in context, ratio, time lost; and
    where it was measured alone, the isolated figures and the cause."""
    api: str
    mapped_api: str
    calls: int
    reference_s: float | None
    target_s: float | None
    ratio: float | None
    ratio_ci: tuple[float | None, float | None] = json_field(codec=_PAIR)
    lost_s: float | None
    lost_ci: tuple[float | None, float | None] = json_field(codec=_PAIR)
    share: float = 0.0
    signatures: int = 0
    signature: str = ""
    traced_s: float = 0.0
    isolated_ratio: float | None = None
    isolated_ratio_ci: tuple[float | None, float | None] | None = json_field(
        codec=optional(_PAIR), default=None)
    verdict: str | None = None
    cause: str | None = None
    cause_detail: str | None = None
    context_factor: Mapping[str, float | None] = json_field(codec=_BY_NAME,
                                                            default_factory=dict)
    isolated_signature: str = ""


@dataclass(frozen=True)
class RegionInfo:
    rule: str
    steps: int
    calls_per_step: int = 0
    excluded_calls: int = 0
    excluded_s: float = 0.0
    note: str = ""
    # which run's durations the traced times are (model/program.py Program.traced_base):
    # "light" (the light timing pass), "observed" (the captured run; a record before it)
    traced_base: str = "observed"


@dataclass(frozen=True)
class ScriptInfo:
    status: int = 0
    error: str | None = None
    captured_calls: int = 0
    dropped_calls: int = 0


@dataclass(frozen=True)
class NotCovered:
    api: str
    reason: str
    calls: int
    traced_s: float
    share: float


@dataclass(frozen=True)
class Mismatch:
    call: int
    api: str
    mapped_api: str
    detail: str


@dataclass(frozen=True)
class Training:
    backward_calls: int
    backward_traced_s: float
    backward_share: float
    covered: bool
    how: Mapping[str, str] = json_field(codec=_BY_NAME, default_factory=dict)


@dataclass(frozen=True)
class IsolatedInfo:
    share: float = 0.0
    seconds: float = 0.0
    note: str = ""             # why nothing was measured alone, when it was not


@dataclass(frozen=True)
class SpeedModes:
    """MindSpore traced: its speed probe in the capture and each replay round
    (impact/mode_match.py)."""
    capture_probe_s: float
    replay_probe_s: tuple[float, ...] = json_field(codec=tuple_of(), default=())
    rounds_in_capture_mode: int = 0
    rounds: int = 0
    mode_factor: float = 0.0
    self_check_in_capture_mode: float | None = None


@dataclass(frozen=True)
class SideInfo:
    """A side as the run found it: `label` names it for a reader (`mindspore 2.9.0
    (envs/ms29)`); python None is the script's interpreter."""
    framework: str
    python: str | None = None
    version: str | None = None
    label: str = ""


@dataclass(frozen=True)
class StepRatio:
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    method: str = ""
    too_few_rounds: bool = False


@dataclass(frozen=True)
class SuggestionRow:
    """One swap `opbench model --suggest` tried (model/affinity/): where, what, and what
    it saves per step (estimate and 95% interval; None when it was not timed)."""
    file: str
    start_line: int
    end_line: int
    api_type: str
    api: str                   # what is there now
    affinity_api: str          # what replaces it
    family: str
    replacement: str           # the replacement as code ("" where it is no one call)
    calls: int                 # calls replaced per step
    verdict: str               # faster | no measurable gain here | slower | outputs differ
                               # | did not run
    outputs_equal: bool | None = None
    max_difference: float | None = None   # outputs' largest relative difference
    # estimate, ci_low, ci_high (per step); an empty object reads as None
    saving_s: Mapping[str, float] | None = json_field(
        codec=Codec(lambda value, where: dict(value) if value else None, PLAIN.encode),
        default=None)
    share: float | None = None            # of the step
    time_now_s: float | None = None       # the step now and after the swap
    time_after_s: float | None = None
    detail: str = ""
    diff: str = ""             # a unified diff of the script with the swap, where mechanical

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "SuggestionRow":
        return from_object(cls, data)


@dataclass(frozen=True)
class ModelRecord:
    """The `model` object, typed: what every view of a model run reads."""
    reference: str
    target: str
    traced_framework: str
    traced_s: float
    coverage: float
    projected_s: Mapping[str, Projection] = json_field(codec=by_name(object_of(Projection)))
    apis: tuple[LostRow, ...] = json_field(codec=each(LostRow))
    command: tuple[str, ...] = json_field(codec=tuple_of(), default=())
    interpreter: str = ""
    traced_version: str = ""
    threads: int | None = None
    covered_traced_s: float = 0.0
    replayed_calls_s: Mapping[str, float] = field(default_factory=dict)
    # per framework: the share of its replayed step that stand-ins took
    stand_in_share: Mapping[str, float] = field(default_factory=dict)
    ratio: StepRatio = json_field(codec=_object_or_empty(StepRatio), default=StepRatio())
    self_check: float | None = None
    # the self-check's base: traced time of the calls the traced framework replayed as
    # themselves (None in records written before it was kept)
    own_traced_s: float | None = None
    # null: no speed probe (torch, graph mode, records written before it)
    speed_modes: SpeedModes | None = json_field(
        codec=Codec(lambda value, where: from_object(SpeedModes, value, where) if value
                    else None, object_of(SpeedModes).encode), default=None)
    region: RegionInfo = json_field(codec=_object_or_empty(RegionInfo),
                                    default=RegionInfo("automatic", 0))
    script: ScriptInfo = json_field(codec=_object_or_empty(ScriptInfo), default=ScriptInfo())
    signatures: tuple[LostRow, ...] = json_field(codec=each(LostRow), default=())
    not_covered: tuple[NotCovered, ...] = json_field(codec=each(NotCovered), default=())
    mismatches: tuple[Mismatch, ...] = json_field(codec=each(Mismatch), default=())
    errors: tuple[str, ...] = json_field(codec=tuple_of(), default=())
    measuring_s: float = 0.0
    isolated: IsolatedInfo = json_field(codec=_object_or_empty(IsolatedInfo),
                                        default=IsolatedInfo())
    # null or {}: not a training step
    training: Training | None = json_field(
        codec=Codec(lambda value, where: from_object(Training, value, where) if value
                    else None, object_of(Training).encode), default=None)
    suggestions: tuple[SuggestionRow, ...] = json_field(codec=each(SuggestionRow),
                                                        default=())
    # each side by name (reference, target); absent in files written before sides: the
    # names are the frameworks
    sides: Mapping[str, SideInfo] = json_field(codec=by_name(object_of(SideInfo)),
                                               default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ModelRecord":
        """The object under the file's `model` key (or the file's whole object);
        JsonRecordError (a ValueError) names a key that does not fit."""
        return from_object(cls, data.get("model", data))

    def described(self, name: str) -> str:
        """A side for a reader: its label (framework, version, interpreter), else its
        name."""
        side = self.sides.get(name)
        return side.label if side and side.label else name

    @property
    def one_framework(self) -> bool:
        """Both sides run one framework (two builds of it)."""
        frameworks = {s.framework for s in self.sides.values()}
        return len(self.sides) == 2 and len(frameworks) == 1

    @property
    def other(self) -> str:
        """The framework the script did not run: the projected one."""
        return self.target if self.traced_framework == self.reference else self.reference



class ModelRecordError(ValueError):
    """A model record file that cannot be read: the message names the file and the key."""


def _read_json(path: str | Path) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def is_model_file(path: str | Path) -> bool:
    """Whether the file holds what `opbench model --json` writes (a `model` object and no
    results file's schema_version); a file that is not JSON is not one."""
    data = _read_json(path)
    return isinstance(data, dict) and "model" in data and "schema_version" not in data


def load_model_record(path: str | Path) -> ModelRecord:
    """Read and check a saved model record against opbench/schema/model.schema.json."""
    import jsonschema      # local: only readers pay for the import

    data = _read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        raise ModelRecordError(f"{path}: not a model record (no `model` object)")
    try:
        jsonschema.Draft202012Validator(model_schema()).validate(data)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise ModelRecordError(f"{path}: invalid model record at {where}: {exc.message} "
                               f"(written by another opbench version? `opbench schema model` "
                               f"prints the format this one reads)") from None
    try:
        return ModelRecord.from_json(data)
    except JsonRecordError as exc:
        raise ModelRecordError(f"{path}: invalid model record: {exc}") from None

"""Baseline hygiene: which instances of a baseline run and a current run belong together,
and everything about the two runs that makes the comparison weaker than it looks.

Pure: reads two results records (RunRecords, opbench/results/records.py), returns frozen
objects.
Nothing here passes silently: an instance missing on either side, an id that looks renamed,
another machine, another framework version or another run configuration each becomes a
HygieneNote that every gate output lists.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from opbench.cases.selection import Selection
from opbench.config.options import OPTIONS, OptionSpec
from opbench.results.io import MIXED_MACHINES_PREFIX
from opbench.results.records import InstanceRecord, RecordedConfig, RunRecord, as_plain

__all__ = [
    "HygieneNote",
    "Matching",
    "Pair",
    "environment_notes",
    "instance_signature",
    "is_measured",
    "match_instances",
    "same_machine",
    "select_records",
    "inherit_settings",
]

# Note kinds, in the order reports list them.
KIND_SETUP = "setup"              # the baseline cannot be used as is (e.g. incomplete)
KIND_POOLED = "pooled baseline"   # several baseline runs pooled (gate/pool.py)
KIND_MACHINE = "machine"
KIND_VERSION = "framework version"
KIND_CONFIG = "config"
KIND_MISSING = "missing"
KIND_RENAMED = "renamed"
KIND_NEW = "new"
KIND_STAGE2 = "stage 2"           # the second stage could not run in a fresh process
KIND_NOISE = "noise floor"        # minimum effects raised by a noise profile (gate/noise.py)
NOTE_ORDER = (KIND_SETUP, KIND_STAGE2, KIND_POOLED, KIND_MACHINE, KIND_VERSION, KIND_CONFIG,
              KIND_NOISE, KIND_MISSING, KIND_RENAMED, KIND_NEW)

# Run settings whose difference changes what a sample means. A different threshold does
# not (it only moves the cross-framework verdict), so it is not listed.
_COMPARED_CONFIG = ("device", "threads", "modes", "backward")
# Compared with the value an older results file implies when it lacks the key: it was
# measured with queued launches in one pass, in one process (RecordedConfig's defaults, the
# options table's recorded_default, by which the gate inherits them too).
_COMPARED_CONFIG_DEFAULTS = ("launch", "passes", "processes")
_COMPARED_SETTINGS = ("min_sample_time_s", "warmup_time_s")


@dataclass(frozen=True)
class HygieneNote:
    kind: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "message": self.message}


@dataclass(frozen=True)
class Pair:
    """A current instance and its baseline counterpart (ids differ when renamed)."""

    baseline: InstanceRecord
    current: InstanceRecord

    @property
    def id(self) -> str:
        return self.current.id

    @property
    def baseline_id(self) -> str:
        return self.baseline.id

    @property
    def renamed(self) -> bool:
        return self.baseline_id != self.id


@dataclass(frozen=True)
class Matching:
    pairs: tuple[Pair, ...]
    missing: tuple[InstanceRecord, ...]   # baseline instances with no current counterpart
    new: tuple[InstanceRecord, ...]       # current instances with no baseline counterpart
    ambiguous_renames: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]

    def notes(self) -> list[HygieneNote]:
        notes = [HygieneNote(KIND_MISSING, f"'{inst.id}' is in the baseline but not in this "
                             f"run (removed, renamed or deselected?)") for inst in self.missing]
        notes += [HygieneNote(KIND_RENAMED, f"'{p.baseline_id}' -> '{p.id}': same operator, "
                              f"APIs and inputs under a new id; compared as one case")
                  for p in self.pairs if p.renamed]
        notes += [HygieneNote(KIND_RENAMED, f"possible rename, not paired (ambiguous): "
                              f"{', '.join(old)} -> {', '.join(new)}")
                  for old, new in self.ambiguous_renames]
        notes += [HygieneNote(KIND_NEW, f"'{inst.id}' has no baseline (new case?)")
                  for inst in self.new]
        return notes


def is_measured(instance: InstanceRecord) -> bool:
    """The instance has timing measurements (not ERROR, MISMATCH or correctness-only)."""
    return instance.measured


def instance_signature(instance: InstanceRecord) -> str:
    """What an instance *is*, independent of its id: operator, every framework's API and
    the inputs (names, shapes, dtypes, distributions). Two instances with the same
    signature time the same work, which is how a renamed id is recognised."""
    inputs = [[s.name, list(s.shape), s.dtype, s.dist] for s in instance.inputs]
    basis = {"op": instance.op, "apis": dict(sorted(instance.apis.items())),
             "inputs": inputs, "params": as_plain(instance.params),
             "backward": instance.backward}
    return json.dumps(basis, sort_keys=True, default=str)


def select_records(instances: Iterable[InstanceRecord], ops: Sequence[str] = (),
                   keyword: str | None = None,
                   tags: Sequence[str] = ()) -> list[InstanceRecord]:
    """Baseline instances the current selection would have run: the same -k / --op / --tag
    filters as opbench.cases.select, applied to records. Without it, gating a subset of the
    cases would list every other baseline instance as missing."""
    selection = Selection(keyword, tuple(ops or ()), tuple(tags or ()))
    return [inst for inst in instances
            if selection.matches(inst.id, inst.op, inst.tags, inst.file)]


def match_instances(baseline: Sequence[InstanceRecord],
                    current: Sequence[InstanceRecord]) -> Matching:
    """Pair instances by id; then pair the leftovers whose signature matches exactly one on
    each side (a rename). Leftovers sharing a signature several ways are not guessed at:
    they stay missing/new and are listed as an ambiguous rename."""
    by_id = {inst.id: inst for inst in baseline}
    current_ids = {inst.id for inst in current}
    pairs = [Pair(by_id[inst.id], inst) for inst in current if inst.id in by_id]
    left_baseline = [inst for inst in baseline if inst.id not in current_ids]
    left_current = [inst for inst in current if inst.id not in by_id]

    old_by_sig: dict[str, list[InstanceRecord]] = defaultdict(list)
    new_by_sig: dict[str, list[InstanceRecord]] = defaultdict(list)
    for inst in left_baseline:
        old_by_sig[instance_signature(inst)].append(inst)
    for inst in left_current:
        new_by_sig[instance_signature(inst)].append(inst)
    renamed_old: set[str] = set()
    renamed_new: set[str] = set()
    ambiguous = []
    for sig, olds in old_by_sig.items():
        news = new_by_sig.get(sig, [])
        if len(olds) == 1 and len(news) == 1:
            pairs.append(Pair(olds[0], news[0]))
            renamed_old.add(olds[0].id)
            renamed_new.add(news[0].id)
        elif olds and news:
            ambiguous.append((tuple(i.id for i in olds), tuple(i.id for i in news)))
    order = {inst.id: i for i, inst in enumerate(current)}
    pairs.sort(key=lambda p: order[p.id])
    return Matching(
        pairs=tuple(pairs),
        missing=tuple(i for i in left_baseline if i.id not in renamed_old),
        new=tuple(i for i in left_current if i.id not in renamed_new),
        ambiguous_renames=tuple(ambiguous))


def same_machine(baseline: RunRecord, current: RunRecord) -> bool:
    """Equal machine ids (host, CPU model, core count): absolute times are comparable. A
    record merged from several machines (merge.py) is never on the same machine as another
    (its instances may have been measured on other machines than the other record's)."""
    b, c = baseline.environment.machine_id, current.environment.machine_id
    if b is not None and b.startswith(MIXED_MACHINES_PREFIX):
        return False
    return b is not None and b == c


def _framework_notes(baseline: RunRecord, current: RunRecord) -> list[HygieneNote]:
    """A note per framework whose code may differ between the runs: another version, or
    another build of one version (records name `frameworks.*.build` where the framework
    exposes it), or a build named by one run only, which cannot be told apart."""
    notes = []
    b_named, c_named = baseline.framework_builds(), current.framework_builds()
    differing = baseline.other_builds(current)
    for name in sorted(set(b_named) | set(c_named)):
        b_info, c_info = baseline.frameworks.get(name), current.frameworks.get(name)
        why = (" (the reference moved: a ratio change may be the reference's, not the "
               "target's)" if name == current.config.reference else "")
        if name in differing:     # (None: the run did not have the framework)
            notes.append(HygieneNote(KIND_VERSION, f"{name} {b_named.get(name)} in the "
                                                   f"baseline, {c_named.get(name)} now{why}"))
        elif bool(b_info.build) != bool(c_info.build):
            notes.append(HygieneNote(KIND_VERSION, (
                f"{name} {b_named[name]} in the baseline, {c_named[name]} now: one run names "
                f"no build, so whether the builds differ is unknown{why}")))
    return notes


def _compared(prefix: str, key: str, baseline: Any, current: Any) -> HygieneNote | None:
    """A note when the two runs recorded `key` of their config (or its settings)
    differently; getattr, since the keys compared are named in the tables above."""
    mine, theirs = as_plain(getattr(baseline, key)), as_plain(getattr(current, key))
    if mine == theirs:
        return None
    return HygieneNote(KIND_CONFIG, f"{prefix}{key}: {mine!r} in the baseline, {theirs!r} now")


def environment_notes(baseline: RunRecord, current: RunRecord) -> list[HygieneNote]:
    """Differences between the runs that weaken the comparison, each spelled out."""
    notes: list[HygieneNote] = []
    if not baseline.complete or baseline.interrupted:
        notes.append(HygieneNote(KIND_SETUP, "the baseline run did not complete (interrupted "
                                 "or crashed): instances it lacks are listed as missing"))
    pooled_from = baseline.pooled_from
    if len(pooled_from) > 1:
        notes.append(HygieneNote(KIND_POOLED, (
            f"the baseline pools {len(pooled_from)} runs ({', '.join(pooled_from)}): each "
            f"instance's rounds come from every run that measured it")))
    b_env, c_env = baseline.environment, current.environment
    if not same_machine(baseline, current):
        notes.append(HygieneNote(KIND_MACHINE, (
            f"different machine: baseline {b_env.machine_id} "
            f"({b_env.cpu_model}, {b_env.cpu_count} cpus), current "
            f"{c_env.machine_id} ({c_env.cpu_model}, {c_env.cpu_count} "
            f"cpus); only ratios are compared, absolute times are not")))
    b_cfg, c_cfg = baseline.config, current.config
    notes += _framework_notes(baseline, current)
    # compared only when both runs recorded them; the defaults stand in for older files
    compared = [key for key in _COMPARED_CONFIG if b_cfg.has(key) and c_cfg.has(key)]
    notes += [n for key in (*compared, *_COMPARED_CONFIG_DEFAULTS)
              if (n := _compared("", key, b_cfg, c_cfg)) is not None]
    b_set, c_set = b_cfg.settings, c_cfg.settings
    notes += [n for key in _COMPARED_SETTINGS if b_set.has(key) and c_set.has(key)
              and (n := _compared("settings.", key, b_set, c_set)) is not None]
    b_rounds, c_rounds = b_set.rounds, c_set.rounds
    if b_rounds is not None and c_rounds is not None and b_rounds < c_rounds:
        notes.append(HygieneNote(KIND_CONFIG, (
            f"the baseline has {b_rounds} rounds per measurement, this run {c_rounds}: the "
            f"interval of a change is only as narrow as the smaller side allows, so expect "
            f"more INCONCLUSIVE (record the baseline with --rounds {c_rounds})")))
    return notes


def inherit_settings(options: Mapping[str, Any], baseline_config: RecordedConfig,
                     table: Sequence[OptionSpec] = OPTIONS) -> tuple[dict[str, Any], list[str]]:
    """The gate measures the way its baseline was measured: every run option the user left
    unset (None; a flag: not given) is taken from the baseline's config, for each row of the
    options table that is `inherited` and that the record keeps (the row's `recorded_as`):
    mode, threads, launch, passes, processes, rounds, sample time, budget, and the --no-X
    flags when the baseline ran without X. Options the user set win and are compared like any
    other difference (environment_notes).

    options: RunOptions keywords as the command line gave them. Returns the completed
    keywords and the inherited options as a user would type them, for the gate to print."""
    done = dict(options)
    inherited: list[str] = []
    recorded = baseline_config.to_dict()    # the table's rows name keys as the file has them
    for spec in table:
        value = spec.recorded_value(recorded)
        if spec.inherited and not _set(spec, done.get(spec.field)) and _set(spec, value):
            done[spec.field] = value
            inherited.append(spec.as_typed(value))
    return done, inherited


def _set(spec: OptionSpec, value: Any) -> bool:
    """A value that sets the option: for a flag, only True (a flag off is a flag not
    given), for any other option anything but None."""
    return bool(value) if spec.kind is bool else value is not None

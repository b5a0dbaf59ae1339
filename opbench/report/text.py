"""The text every view of a results record shares: formatted times and ratios, the rows
and their order, the header, the notes and the summary line (the views: terminal.py,
markdown.py, html.py).

Everything here reads the typed record (results/records.py) of what is written to JSON, so
a report can be made later from a saved file (`opbench report run.json`) exactly as at the
end of a run.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Iterator, Sequence

from opbench.cases.ids import short_ids
from opbench.gapmap.attribute import note_family
from opbench.gapmap.sweep import Sweep
from opbench.results.aa import aa_summary
from opbench.results.records import (
                                     FrameworkInfo,
                                     InstanceRecord,
                                     MergedPart,
                                     Measurement,
                                     RecordedConfig,
                                     RunRecord,
                                     )

VERDICT_STYLE = {"PASS": "green", "SLOW": "bold red", "INCONCLUSIVE": "yellow",
                 "MISMATCH": "bold magenta", "ERROR": "red"}
VERDICT_ORDER = ("SLOW", "MISMATCH", "ERROR", "INCONCLUSIVE", "PASS")
# What a correctness-only run (`opbench check`) shows for outputs that agree.
CHECK_AGREE = "AGREE"


def fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    # each unit while its 3 significant digits stay below 1000 ("999.6 us" is "1 ms")
    if seconds < 0.9995e-6:
        return f"{seconds * 1e9:.0f} ns"
    if seconds < 0.9995e-3:
        return f"{seconds * 1e6:.3g} us"
    if seconds < 0.9995:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.3g} s"


_UNIT_SCALE = {"bytes": (1e9, "GB/s"), "flops": (1e9, "GFLOP/s")}


def throughput_text(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    scale, name = _UNIT_SCALE.get(unit, (1.0, unit + "/s"))
    return f"{value / scale:.3g} {name}"


def fmt_ratio(m: Measurement) -> str:
    return f"{m.ratio:.3g} [{m.ci_low:.3g}, {m.ci_high:.3g}]"


def describe_inputs(inst: InstanceRecord) -> str:
    parts = []
    for spec in inst.inputs:
        shape = "x".join(str(d) for d in spec.shape) or "scalar"
        parts.append(f"{spec.name}:{shape} {spec.dtype}")
    return ", ".join(parts)


# (instance, measurement key, measurement); key and measurement None for an unmeasured one
Row = tuple[InstanceRecord, str | None, Measurement | None]


def instance_rows(instances: Iterable[InstanceRecord]) -> Iterator[Row]:
    """(instance, measurement key, measurement) for every measured mode; instances without
    measurements (MISMATCH, ERROR, correctness-only) give one row with None."""
    for inst in instances:
        if not inst.measurements:
            yield inst, None, None
        for key, m in inst.measurements.items():
            yield inst, key, m


def rows(record: RunRecord) -> Iterator[Row]:
    return instance_rows(record.instances)


def verdict_of(inst: InstanceRecord) -> str:
    """The instance's verdict word; ERROR for one that never got a verdict."""
    return "ERROR" if inst.verdict is None else str(inst.verdict)


def verdict_counts(record: RunRecord) -> Counter:
    return Counter(verdict_of(inst) for inst in record.instances)


def sorted_instance_rows(instances: Iterable[InstanceRecord]) -> list[Row]:
    """Worst first: findings, then by ratio ascending."""
    def key(row: Row) -> tuple[int, float]:
        inst, _, m = row
        v = str(m.verdict) if m is not None else verdict_of(inst)
        rank = VERDICT_ORDER.index(v) if v in VERDICT_ORDER else 0
        return (rank, m.ratio if m is not None else 0.0)
    return sorted(instance_rows(instances), key=key)


def sorted_rows(record: RunRecord) -> list[Row]:
    return sorted_instance_rows(record.instances)


def problem_text(inst: InstanceRecord) -> str:
    if inst.error:
        return inst.error
    check = inst.failed_check()
    if check is not None:
        what = "gradients" if check is inst.grad_check else "outputs"
        return (f"{what} differ: max abs err {check.max_abs_err}, max rel err "
                f"{check.max_rel_err} (rtol {check.rtol}, atol {check.atol}); "
                f"{check.detail}")
    return ""


def verdict_word(verdict: str, record: RunRecord) -> str:
    """A correctness-only run (`opbench check`) says AGREE where a timed run says PASS:
    PASS is the speed verdict, and nothing was timed."""
    if verdict == "PASS" and not record.config.timing:
        return CHECK_AGREE
    return str(verdict)


def problem_lines(record: RunRecord) -> list[str]:
    """Why each instance without a measurement has none (MISMATCH, ERROR)."""
    names = short_ids(inst.id for inst in record.instances)
    return [f"{names[inst.id]}: {as_named(problem, inst.id, names[inst.id])}"
            for inst in record.instances if (problem := problem_text(inst))]


def as_named(message: str, instance_id: str, name: str) -> str:
    """A message in the record names its instance by the full id (`worker process 1 was
    killed by SIGSEGV (signal 11) while running exp[shape=16x64,dtype=float32]`); a line of
    a table's report names it as the table does (`... while running exp[16x64,float32]`)."""
    return message.replace(instance_id, name) if name != instance_id else message


# A build's commit is shown this long (git's abbreviations run 7-12 characters); the JSON
# keeps it whole.
BUILD_SHOWN_CHARS = 12


def side_identity(name: str, info: FrameworkInfo) -> str:
    """`mindspore@ms29 2.9.0 build 4bcfac44 in /work/envs/ms29/bin/python`: what tells two
    sides of one framework apart (version, build, interpreter), each where recorded."""
    text = f"{name} {info.version}"
    if info.build:
        text += f" build {info.build[:BUILD_SHOWN_CHARS]}"
    if info.python:
        text += f" in {info.python}"
    return text


def header_text(record: RunRecord) -> str:
    env = record.environment
    parts = [f"{side_identity(n, i)} on {i.device} ({i.threads} threads"
             f"{', ' + i.launch + ' launches' if i.launch else ''})"
             for n, i in record.frameworks.items()]
    facts = machine_facts_text(record)
    return (f"opbench {env.opbench} | " + " vs ".join(parts) + f" | {env.cpu_model}"
            f" ({env.cpu_count} cores) | {view_text(record.config)}"
            + (f" | {facts}" if facts else ""))


def machine_facts_text(record: RunRecord) -> str | None:
    """Where the per-call floors and ceilings came from (runner/machine_facts.py): measured
    in this run, or read from the cache, and when; None for a file from before the cache
    (they were measured in the run)."""
    facts = record.machine_facts
    if facts is None:
        return None
    if facts.cached:
        return (f"machine facts (per-call floors, ceilings) read from the cache, measured "
                f"{facts.measured_utc.replace('T', ' ').replace('+00:00', ' UTC')} "
                f"(--remeasure-machine measures them again)")
    return "machine facts (per-call floors, ceilings) measured in this run"


def machine_facts_warnings(record: RunRecord) -> list[str]:
    """A cache file that could not be used or written: the run measured instead."""
    facts = record.machine_facts
    return [f"warning: {w}" for w in facts.warnings] if facts is not None else []


# What each mode measures, for the line that says which view the verdicts are about.
_MODE_VIEWS = {"serial": "serial latency (sync after every call)",
               "async": "async throughput (one sync per sample)"}


def view_text(cfg: RecordedConfig) -> str:
    """Which view of the operators the verdicts are about: a ratio means something different
    with queued or blocking launches, 1 or 8 threads, in one process or spread over several."""
    modes = " and ".join(_MODE_VIEWS.get(m, m) for m in cfg.modes)
    spread = [f"{cfg.processes} worker processes" if cfg.processes > 1 else "one process"]
    if cfg.passes > 1:
        spread.append(f"{cfg.passes} passes each")
    quiesce = "idle-wait before each sample" if cfg.quiesce else "no idle-wait before samples"
    return (f"view: {modes}, {cfg.launch} launches, {cfg.threads} threads, rounds over "
            f"{', '.join(spread)}, {quiesce}")


# A pre-sample wait longer than this is worth a note: the other side's threads were busy
# well after its sample ended (MindSpore's spin after 2-thread work lasts ~200 ms here).
LONG_SETTLE_S = 0.02


def _settle_note(m: Measurement) -> str | None:
    waits = {side: [w for w in values if w is not None] for side, values in m.settle_s.items()}
    longest = {side: max(v) for side, v in waits.items() if v}
    timed_out = {side: n for side, n in m.settle_timed_out.items() if n}
    if not timed_out and all(w < LONG_SETTLE_S for w in longest.values()):
        return None
    parts = [f"{side} waited up to {fmt_time(w)}" for side, w in longest.items()
             if w >= LONG_SETTLE_S]
    parts += [f"{n} of {side}'s waits hit the limit, so other work may have shared those "
              f"samples" for side, n in timed_out.items()]
    return ("before samples, the other side's threads stayed busy after its own sample "
            "(spinning or queued work): " + "; ".join(parts))


def settle_lines(record: RunRecord) -> list[str]:
    """The long idle-waits of the whole run, once, with the count and each side's range
    (they used to be one note per measurement: 18 of them for 24 instances)."""
    measurements = [m for inst in record.instances for m in inst.measurements.values()]
    noted = [m for m in measurements if _settle_note(m)]
    if not noted:
        return []
    longest: dict[str, list[float]] = {}
    timed_out: dict[str, int] = {}
    for m in noted:
        for side, values in m.settle_s.items():
            waits = [w for w in values if w is not None]
            if waits and max(waits) >= LONG_SETTLE_S:
                longest.setdefault(side, []).append(max(waits))
        for side, n in m.settle_timed_out.items():
            timed_out[side] = timed_out.get(side, 0) + n
    parts = [f"{side}'s longest wait per measurement {fmt_time(min(v))} to {fmt_time(max(v))}"
             if len(v) > 1 else f"{side} waited up to {fmt_time(v[0])}"
             for side, v in longest.items()]
    parts += [f"{n} of {side}'s waits hit the limit, so other work may have shared those "
              f"samples" for side, n in timed_out.items() if n]
    return [f"{len(noted)} of {len(measurements)} measurements: before samples, the other "
            f"side's threads stayed busy after its own sample (spinning or queued work): "
            + "; ".join(parts)]


def notes_lines(record: RunRecord, short: bool = False, grouped: bool = False
                ) -> list[str]:
    """Every note, by instance (`short`: with the short ids of the terminal table;
    `grouped`: without the notes a run-level line counts once: gapmap.attribute's
    families and the idle-waits, settle_lines)."""
    lines = []
    ids = [inst.id for inst in record.instances]
    names = short_ids(ids) if short else {i: i for i in ids}
    for inst in record.instances:
        notes = list(inst.explanation)
        for key, m in inst.measurements.items():
            notes += [f"[{key}] {n}" for n in m.notes if not (grouped and note_family(n))]
            if m.verdict == "INCONCLUSIVE" and m.inconclusive_reason:
                notes.append(f"[{key}] INCONCLUSIVE: {m.inconclusive_reason}")
            if m.interference_ruled_out:
                notes.append(f"[{key}] interference found: {m.interference_ruled_out}")
            settle = None if grouped else _settle_note(m)
            if settle:
                notes.append(f"[{key}] {settle}")
        if inst.check is not None and inst.check.expected_mismatch:
            notes.append(f"expected mismatch: {inst.check.expected_mismatch}")
        notes += [f"{e}; the earlier passes' rounds are kept" for e in inst.pass_errors]
        name = names[inst.id]
        lines += [f"{name}: {as_named(n, inst.id, name)}" for n in notes]
    return lines


def core_use_lines(record: RunRecord) -> list[str]:
    """The cores each side really used (CPU time over wall time over its samples), once for
    the run with its range, and the measurements where a side used more than allowed."""
    cores: dict[str, list[float]] = {}
    over: dict[str, list[tuple[int, int]]] = {}
    allowed = None
    for inst in record.instances:
        for m in inst.measurements.values():
            allowed = m.allowed_cores or allowed
            for side, value in m.effective_cores.items():
                if value is not None:
                    cores.setdefault(side, []).append(value)
            for side, n in m.samples_over_cores.items():
                if n:
                    over.setdefault(side, []).append((n, len(m.samples_s.get(side, ()))))
    if not cores:
        return []
    pinned = next((i.cpus for i in record.frameworks.values() if i.cpus), None)
    where = (f"pinned to cpu {','.join(map(str, pinned))}" if pinned
             else "not pinned")
    parts = [f"{side} {min(v):.2f}-{max(v):.2f}" for side, v in cores.items()]
    lines = [f"effective cores (CPU time / wall time over each measurement's samples): "
             f"{', '.join(parts)}; the run allows {allowed or record.config.threads} "
             f"({where})"]
    for side, found in over.items():
        samples = sum(n for n, _ in found)
        lines.append(f"{len(found)} measurements: {side} used more cores than the run allows "
                     f"in {samples} of {sum(t for _, t in found)} samples; its times there "
                     f"had more of the machine than the other side's")
    return lines


def run_notes(record: RunRecord) -> list[str]:
    """Notes about the whole run's statistics, and where a merged record's parts ran."""
    notes = (machine_facts_warnings(record) + merge_notes(record) + timing_notes(record)
             + sequential_notes(record)
             + core_use_lines(record) + settle_lines(record))
    notes += aa_lines(record)
    prior = record.between_process_prior
    if prior is not None and prior.sd is not None and prior.sd < 0.0005:
        # the run's estimate (stats.run_spread_prior) found no spread beyond the rounds' own
        # noise: "moved by 0.0%" read as if the processes had been measured identical
        notes.append(f"between worker processes a ratio moved no more than its rounds' own "
                     f"noise explains (over {prior.instances} measurements); every interval "
                     f"includes that noise")
    elif prior is not None and prior.sd is not None:
        notes.append(f"between worker processes a ratio moved by {prior.sd * 100:.1f}% "
                     f"(typical SD over {prior.instances} measurements); every interval "
                     f"includes that spread")
    return notes


def aa_lines(record: RunRecord) -> list[str]:
    """An A/A run's count of what it flagged by chance (results/aa.py)."""
    aa = aa_summary(record)
    if aa is None or not aa.measured:
        return []
    return [f"A/A: {aa.side} against itself, each side in its own processes: {aa.slow} of "
            f"{aa.measured} measurements SLOW and {aa.off_one} with an interval excluding 1 "
            f"({aa.off_one / aa.measured:.0%}; {1 - aa.confidence:.0%} expected by chance "
            f"from {aa.confidence:.0%} intervals): what a comparison of this selection "
            f"flags by chance"]


def sequential_notes(record: RunRecord) -> list[str]:
    """Under sequential stopping: which instances stopped early, which ran to the cap or
    into the time budget, and the measuring time of each group."""
    plan = record.config.sequential
    if plan is None:
        return []
    groups: dict[str, list[InstanceRecord]] = {}
    for inst in record.instances:
        course = inst.sequential
        if course is None:
            continue
        if course.stopped == "decided":
            key = ("decided after 1 process" if course.processes == 1
                   else "decided after 2 or more processes")
        else:
            key = {"cap": f"ran to the cap of {plan.max_processes} processes",
                   "budget": "stopped undecided by the time budget",
                   "failed": "failed (MISMATCH or ERROR)",
                   None: "still measured when the run stopped"}.get(course.stopped,
                                                                     str(course.stopped))
        groups.setdefault(key, []).append(inst)
    # early stops first, then what ran longest
    order = ("decided after 1", "decided after 2", "ran to", "stopped", "failed")
    groups = dict(sorted(groups.items(), key=lambda item: next(
        (i for i, start in enumerate(order) if item[0].startswith(start)), len(order))))
    budget = (f", time budget {plan.time_budget_s:g} s" if plan.time_budget_s else "")
    parts = [f"{len(members)} {key} ({sum(float(i.duration_s or 0) for i in members):.1f} s)"
             for key, members in groups.items()]
    lines = [f"sequential stopping (up to {plan.max_processes} processes{budget}): "
             + "; ".join(parts)]
    names = short_ids([i.id for i in record.instances])
    for key, members in groups.items():
        if key.startswith(("ran to the cap", "stopped undecided")):
            lines.append(f"{key}: " + ", ".join(names[i.id] for i in members))
    return lines


def merge_notes(record: RunRecord) -> list[str]:
    """What a reader of a merged record (opbench merge) must know before comparing rows."""
    parts = record.merged_from
    if not parts:
        return []
    notes = [f"merged from {len(parts)} records: {', '.join(p.file for p in parts)}"]
    if record.missing_shards:
        notes.append(f"shards {', '.join(map(str, record.missing_shards))} are missing: "
                     f"their instances are not in this record")
    if not record.absolute_times_comparable:
        machines = sorted({str(p.machine_id) for p in parts})
        notes.append(f"measured on {len(machines)} machines ({', '.join(machines)}): each "
                     f"ratio is from one machine, but absolute times of different rows are "
                     f"not comparable")
    return notes


def timing_notes(record: RunRecord) -> list[str]:
    """Where the run's wall time went: the set-up (every measuring process imports both
    frameworks) is paid whatever the selection, and by every pytest-xdist worker, so it
    bounds what more workers or a shorter selection can save."""
    processes = record.config.processes or 1
    cfg = record.config
    reference, target = cfg.sides
    # a side in another interpreter, or both on one framework: one process per side
    split = bool(reference.python or target.python) or reference.framework == target.framework
    who = (f"{processes} process pairs, one process per side" if split
           else f"{processes} processes, each importing both frameworks" if processes > 1
           else "both frameworks imported in this process")
    parts = [p for p in record.merged_from if p.setup_s is not None]
    if parts:
        lines = [f"{_part_name(p)}: {p.instances} instances measured in "
                 f"{p.measuring_s or 0.0:.1f} s after a {p.setup_s:.1f} s set-up ({who})"
                 for p in parts]
        if any(p.worker for p in parts):
            slowest = max((p.setup_s or 0.0) + (p.measuring_s or 0.0) for p in parts)
            lines.append(f"every worker sets its frameworks up itself: the run lasts about "
                         f"its slowest worker's set-up and measuring ({slowest:.1f} s), and "
                         f"more workers shorten only the measuring")
        return lines
    if record.setup_s is None or record.merged_from:
        return []
    if cfg.sequential is not None and processes > 1:
        # workers.py: a sequential run starts its first process alone, the others when an
        # instance is still undecided
        who = ("1 process pair, one process per side" if split
               else "1 worker process importing both frameworks") + ", more when needed"
    facts = record.machine_facts
    what = ("machine facts from the cache" if facts is not None and facts.cached
            else "per-call floors and ceilings measured")
    return [f"time: {record.setup_s:.1f} s set-up ({who}; {what}), "
            f"{record.measuring_s:.1f} s measuring {len(record.instances)} instances"]


def _part_name(part: MergedPart) -> str:
    cpus = part.worker.cpus if part.worker is not None else None
    if not cpus:
        return part.file
    return f"{part.file} (cores {','.join(map(str, cpus))})"


def summary_line(record: RunRecord) -> str:
    counts = verdict_counts(record)
    total = sum(counts.values())
    parts = [f"{counts[v]} {verdict_word(v, record)}" for v in VERDICT_ORDER if counts.get(v)]
    state = "" if record.complete else " (INTERRUPTED: partial results)"
    return f"{total} instances: " + ", ".join(parts) + state


def kernel_gap_rows(record: RunRecord, gaps: Sequence[Sweep]) -> list[list[str]]:
    """The largest kernel gaps (GapMap.kernel_gaps()): sweep, kernel ratio [95% CI], both
    sides' marginal throughput and fixed cost, and the raw ratio at the largest size."""
    ref, tgt = record.config.reference, record.config.target
    out = []
    for s in gaps:
        largest = s.points[-1]
        raw = (f"{largest.ratio:.3g} [{largest.ci[0]:.3g}, {largest.ci[1]:.3g}]"
               if largest.ratio is not None and largest.ci else "-")
        out.append([s.name, s.key,
                    f"{s.kernel_ratio:.3g} [{s.kernel_ci[0]:.3g}, {s.kernel_ci[1]:.3g}]", raw,
                    throughput_text(s.fits[ref].throughput, s.unit),
                    throughput_text(s.fits[tgt].throughput, s.unit),
                    fmt_time(max(s.fits[ref].fixed_s, 0.0)),
                    fmt_time(max(s.fits[tgt].fixed_s, 0.0))])
    return out


def kernel_gap_headers(record: RunRecord) -> list[str]:
    ref, tgt = record.config.reference, record.config.target
    return ["sweep", "mode", "kernel ratio [95% CI]", "raw ratio, largest size",
            f"{ref} throughput", f"{tgt} throughput", f"{ref} fixed", f"{tgt} fixed"]



"""The text every view of a results record shares: formatted times and ratios, the rows
and their order, the header, the notes and the summary line (the views: terminal.py,
markdown.py, html.py).

Everything here reads the record dict (the same one written to JSON), so a report can be
made later from a saved file (`opbench report run.json`) exactly as at the end of a run.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Iterable, Sequence

from opbench.cases.ids import short_ids
from opbench.gapmap.attribute import note_family
from opbench.gapmap.sweep import Sweep
from opbench.results.io import measuring_seconds

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


def fmt_ratio(m: dict[str, Any]) -> str:
    return f"{m['ratio']:.3g} [{m['ci_low']:.3g}, {m['ci_high']:.3g}]"


def describe_inputs(inst: dict[str, Any]) -> str:
    parts = []
    for spec in inst.get("inputs", []):
        shape = "x".join(str(d) for d in spec["shape"]) or "scalar"
        parts.append(f"{spec['name']}:{shape} {spec['dtype']}")
    return ", ".join(parts)


def rows(record: dict[str, Any]) -> Iterable[tuple[dict[str, Any], str | None, dict | None]]:
    """(instance, measurement key, measurement) for every measured mode; instances without
    measurements (MISMATCH, ERROR, correctness-only) give one row with None."""
    for inst in record.get("instances", []):
        ms = inst.get("measurements") or {}
        if not ms:
            yield inst, None, None
        for key, m in ms.items():
            yield inst, key, m


def verdict_counts(record: dict[str, Any]) -> Counter:
    return Counter(inst.get("verdict") or "ERROR" for inst in record.get("instances", []))


def sorted_rows(record: dict[str, Any]):
    """Worst first: findings, then by ratio ascending."""
    def key(row):
        inst, _, m = row
        v = (m or {}).get("verdict") or inst.get("verdict") or "ERROR"
        rank = VERDICT_ORDER.index(v) if v in VERDICT_ORDER else 0
        return (rank, (m or {}).get("ratio", 0.0))
    return sorted(rows(record), key=key)


def problem_text(inst: dict[str, Any]) -> str:
    if inst.get("error"):
        return inst["error"]
    check = inst.get("grad_check") if inst.get("grad_check") and not inst[
        "grad_check"]["ok"] else inst.get("check")
    if check and not check.get("ok"):
        what = "gradients" if check is inst.get("grad_check") else "outputs"
        return (f"{what} differ: max abs err {check.get('max_abs_err')}, max rel err "
                f"{check.get('max_rel_err')} (rtol {check['rtol']}, atol {check['atol']}); "
                f"{check.get('detail', '')}")
    return ""


def verdict_word(verdict: str, record: dict[str, Any]) -> str:
    """A correctness-only run (`opbench check`) says AGREE where a timed run says PASS:
    PASS is the speed verdict, and nothing was timed."""
    if verdict == "PASS" and not record.get("config", {}).get("timing", True):
        return CHECK_AGREE
    return verdict


def problem_lines(record: dict[str, Any]) -> list[str]:
    """Why each instance without a measurement has none (MISMATCH, ERROR)."""
    names = short_ids(inst["id"] for inst in record.get("instances", []))
    return [f"{names[inst['id']]}: {as_named(problem, inst['id'], names[inst['id']])}"
            for inst in record.get("instances", []) if (problem := problem_text(inst))]


def as_named(message: str, instance_id: str, name: str) -> str:
    """A message in the record names its instance by the full id (`worker process 1 was
    killed by SIGSEGV (signal 11) while running exp[shape=16x64,dtype=float32]`); a line of
    a table's report names it as the table does (`... while running exp[16x64,float32]`)."""
    return message.replace(instance_id, name) if name != instance_id else message


def header_text(record: dict[str, Any]) -> str:
    env, cfg, fw = record["environment"], record["config"], record.get("frameworks", {})
    parts = [f"{n} {i.get('version')} on {i.get('device')} ({i.get('threads')} threads"
             f"{', ' + i['launch'] + ' launches' if i.get('launch') else ''})"
             for n, i in fw.items()]
    return (f"opbench {env.get('opbench')} | " + " vs ".join(parts) + f" | {env.get('cpu_model')}"
            f" ({env.get('cpu_count')} cores) | {view_text(cfg)}")


# What each mode measures, for the line that says which view the verdicts are about.
_MODE_VIEWS = {"serial": "serial latency (sync after every call)",
               "async": "async throughput (one sync per sample)"}


def view_text(cfg: dict[str, Any]) -> str:
    """Which view of the operators the verdicts are about: a ratio means something different
    with queued or blocking launches, 1 or 8 threads, in one process or spread over several."""
    modes = " and ".join(_MODE_VIEWS.get(m, m) for m in cfg.get("modes", []))
    processes, passes = cfg.get("processes", 1), cfg.get("passes", 1)
    spread = [f"{processes} worker processes" if processes > 1 else "one process"]
    if passes > 1:
        spread.append(f"{passes} passes each")
    quiesce = ("idle-wait before each sample" if cfg.get("quiesce")
               else "no idle-wait before samples")
    return (f"view: {modes}, {cfg.get('launch', 'queued')} launches, {cfg.get('threads')} "
            f"threads, rounds over {', '.join(spread)}, {quiesce}")


# A pre-sample wait longer than this is worth a note: the other side's threads were busy
# well after its sample ended (MindSpore's spin after 2-thread work lasts ~200 ms here).
LONG_SETTLE_S = 0.02


def _settle_note(m: dict[str, Any]) -> str | None:
    waits = {side: [w for w in values if w is not None]
             for side, values in (m.get("settle_s") or {}).items()}
    longest = {side: max(v) for side, v in waits.items() if v}
    timed_out = {side: n for side, n in (m.get("settle_timed_out") or {}).items() if n}
    if not timed_out and all(w < LONG_SETTLE_S for w in longest.values()):
        return None
    parts = [f"{side} waited up to {fmt_time(w)}" for side, w in longest.items()
             if w >= LONG_SETTLE_S]
    parts += [f"{n} of {side}'s waits hit the limit, so other work may have shared those "
              f"samples" for side, n in timed_out.items()]
    return ("before samples, the other side's threads stayed busy after its own sample "
            "(spinning or queued work): " + "; ".join(parts))


def notes_lines(record: dict[str, Any], short: bool = False, grouped: bool = False
                ) -> list[str]:
    """Every note, by instance (`short`: with the short ids of the terminal table;
    `grouped`: without the notes a run-level line counts once, gapmap.attribute)."""
    lines = []
    ids = [inst["id"] for inst in record.get("instances", [])]
    names = short_ids(ids) if short else {i: i for i in ids}
    for inst in record.get("instances", []):
        notes = list(inst.get("explanation") or [])
        for key, m in (inst.get("measurements") or {}).items():
            notes += [f"[{key}] {n}" for n in m.get("notes", [])
                      if not (grouped and note_family(n))]
            if m.get("verdict") == "INCONCLUSIVE" and m.get("inconclusive_reason"):
                notes.append(f"[{key}] INCONCLUSIVE: {m['inconclusive_reason']}")
            settle = _settle_note(m)
            if settle:
                notes.append(f"[{key}] {settle}")
        if inst.get("check", {}).get("expected_mismatch"):
            notes.append(f"expected mismatch: {inst['check']['expected_mismatch']}")
        notes += [f"{e}; the earlier passes' rounds are kept" for e in inst.get("pass_errors", [])]
        name = names[inst["id"]]
        lines += [f"{name}: {as_named(n, inst['id'], name)}" for n in notes]
    return lines


def run_notes(record: dict[str, Any]) -> list[str]:
    """Notes about the whole run's statistics, and where a merged record's parts ran."""
    notes = merge_notes(record) + timing_notes(record)
    prior = record.get("between_process_prior")
    if prior:
        notes.append(f"between worker processes a ratio moved by {prior['sd'] * 100:.1f}% "
                     f"(typical SD over {prior['instances']} measurements); every interval "
                     f"includes that spread")
    return notes


def merge_notes(record: dict[str, Any]) -> list[str]:
    """What a reader of a merged record (opbench merge) must know before comparing rows."""
    parts = record.get("merged_from") or []
    if not parts:
        return []
    notes = [f"merged from {len(parts)} records: {', '.join(p['file'] for p in parts)}"]
    if record.get("missing_shards"):
        notes.append(f"shards {', '.join(map(str, record['missing_shards']))} are missing: "
                     f"their instances are not in this record")
    if record.get("absolute_times_comparable") is False:
        machines = sorted({str(p.get("machine_id")) for p in parts})
        notes.append(f"measured on {len(machines)} machines ({', '.join(machines)}): each "
                     f"ratio is from one machine, but absolute times of different rows are "
                     f"not comparable")
    return notes


def timing_notes(record: dict[str, Any]) -> list[str]:
    """Where the run's wall time went: the set-up (every measuring process imports both
    frameworks) is paid whatever the selection, and by every pytest-xdist worker, so it
    bounds what more workers or a shorter selection can save."""
    processes = (record.get("config") or {}).get("processes") or 1
    who = (f"{processes} processes, each importing both frameworks" if processes > 1
           else "both frameworks imported in this process")
    parts = [p for p in record.get("merged_from") or [] if p.get("setup_s") is not None]
    if parts:
        lines = [f"{_part_name(p)}: {p['instances']} instances measured in "
                 f"{p.get('measuring_s', 0.0):.1f} s after a {p['setup_s']:.1f} s set-up ({who})"
                 for p in parts]
        if any(p.get("worker") for p in parts):
            slowest = max(p["setup_s"] + p.get("measuring_s", 0.0) for p in parts)
            lines.append(f"every worker sets its frameworks up itself: the run lasts about "
                         f"its slowest worker's set-up and measuring ({slowest:.1f} s), and "
                         f"more workers shorten only the measuring")
        return lines
    if record.get("setup_s") is None or record.get("merged_from"):
        return []
    return [f"time: {record['setup_s']:.1f} s set-up ({who}; per-call floors), "
            f"{measuring_seconds(record):.1f} s measuring {len(record.get('instances', []))} instances"]


def _part_name(part: dict[str, Any]) -> str:
    worker = part.get("worker") or {}
    cpus = worker.get("cpus")
    if not cpus:
        return part["file"]
    return f"{part['file']} (cores {','.join(map(str, cpus))})"


def summary_line(record: dict[str, Any]) -> str:
    counts = verdict_counts(record)
    total = sum(counts.values())
    parts = [f"{counts[v]} {verdict_word(v, record)}" for v in VERDICT_ORDER if counts.get(v)]
    state = "" if record.get("complete") else " (INTERRUPTED: partial results)"
    return f"{total} instances: " + ", ".join(parts) + state


def kernel_gap_rows(record: dict[str, Any], gaps: Sequence[Sweep]) -> list[list[str]]:
    """The largest kernel gaps (GapMap.kernel_gaps()): sweep, kernel ratio [95% CI], both
    sides' marginal throughput and fixed cost, and the raw ratio at the largest size."""
    cfg = record["config"]
    ref, tgt = cfg["reference"], cfg["target"]
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


def kernel_gap_headers(record: dict[str, Any]) -> list[str]:
    ref, tgt = record["config"]["reference"], record["config"]["target"]
    return ["sweep", "mode", "kernel ratio [95% CI]", "raw ratio, largest size",
            f"{ref} throughput", f"{tgt} throughput", f"{ref} fixed", f"{tgt} fixed"]



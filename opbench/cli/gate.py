"""`opbench gate` and `opbench history`: argument parsing and wiring only.

gate exit codes: 0 pass; 1 a regression or a broken case (or, with --fail-on-slow, a case
SLOW against the reference); 2 usage or set-up error (bad baseline, unknown API, missing
framework, nothing in common with the baseline); 3 inconclusive (nothing regressed, but
some case is too noisy to tell or missing from this run); 130 interrupted.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

import click
from rich.markup import escape
from rich.table import Table

from opbench.cli.common import (
    build_config,
    check_results_path,
    default_cases_path,
    err,
    exit_status,
    fail,
    load_instances,
    out,
    pass_printer,
    signal_name_of,
    timing_options,
)
from opbench.cli.selection_options import selection_options
from opbench.gate.settings import GATE_DEFAULT_ROUNDS, GATE_SETTINGS
from opbench.results.safe_write import ResultsNotSaved
from opbench.verdicts.rules import DEFAULT_MIN_EFFECT, EXIT_USAGE


def _parse_overrides(values: Sequence[str]) -> tuple[tuple[str, float], ...]:
    overrides = []
    for text in values:
        pattern, sep, value = text.rpartition("=")
        try:
            fraction = float(value)
        except ValueError:
            fraction = float("nan")
        if not sep or not pattern or not 0.0 < fraction < 1.0:
            fail(f"--min-effect-for wants PATTERN=FRACTION with FRACTION in (0, 1), e.g. "
                 f"'reshape=0.2' or 'add[*float16*]=0.15'; got {text!r}")
        overrides.append((pattern, fraction))
    return tuple(overrides)


def _read_baseline(path: str) -> dict[str, Any]:
    from opbench.results.io import ResultsError, read_results

    try:
        baseline = read_results(path)
    except ResultsError as exc:
        fail(str(exc))
    if not any(inst.get("measurements") for inst in baseline.get("instances", [])):
        fail(f"{path}: the baseline has no timing measurements (a correctness-only or "
             f"empty run?); record one with `opbench run CASES --json {path}`")
    for inst in baseline.get("instances", []):
        for key, m in (inst.get("measurements") or {}).items():
            empty = [side for side, values in (m.get("samples_s") or {}).items() if not values]
            if empty or not m.get("samples_s"):
                fail(f"{path}: not a usable baseline: instance '{inst.get('id')}' "
                     f"measurement '{key}' has no samples for {', '.join(empty) or 'any side'}")
    return baseline


def _read_noise(path: str | None):
    from opbench.gate.noise import NoiseError, NoiseProfile

    if path is None:
        return None
    try:
        return NoiseProfile.read(path)
    except NoiseError as exc:
        fail(str(exc))


def _read_baselines(paths: Sequence[str]) -> dict[str, Any]:
    from opbench.gate.pool import PoolError, pool_baselines

    try:
        return pool_baselines([_read_baseline(p) for p in paths], list(paths))
    except PoolError as exc:
        fail(str(exc))


def progress_printer(quiet: bool, stage: str):
    """One stderr line per measured instance of a gate stage (also the fresh stage-2
    process's)."""
    def report(i, n, inst, result):
        if quiet or result is None:
            return
        ms = result.get("measurements") or {}
        ratios = " ".join(f"{k} {m['ratio']:.3g}" for k, m in ms.items())
        err.print(f"[dim]{stage} \\[{i + 1}/{n}][/] {escape(inst.id)}: {result.get('verdict')} "
                  f"{ratios}",
                  highlight=False)
    return report


def _remeasure_here(session, instances, ids: Sequence[str], quiet: bool) -> dict[str, Any]:
    """Stage 2 in this process: the instances that did not pass, measured again the same
    way (all passes)."""
    from dataclasses import replace

    from opbench.results.recorded_run import run_passes
    from opbench.runner.worker_main import default_session_factory

    if session.config.processes > 1:
        # stage 1 ran in worker processes, now closed: measure in this process instead
        # (a self-test's injection applies here too)
        session = default_session_factory(replace(session.config, processes=1))
        session.open()
        session.measure_overheads()
    wanted = set(ids)
    subset = [inst for inst in instances if inst.id in wanted]
    records = run_passes(session, subset, [], on_progress=progress_printer(quiet, "stage 2"),
                         on_pass=pass_printer(quiet))
    return {inst.id: record for inst, record in zip(subset, records)}


def _remeasure(session, instances, ids: Sequence[str], quiet: bool, config):
    """Stage 2 in fresh worker processes (gate/fresh_stage.py says why), or, when they
    fail, with stage 1's session, with a note saying so: (records by id, extra notes)."""
    from opbench.gate.baseline import KIND_STAGE2, HygieneNote
    from opbench.gate.fresh_stage import FreshStageError, remeasure_in_fresh_processes

    try:
        return remeasure_in_fresh_processes(
            instances, ids, config, on_progress=progress_printer(quiet, "stage 2"),
            on_pass=pass_printer(quiet)), ()
    except FreshStageError as exc:
        err.print(f"[yellow]stage 2: the fresh processes failed; re-measuring with stage 1's[/] "
                  f"({escape(str(exc))})", highlight=False)
        note = HygieneNote(KIND_STAGE2, f"re-measured in the first stage's processes, which "
                                      f"share their offsets, because the fresh processes "
                                      f"failed: {exc}")
        return _remeasure_here(session, instances, ids, quiet), (note,)


def _pct_cell(inst, attribute: str) -> str:
    from opbench.report.gate_markdown import pct

    cells = []
    for m in inst.measurements:
        path = getattr(m.decision.last, attribute) if m.decision else None
        if path is not None:
            e = path.estimate
            cells.append(f"{pct(e.change)} [{pct(e.ci_low)}, {pct(e.ci_high)}]")
    return "\n".join(cells) or "-"


_STYLE = {"PASS": "green", "REGRESSION": "bold red", "BROKEN": "bold magenta",
          "INCONCLUSIVE": "yellow", "MISSING": "yellow", "NEW": "cyan"}


def _print_result(result) -> None:
    from rich import box

    from opbench.cases.ids import short_ids
    from opbench.report.gate_markdown import OUTCOME, ratio_text

    instances = result.worst_first()
    names = short_ids(inst.id for inst in instances)
    table = Table(title="opbench gate (worst first)", title_justify="left",
                  box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for column in ("gate", "instance", "decided by", "ratio change", "target time change",
                   "now: verdict, ratio"):
        table.add_column(column, overflow="fold")
    for inst in instances:
        style = _STYLE.get(inst.verdict.value, "")
        label = inst.verdict.value + (" (2nd)" if inst.remeasured else "")
        name = names[inst.id] + (f"\n(was {inst.baseline_id})" if inst.renamed else "")
        table.add_row(f"[{style}]{label}[/]", escape(name), inst.decided_by or "-",
                      _pct_cell(inst, "ratio"), _pct_cell(inst, "target_time"),
                      f"{inst.current_verdict or '-'} {ratio_text(inst.current_ratio)}")
    out.print(table)
    for note in result.notes:
        out.print(f"[yellow]{note.kind}[/]: {escape(note.message)}", highlight=False)
    code = result.exit_code
    counts = ", ".join(f"{n} {k}" for k, n in result.counts().items() if n)
    out.print(f"[bold]gate: {OUTCOME.get(code, code)}[/] (exit {code}; {counts})",
              highlight=False)


@click.command("gate")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--baseline", "baseline_paths", required=True, multiple=True,
              type=click.Path(dir_okay=False),
              help="Results JSON of the baseline run (`opbench run --for-gate ... --json`). "
                   "Repeat it to pool several baseline runs of the same code, recorded in "
                   "separate processes (e.g. main's last CI runs): each process's own offset "
                   "averages out, and false alarms and INCONCLUSIVE results drop.")
@selection_options
@click.option("--min-effect", type=float, default=DEFAULT_MIN_EFFECT,
              help="Smallest ratio drop that counts as a regression (0.1 = 10%), for "
                   "cases that set no `min_effect` of their own and match no "
                   f"--min-effect-for. Default: {DEFAULT_MIN_EFFECT:g}.")
@click.option("--min-effect-for", "min_effect_for", multiple=True, metavar="PATTERN=FRACTION",
              help="Per-case minimum effect: PATTERN is an op name or an id glob "
                   "(repeatable; the last match wins), e.g. 'reshape=0.2'. Wins over the "
                   "case's own `min_effect` key, which wins over --min-effect.")
@click.option("--noise", "noise_path", type=click.Path(dir_okay=False), default=None,
              help="A noise profile (`opbench noise --json`): raise each instance's minimum "
                   "effect to its noise floor on this machine, so process-to-process noise "
                   "does not fail or stall the gate. Raised values are listed in every "
                   "output.")
@click.option("--fail-on-slow", is_flag=True,
              help="Also fail (exit 1) when a case is SLOW against the reference now.")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False), default=None,
              help="Write JUnit XML, one test case per instance.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False), default=None,
              help="Write the gate's decisions (and stage-2 samples) as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No per-instance progress lines.")
@timing_options
def gate_command(paths, baseline_paths, keyword, ops, tags, min_effect, min_effect_for,
                 noise_path, fail_on_slow, junit_path, report_path, history_db, quiet, json_path,
                 markdown_path, html_path, **timing):
    """Run the cases and compare with a baseline run: exit 0 pass, 1 regression,
    2 usage/setup error, 3 inconclusive.

    A regression needs evidence (the 95% interval of the change excludes "no change") and
    size (a drop of at least the minimum effect: --min-effect-for, else the case's
    min_effect, else --min-effect; raised to the instance's noise floor with --noise).
    The primary comparison is the torch-normalised
    ratio, so machine speed cancels; on the same machine each side's absolute time is
    compared too. Timing options left out are taken from the baseline's config, so both
    runs are measured alike (record the baseline with `opbench run --for-gate`). Cases that
    do not pass are measured a second time, in a fresh process; only a regression seen in
    both measurements fails the gate. Missing, renamed and new cases, another machine
    and other framework versions are listed in every output. (The Markdown file is the
    gate's summary, fit for a CI job summary.)"""
    from opbench.gate.baseline import inherit_settings
    from opbench.gate.evaluate import GateSettings, evaluate
    from opbench.runner.injection import injection_from_env

    baseline = _read_baselines(baseline_paths)
    baseline_path = " + ".join(baseline_paths)
    case_paths = [os.path.abspath(p) for p in paths or [default_cases_path()]]
    instances = load_instances(case_paths, ops, keyword, tags)
    timing, inherited = inherit_settings(timing, baseline.get("config") or {})
    timing = GATE_SETTINGS.fill(timing)   # only what neither the user nor the baseline set
    config = build_config(**timing)
    if inherited:
        # Printed even with -q: it is what this gate measured with, not progress.
        err.print(f"[dim]measuring like the baseline: {', '.join(inherited)}[/]",
                  highlight=False)
    b_cfg = baseline.get("config") or {}
    if (b_cfg.get("reference"), b_cfg.get("target")) != (config.reference, config.target):
        fail(f"{baseline_path} compares {b_cfg.get('reference')} with {b_cfg.get('target')}; "
             f"this run compares {config.reference} with {config.target}")
    try:
        settings = GateSettings(min_effect=min_effect,
                                min_effect_overrides=_parse_overrides(min_effect_for),
                                fail_on_slow=fail_on_slow, ops=tuple(ops), keyword=keyword,
                                tags=tuple(tags), noise=_read_noise(noise_path))
        injection = injection_from_env()
    except ValueError as exc:
        fail(str(exc))

    if history_db and not injection:   # a self-test's run is never recorded (below)
        _check_history(history_db)   # before measuring: a bad database must not cost a run
    _check_baseline_covers(baseline, baseline_path, instances, config, ops, keyword, tags)
    record, second, session = _measure(instances, config, json_path, injection, quiet)
    session.close()   # stage 1's workers: stage 2 starts fresh ones
    from opbench.gate.baseline import HygieneNote

    extra = (HygieneNote("self-test", injection.describe()),) if injection else ()
    result = evaluate(baseline, record, settings=settings, extra_notes=extra)
    if result.compared == 0:
        fail(f"{baseline_path} shares no instance with this run (baseline ids: "
             f"{', '.join(i['id'] for i in baseline['instances'][:5])} ...); a gate needs a "
             f"baseline of the same cases")
    ids = result.to_remeasure()
    if ids:
        if not quiet:
            err.print(f"[dim]stage 2: re-measuring {len(ids)} instance(s) that did not pass, "
                      f"in fresh processes[/]",
                      highlight=False)
        try:
            second, stage2_notes = _remeasure(session, instances, ids, quiet, config)
        except KeyboardInterrupt as exc:
            err.print(f"\n[bold]interrupted[/] ({signal_name_of(exc)}) during the second "
                      f"stage")
            sys.exit(exit_status(exc))
        extra += stage2_notes
        result = evaluate(baseline, record, remeasured=second, settings=settings,
                          extra_notes=extra)
    _write_outputs(result, record, second, baseline_path, json_path, junit_path,
                   markdown_path, html_path, report_path)
    if history_db:
        _record_history(history_db, record, json_path, injection is not None)
    _print_result(result)
    sys.exit(result.exit_code)


def _measure(instances, config, json_path, injection, quiet):
    import datetime as _dt

    from opbench.frameworks import DeviceUnavailable, FrameworkUnavailable
    from opbench.report.progress import RunProgress
    from opbench.results.recorded_run import open_session, run
    from opbench.runner.session import ApiError
    from opbench.runner.workers import WorkerError

    progress = RunProgress(err, quiet, passes=config.passes * config.processes,
                           stage="stage 1")
    try:
        with progress.starting(f"setting up {config.reference} and {config.target}"):
            session = open_session(config, injection=injection)
    except (FrameworkUnavailable, DeviceUnavailable, ValueError, WorkerError) as exc:
        fail(str(exc))
    if json_path is None:
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        json_path = os.path.join("out", f"opbench-gate-{stamp}.json")
    check_results_path(json_path)
    if not quiet:
        err.print(f"[dim]{len(instances)} instances, {config.settings.rounds} rounds; "
                  f"results -> {json_path}[/]", highlight=False)
    try:
        with progress:
            record = run(instances, config, json_path=json_path, session=session,
                         on_progress=progress.on_progress, on_pass=progress.on_pass)
    except ApiError as exc:
        fail(f"unknown APIs in the cases (nothing was timed):\n{exc}")
    except KeyboardInterrupt as exc:
        err.print(f"\n[bold]interrupted[/] ({signal_name_of(exc)}): partial results in "
                  f"{json_path}")
        sys.exit(exit_status(exc))
    except ResultsNotSaved as exc:
        # The gate decides from the record in memory; the failed write is said at the end.
        err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
        record = exc.record
    return record, {}, session


def _write_outputs(result, record, second, baseline_path, json_path, junit_path,
                   markdown_path, html_path, report_path) -> None:
    from opbench.gate.serialize import result_as_dict
    from opbench.report.gate_junit import render_junit
    from opbench.report.gate_markdown import render_markdown
    from opbench.results.io import write_json_atomic

    if junit_path:
        import socket

        Path(junit_path).write_text(render_junit(result, record=record,
                                                 hostname=socket.gethostname()),
                                    encoding="utf-8")
    if markdown_path:
        Path(markdown_path).write_text(render_markdown(result), encoding="utf-8")
    if html_path:
        from opbench.report.html import render_html

        Path(html_path).write_text(render_html(record), encoding="utf-8")
    if report_path:
        write_json_atomic(report_path, result_as_dict(
            result, baseline=str(baseline_path), current=json_path,
            stage2_records=second))


def _check_history(db_path: str) -> None:
    """Open the history database once before measuring: a garbage file, a newer schema or
    a lock held past LOCK_WAIT_S is a set-up error (exit 2) while nothing is lost yet."""
    from opbench.results.history import HistoryError, HistoryStore

    try:
        HistoryStore(db_path).close()
    except HistoryError as exc:
        fail(str(exc))


def _check_baseline_covers(baseline, baseline_path, instances, config, ops, keyword,
                           tags) -> None:
    """A baseline of other cases is refused before measuring (it used to be found only
    after the whole run): same rule as the gate's, by id or by what the instance is."""
    from opbench.gate.baseline import match_instances, select_records
    from opbench.runner.raw_records import instance_header

    current = [instance_header(inst, config) for inst in instances]
    selected = select_records(baseline.get("instances", []), ops, keyword, tags)
    if not match_instances(selected, current).pairs:
        fail(f"{baseline_path} shares no instance with the selected cases (baseline ids: "
             f"{', '.join(str(i.get('id')) for i in baseline['instances'][:5])} ...); a gate "
             f"needs a baseline of the same cases")


def _record_history(db_path: str, record: Mapping[str, Any], json_path: str | None,
                    injected: bool) -> None:
    """Recording comes after the verdict is known: a failure is a warning, never a change
    of the gate's exit code (a locked database used to turn a pass into exit 1)."""
    from opbench.results.history import HistoryError, HistoryStore

    if injected:
        err.print("[yellow]history: not recording a self-test run with an injected "
                  "slowdown[/]")
        return
    try:
        with HistoryStore(db_path) as store:
            run_id, added = store.record_run(dict(record), source=json_path, label="gate")
    except HistoryError as exc:
        err.print(f"[yellow]history: not recorded: {escape(str(exc))}[/]", highlight=False)
        return
    err.print(f"[dim]history: run #{run_id} {'recorded in' if added else 'already in'} "
              f"{escape(db_path)}[/]", highlight=False)


# --------------------------------------------------------------------------- history

def _fmt_time(seconds: float | None) -> str:
    from opbench.report.text import fmt_time

    return fmt_time(seconds)


@click.command("history")
@click.argument("selector", required=False)
@click.option("--db", "db_path", type=click.Path(dir_okay=False), default=None,
              help="SQLite history file (default $OPBENCH_DB or ./opbench.db).")
@click.option("--add", "add_paths", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Record these results files first (repeatable).")
@click.option("--label", default=None, help="Label for the runs recorded with --add.")
@click.option("--mode", default=None, help="Only this measurement (serial, async, ...).")
@click.option("--last", "last_runs", type=int, default=None, help="Only the last N runs.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
              help="Also draw the trend (PNG/SVG/PDF by extension; needs matplotlib).")
def history_command(selector, db_path, add_paths, label, mode, last_runs, plot_path):
    """How an operator's ratio moved over recorded runs. SELECTOR is an op name (or, when
    no op has that name, a substring of instance ids). Without SELECTOR: what is stored."""
    from opbench.results.history import HistoryError, HistoryStore, default_db

    db_path = db_path or default_db()
    if not add_paths and not Path(db_path).exists():
        fail(f"no history database at {db_path}; record runs with "
             f"`opbench history --db {db_path} --add RESULTS.json` or `opbench gate "
             f"--history-db {db_path}`")
    try:
        with HistoryStore(db_path) as store:
            _add_runs(store, add_paths, label)
            if selector is None:
                ops = store.operators()
                out.print(f"{db_path}: {store.run_count()} runs; operators: "
                          f"{', '.join(ops) or 'none'}", highlight=False)
                return
            points = store.trend(selector, mode=mode, last_runs=last_runs)
    except HistoryError as exc:
        fail(str(exc))
    if not points:
        fail(f"{db_path}: nothing recorded for '{selector}'")
    out.print(_trend_table(points, selector))
    if plot_path:
        from opbench.report.history_plot import PlotUnavailable, plot_trend

        try:
            plot_trend(points, plot_path, title=f"{selector}: ratio over recorded runs")
        except PlotUnavailable as exc:
            fail(str(exc))
        err.print(f"[dim]plot: {plot_path}[/]", highlight=False)


def _add_runs(store, add_paths: Sequence[str], label: str | None) -> None:
    from opbench.results.io import ResultsError, read_results

    for path in add_paths:
        try:
            record = read_results(path)
        except ResultsError as exc:
            fail(str(exc), EXIT_USAGE)
        run_id, added = store.record_run(record, source=str(path), label=label)
        err.print(f"[dim]{path}: run #{run_id} {'recorded' if added else 'already recorded'}"
                  f"[/]", highlight=False)


def _trend_table(points, selector: str):
    """Readable at 100 columns: one block per instance and mode, headed by its short id
    (whole, never cut: a cut id made float16 and float32 rows read the same), and machine
    and versions in the title when every run shares them."""
    from itertools import groupby

    from rich import box
    from rich.console import Group
    from rich.text import Text

    from opbench.cases.ids import short_ids

    names = short_ids(p.instance_id for p in points)
    machines = {p.machine_id or "-" for p in points}
    versions = {f"{p.reference_version or '?'} / {p.target_version or '?'}" for p in points}
    per_run = [("machine", len(machines) > 1), ("versions", len(versions) > 1)]
    shared = [f"{name}: {next(iter(values))}" for (name, varies), values
              in zip(per_run, (machines, versions)) if not varies]
    blocks: list[Any] = [Text(f"history of {selector} (oldest first; change vs the previous "
                              f"run)" + "".join(f"; {s}" for s in shared), style="bold")]
    ordered = sorted(points, key=lambda p: (p.instance_id, p.mode, p.run_id))
    for (instance_id, mode), group in groupby(ordered, key=lambda p: (p.instance_id, p.mode)):
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                      title=Text(f"{names[instance_id]}  {mode}"), title_justify="left",
                      title_style="bold")
        for column in ("run", "date", "commit"):
            table.add_column(column, no_wrap=True)
        for column, varies in per_run:
            if varies:
                table.add_column(column, overflow="fold")
        for column in ("ratio [95% CI]", "change", "verdict", "target median"):
            table.add_column(column, no_wrap=True,
                             justify="left" if column == "verdict" else "right")
        previous = None
        for p in group:
            change = "-"
            if p.ratio is not None and previous is not None:
                change = f"{(p.ratio / previous - 1) * 100:+.1f}%"
            if p.ratio is not None:
                previous = p.ratio
            ratio = ("-" if p.ratio is None
                     else f"{p.ratio:.3g} [{p.ci_low:.3g}, {p.ci_high:.3g}]")
            cells = [f"#{p.run_id}", (p.created_utc or "-")[:16], (p.git_commit or "-")[:9]]
            if per_run[0][1]:
                cells.append(p.machine_id or "-")
            if per_run[1][1]:
                cells.append(f"{p.reference_version or '?'} / {p.target_version or '?'}")
            cells += [ratio, change, p.verdict or "-", _fmt_time(p.target_median_s)]
            table.add_row(*cells)
        blocks += [Text(""), table]
    return Group(*blocks)


__all__ = ["GATE_DEFAULT_ROUNDS", "gate_command", "history_command", "progress_printer"]

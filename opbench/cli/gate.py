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
from typing import TYPE_CHECKING, Any, Sequence

import click
from rich.markup import escape
from rich.table import Table

from opbench.cli.common import (
                                default_cases_path,
                                default_json_path,
                                err,
                                exit_status,
                                fail,
                                load_instances,
                                out,
                                pass_printer,
                                run_and_record,
                                signal_name_of,
                                timing_options,
                                )
from opbench.cli.selection_options import selection_options
from opbench.gate.settings import GATE_DEFAULT_ROUNDS   # named here by older scripts and tests
from opbench.verdicts.rules import DEFAULT_MIN_EFFECT, EXIT_USAGE

if TYPE_CHECKING:
    from opbench.results.records import RunRecord


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


def _read_baseline(path: str) -> RunRecord:
    from opbench.results.io import ResultsError
    from opbench.results.records import load_results

    try:
        baseline = load_results(path)
    except ResultsError as exc:
        fail(str(exc))
    if not any(inst.measured for inst in baseline.instances):
        fail(f"{path}: the baseline has no timing measurements (a correctness-only or "
             f"empty run?); record one with `opbench run CASES --json {path}`")
    for inst in baseline.instances:
        for key, m in inst.measurements.items():
            empty = [side for side, values in m.samples_s.items() if not values]
            if empty or not m.samples_s:
                fail(f"{path}: not a usable baseline: instance '{inst.id}' "
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


def _read_baselines(paths: Sequence[str]) -> RunRecord:
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
        ratios = " ".join(f"{k} {m.ratio:.3g}" for k, m in result.measurements.items())
        verdict = result.verdict.value if result.verdict else None
        err.print(f"[dim]{stage} \\[{i + 1}/{n}][/] {escape(inst.id)}: {verdict} "
                  f"{ratios}",
                  highlight=False)
    return report


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


@click.command("gate",
               short_help="Compare a run with a baseline run; exit 1 on a regression.")
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
    from opbench.gate.evaluate import GateSettings
    from opbench.runloop.gate_run import GateRequest, GateSetupError, run_gate

    baseline = _read_baselines(baseline_paths)
    case_paths = [os.path.abspath(p) for p in paths or [default_cases_path()]]
    instances = load_instances(case_paths, ops, keyword, tags)
    try:
        settings = GateSettings(min_effect=min_effect,
                                min_effect_overrides=_parse_overrides(min_effect_for),
                                fail_on_slow=fail_on_slow, ops=tuple(ops), keyword=keyword,
                                tags=tuple(tags), noise=_read_noise(noise_path))
    except ValueError as exc:
        fail(str(exc))
    request = GateRequest(baseline=baseline, baseline_path=" + ".join(baseline_paths),
                          instances=instances, options=timing, settings=settings,
                          json_path=json_path or default_json_path("opbench-gate"),
                          history_db=history_db)
    console = _GateConsole(quiet)
    try:
        gate = run_gate(request, console.hooks())
    except GateSetupError as exc:
        fail(str(exc))
    except KeyboardInterrupt as exc:
        if not console.in_stage2:
            raise   # stage 1 says what it saved (run_and_record); before it, nothing was
        err.print(f"\n[bold]interrupted[/] ({signal_name_of(exc)}) during the second stage")
        sys.exit(exit_status(exc))
    _write_outputs(gate.result, gate.record, gate.remeasured, request.baseline_path,
                   request.json_path, junit_path, markdown_path, html_path, report_path)
    if gate.history is not None:
        style = "dim" if gate.history.recorded else "yellow"
        err.print(f"[{style}]{escape(gate.history.message)}[/]", highlight=False)
    _print_result(gate.result)
    sys.exit(gate.result.exit_code)


class _GateConsole:
    """The gate's front door on the terminal: stage 1 through the one run path of every
    command (common.run_and_record), stage 2's progress as lines on stderr."""

    def __init__(self, quiet: bool):
        self.quiet = quiet
        self.in_stage2 = False

    def hooks(self):
        from opbench.runloop.gate_run import GateHooks

        return GateHooks(measure=self.measure, inherited=self.inherited,
                         stage2_starting=self.stage2_starting,
                         stage2_progress=progress_printer(self.quiet, "stage 2"),
                         stage2_pass=pass_printer(self.quiet), stage2_here=self.stage2_here)

    def measure(self, instances, config, json_path, injection, early_stop):
        return run_and_record(instances, config, json_path, quiet=self.quiet, stage="stage 1",
                              injection=injection, on_not_saved=self.decide_unsaved,
                              early_stop=early_stop)

    @staticmethod
    def decide_unsaved(exc):
        # The gate decides from the record in memory; the failed write is said, not fatal.
        err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
        return exc.record

    @staticmethod
    def inherited(options):
        # Printed even with -q: it is what this gate measured with, not progress.
        err.print(f"[dim]measuring like the baseline: {', '.join(options)}[/]",
                  highlight=False)

    def stage2_starting(self, count):
        self.in_stage2 = True
        if not self.quiet:
            err.print(f"[dim]stage 2: re-measuring {count} instance(s) that did not pass, "
                      f"in fresh processes[/]", highlight=False)

    @staticmethod
    def stage2_here(reason):
        err.print(f"[yellow]stage 2: the fresh processes failed; re-measuring with stage 1's[/] "
                  f"({escape(reason)})", highlight=False)


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
            stage2_records={i: record.to_dict() for i, record in second.items()}))


# --------------------------------------------------------------------------- history

def _fmt_time(seconds: float | None) -> str:
    from opbench.report.text import fmt_time

    return fmt_time(seconds)


@click.command("history",
               short_help="Show how an operator's ratio moved over recorded runs.")
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
@click.option("--changes", is_flag=True, default=False,
              help="Change points over every series (or SELECTOR's); exit 1 on a regression.")
@click.option("--json", "json_out", is_flag=True, default=False,
              help="With --changes: the changes as JSON on stdout.")
@click.option("--v3", "v3_path", type=click.Path(dir_okay=False), default=None,
              help="Write the stored runs (or SELECTOR's) as dashboard v3 JSON lines.")
@click.option("--acknowledge", "ack_run", type=int, default=None,
              help="Accept SELECTOR's (an instance id) level from this run id on.")
@click.option("--note", default=None, help="Why, stored with --acknowledge.")
def history_command(selector, db_path, add_paths, label, mode, last_runs, plot_path,
                    changes, json_out, v3_path, ack_run, note):
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
            if ack_run is not None:
                if selector is None:
                    fail("--acknowledge needs the instance id as SELECTOR", EXIT_USAGE)
                modes = store.acknowledge(selector, ack_run, mode=mode, note=note)
                err.print(f"[dim]{selector} ({', '.join(modes)}): level accepted from run "
                          f"#{ack_run}[/]", highlight=False)
            if v3_path:
                _write_v3(store, selector, mode, v3_path)
            if changes:
                found = _changes(store, selector, mode)
            elif selector is None:
                ops = store.operators()
                out.print(f"{db_path}: {store.run_count()} runs; operators: "
                          f"{', '.join(ops) or 'none'}", highlight=False)
                return
            if not changes:
                points = store.trend(selector, mode=mode, last_runs=last_runs)
    except HistoryError as exc:
        fail(str(exc))
    if changes:
        _show_changes(found, json_out)
        return
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


def _write_v3(store, selector, mode, path) -> None:
    from opbench.report.dashboard_v3 import history_records, write_json_lines

    points = store.all_points() if selector is None else store.trend(selector, mode=mode)
    write_json_lines(history_records(p for p in points if mode is None or p.mode == mode),
                     path)
    err.print(f"[dim]v3: {path}[/]", highlight=False)


def _changes(store, selector, mode):
    from opbench.results.changes import detect_changes

    points = store.all_points() if selector is None else store.trend(selector, mode=mode)
    if selector is None and mode is not None:
        points = [p for p in points if p.mode == mode]
    return detect_changes(points, acknowledged=store.acknowledged())


def _show_changes(found, json_out: bool) -> None:
    import json

    from opbench.results.changes import changes_to_json

    if json_out:
        click.echo(json.dumps(changes_to_json(found), indent=2))
    elif not found:
        out.print("no change points", highlight=False)
    for c in ([] if json_out else found):
        out.print(f"{c.key.instance} [{c.key.mode}]: {c.direction} at run #{c.run} "
                  f"(series run {c.run_index}, commit {c.commit or '?'}): ratio x{c.ratio:.3f} "
                  f"[{c.ci_low:.3f}, {c.ci_high:.3f}]", highlight=False)
    if any(c.direction == "regression" for c in found):
        raise SystemExit(1)


def _add_runs(store, add_paths: Sequence[str], label: str | None) -> None:
    from opbench.results.io import ResultsError
    from opbench.results.records import load_results

    for path in add_paths:
        try:
            record = load_results(path)
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
    versions = {p.frameworks for p in points}
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
                cells.append(p.frameworks)
            cells += [ratio, change, p.verdict or "-", _fmt_time(p.target_median_s)]
            table.add_row(*cells)
        blocks += [Text(""), table]
    return Group(*blocks)


__all__ = ["GATE_DEFAULT_ROUNDS", "gate_command", "history_command", "progress_printer"]

"""`opbench noise`: each instance's noise floor from several runs of the same code (the
measuring is `opbench run --for-gate`, once per process; gate/noise.py does the rest), and
`opbench resample`: the gate resampled over such runs (gate/resample.py), also under its
former name `opbench replay`."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import click
from rich.markup import escape
from rich.table import Table

from opbench.cli.common import err, fail, out
from opbench.gate.decision import PATH_RATIO, PATH_TARGET_TIME
from opbench.verdicts.rules import DEFAULT_MIN_EFFECT

if TYPE_CHECKING:
    from opbench.results.records import RunRecord

__all__ = ["noise_command", "replay_alias_command", "resample_command"]


def _read_runs(paths: Sequence[str]) -> list[RunRecord]:
    from opbench.results.io import ResultsError
    from opbench.results.records import load_results

    records = []
    for path in paths:
        try:
            record = load_results(path)
        except ResultsError as exc:
            fail(str(exc))
        if not record.complete:
            fail(f"{path}: an interrupted run; its instances would be missing from the spread")
        records.append(record)
    return records


def _table(profile, baseline_processes: int, min_effect: float) -> Table:
    table = Table(title=f"noise floor against a baseline of {baseline_processes} process(es), "
                        f"noisiest first (SD: between-process standard deviation, pulled "
                        f"towards the typical one)",
                  title_justify="left")
    for column in ("instance", "runs", "ratio SD", "min effect", "target time SD",
                   "target time floor"):
        table.add_column(column)
    ranked = sorted(profile.instances.items(), key=lambda kv: -kv[1].sd(PATH_RATIO))
    for inst_id, noise in ranked:
        floors = profile.floors_for(inst_id, baseline_processes)
        raised = floors[PATH_RATIO] > min_effect
        cell = (f"{max(min_effect, floors[PATH_RATIO]):.1%}"
                + (" [yellow](raised)[/]" if raised else ""))
        table.add_row(escape(inst_id), str(noise.processes), f"{noise.sd(PATH_RATIO):.1%}",
                      cell, f"{noise.sd(PATH_TARGET_TIME):.1%}",
                      f"{floors[PATH_TARGET_TIME]:.1%}")
    return table


@click.command("noise",
               short_help="Estimate each instance's noise floor from several --for-gate runs.")
@click.argument("runs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Write the profile for `opbench gate --noise`.")
@click.option("--baseline-processes", type=click.IntRange(min=1), default=2,
              help="How many processes the gate's baseline will pool (repeated --baseline): "
                   "the table's floors assume it; the gate uses its actual count. Default: 2.")
@click.option("--min-effect", type=float, default=DEFAULT_MIN_EFFECT,
              help="The minimum effect the gate will be given, to show which floors raise it. "
                   f"Default: {DEFAULT_MIN_EFFECT:g}.")
def noise_command(runs, json_path, baseline_processes, min_effect):
    """How far each instance's ratio moves between processes of the same code, and the
    minimum effect a gate can hold for it on this machine. RUNS: 3 or more results files of
    the same code, each from its own `opbench run --for-gate --json`, never two at once, and
    best spread over hours or days like the gap between a baseline and its gates (runs back
    to back show less spread than the gates will meet). `opbench gate --noise FILE` raises
    each instance's minimum effect to its floor and says so in every report."""
    from opbench.gate.noise import NoiseError, process_noise
    from opbench.results.io import write_json_atomic

    if not 0.0 < min_effect < 1.0:
        fail(f"--min-effect must be in (0, 1), got {min_effect}")
    records = _read_runs(runs)
    try:
        profile = process_noise(records, list(runs))
    except NoiseError as exc:
        fail(str(exc))
    if not profile.instances:
        fail("no instance was measured in enough of these runs to give a spread")
    out.print(_table(profile, baseline_processes, min_effect))
    raised = sum(1 for i in profile.instances
                 if profile.floors_for(i, baseline_processes)[PATH_RATIO] > min_effect)
    count = len(profile.instances)
    out.print(f"{count} instance{'' if count == 1 else 's'} from {len(records)} runs; the noise "
              f"floor raises the min effect of {raised} above {min_effect:.0%}", highlight=False)
    if json_path:
        write_json_atomic(json_path, profile.as_dict())
        err.print(f"[dim]noise profile -> {json_path}[/]", highlight=False)


@click.command("resample",
               short_help="The gate resampled over --for-gate runs: how often it fails.")
@click.argument("runs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-m", "--baseline-processes", "baseline_counts", type=click.IntRange(min=1),
              multiple=True, help="Processes pooled into each resampled baseline (repeatable; "
                                  "default 1 and 2).")
@click.option("--profile-processes", type=click.IntRange(min=0), default=5,
              help="Processes in the noise profile of the 'profile' rows (0: no such rows). "
                   "Default: 5.")
@click.option("--gates", type=click.IntRange(min=1), default=200,
              help="Resampled gates per row. Default: 200.")
@click.option("--seed", type=int, default=0,
              help="Seed of the draws (same seed, same table). Default: 0.")
@click.option("--injected", "injected_paths", multiple=True, type=click.Path(dir_okay=False),
              help="Runs recorded with OPBENCH_INJECT_SLOWDOWN (2 or more): also judge "
                   "gates of those against the same baselines.")
def resample_command(runs, baseline_counts, profile_processes, gates, seed, injected_paths):
    """How often would the gate fail or stall on this runner? RUNS: `--for-gate` runs of the
    same code, each its own process. Each resampled gate draws a baseline, a noise profile,
    a stage 1 and a stage 2 from different processes and runs the gate's decision on them
    (no measuring): identical code should pass; injected runs should fail."""
    from opbench.gate.resample import resample_gates

    records = _read_runs(runs)
    injected = _read_runs(injected_paths)
    table = Table(title=f"{gates} resampled gates per row over {len(records)} processes "
                        f"(seed {seed})", title_justify="left")
    for column in ("baseline", "noise profile", "A/A pass", "fail", "inconclusive",
                   "REGRESSION per instance", "INCONCLUSIVE per instance",
                   *(("injected: caught per instance", "injected: gates failed")
                     if injected else ())):
        table.add_column(column)
    for m in baseline_counts or (1, 2):
        for profile in sorted({0, profile_processes}):
            try:
                same, slowed = resample_gates(records, list(runs), baseline_processes=m,
                                              profile_processes=profile, gates=gates,
                                              seed=seed, injected=injected)
            except ValueError as exc:   # too few runs, or runs not measured alike
                fail(str(exc))
            row = [f"{m} process{'es' if m > 1 else ''}",
                   f"{profile} processes" if profile else "none",
                   f"{same.gate_share(0):.0%}", f"{same.gate_share(1):.1%}",
                   f"{same.gate_share(3):.0%}", f"{same.verdict_share('REGRESSION'):.2%}",
                   f"{same.verdict_share('INCONCLUSIVE'):.1%}"]
            if injected:
                row += [f"{slowed.verdict_share('REGRESSION'):.0%}",
                        f"{slowed.gate_share(1):.0%}"]
            table.add_row(*row)
    out.print(table)


# `opbench replay`, the command's name until "replay" came to mean the model's re-execution
# (opbench model): kept so CI jobs and docs that call it keep working.
replay_alias_command = click.Command(
    "replay", callback=resample_command.callback, params=resample_command.params,
    help="The former name of `opbench resample`, kept working. "
         + (resample_command.help or ""),
    short_help="The former name of `opbench resample`, kept working.")

"""`opbench bisect ENV_0 ... ENV_N-1`: where each operator slower in the last environment
than in the first got slower (wiring only: runloop/bisect.py searches, report/bisect.py
says it; each probe is one run of ENV_k against ENV_0, as `opbench run` measures)."""
from __future__ import annotations

from pathlib import Path

import click

from opbench.cli.common import build_config, default_cases_path, fail, load_instances, out
from opbench.cli.selection_options import selection_options


@click.command("bisect", short_help="Find where each operator got slower in a list of "
                                    "environments.")
@click.argument("environments", nargs=-1, required=True)
@selection_options
@click.option("--cases", "cases_paths", multiple=True, type=click.Path(exists=True),
              help="Case files or directories (repeatable). Default: the shipped library.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="out/bisect",
              help="Where each probe's results file goes (probe-K.json). Default: out/bisect.")
@click.option("--min-slowdown", type=click.FloatRange(min=0.0), default=0.05,
              help="A regression is slower in the last environment by at least this share "
                   "(and with its whole interval). Default: 0.05.")
@click.option("--no-backward", is_flag=True, help="Time the forward call only.")
@click.option("-q", "--quiet", is_flag=True, help="No progress display.")
def bisect_command(environments, keyword, ops, tags, cases_paths, out_dir, min_slowdown,
                   no_backward, quiet):
    """ENVIRONMENTS, oldest first: sides (FRAMEWORK@PYTHON or named environments, docs/cli.md)
    of one framework. Measures the last against the first, then bisects each operator that
    got slower, one run of an environment against the first per probe."""
    from opbench.cli.common import run_and_record
    from opbench.report.bisect import bisect_lines
    from opbench.report.text import side_identity
    from opbench.runloop.bisect import bisect_environments, estimates_of

    if len(environments) < 2:
        fail("bisect needs at least two environments, oldest first")
    if len(set(environments)) != len(environments):
        fail("an environment is named twice in the list")
    configs = {k: build_config(sequential=True, reference=environments[0],
                               target=environments[k], no_backward=no_backward)
               for k in range(1, len(environments))}
    instances = load_instances(list(cases_paths) or [default_cases_path()], ops, keyword, tags)
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)

    identities: dict[str, str] = {}    # each environment's version, build, interpreter

    def probe(k):
        record = run_and_record(instances, configs[k], directory / f"probe-{k}.json",
                                quiet=quiet, stage=f"{environments[k]} vs {environments[0]}")
        for env, side in ((environments[0], configs[k].reference_name),
                          (environments[k], configs[k].target_name)):
            if side in record.frameworks:
                identities[env] = side_identity(side, record.frameworks[side])
        return estimates_of(record)

    result = bisect_environments(environments, probe, min_slowdown)
    for line in bisect_lines(result, identities):
        out.print(line, highlight=False, markup=False, soft_wrap=True)

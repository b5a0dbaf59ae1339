"""`opbench merge`: the command-line shell of merge.py (reading, writing, messages)."""
from __future__ import annotations

import click

from opbench.cli.common import err, fail


@click.command(name="merge",
               short_help="Join the results files of one selection's shards into one.")
@click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False),
              help="The merged results file.")
@click.option("--allow-machines", is_flag=True,
              help="Merge parts measured on different machines: ratios side by side, absolute "
                   "times marked not comparable (absolute_times_comparable: false). Without "
                   "it, different machine ids are refused.")
def merge_command(paths, output, allow_machines):
    """Join results files that each hold part of one selection (the shards of `opbench run
    --shard K/N`) into one results file for `report`, `gate` and `history`. Refuses
    duplicate instances and parts measured with other opbench, framework or case versions
    or another configuration; exit 2 names the file and the key."""
    from rich.markup import escape

    from opbench.gapmap.figures import with_figures
    from opbench.results.io import ResultsError
    from opbench.results.merge import MergeError, merge_records
    from opbench.results.records import load_results, write_results

    try:
        records = [load_results(path) for path in paths]
        merged = merge_records(records, list(paths), allow_machines=allow_machines)
    except (ResultsError, MergeError) as exc:
        fail(str(exc))
    try:
        write_results(output, with_figures(merged))
    except OSError as exc:
        fail(f"cannot write {output}: {exc}")
    state = "" if merged.complete else " (incomplete: a part was interrupted or a shard " \
                                       "is missing)"
    err.print(f"merged {len(merged.instances)} instances from {len(paths)} files -> "
              f"{escape(output)}{state}", highlight=False)

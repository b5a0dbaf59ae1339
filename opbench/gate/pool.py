"""Several baseline runs as one baseline: `opbench gate --baseline a.json --baseline b.json`.

Why: on the project's shared 2-core machine the torch/MindSpore ratio of one instance moves
by a standard deviation of 2-8% from one process to the next (MindSpore's per-process state,
neighbours on the host), and no statistic inside one run can see that. A baseline recorded
in a single process carries its own process's offset into every gate that compares with
it: in 10 A/A gates against one baseline, `add.bias[hidden=768]` read 9-17% "slower" every
time because the baseline process had been a fast one. Rounds pooled from baselines
recorded in separate processes average those offsets out. Replaying the gate's decision
over 26 independent runs of 18 shipped instances here (docs/gate.md; stage 2 taken from yet
another process), a baseline of 1, 2, 3 and 4 processes gave 1.3%, 0.5%, 0.3% and 0.3% false
REGRESSIONs per instance-gate and 8.9%, 4.5%, 2.9% and 2.1% INCONCLUSIVE.

Pure: records in, one record out. Runs that were not measured alike cannot be pooled (their
rounds would mean different things), so a difference in what the gate compares is an error
naming the file, not a note.
"""
from __future__ import annotations

from typing import Any, Sequence

from opbench.results.records import InstanceRecord, Measurement, RunRecord, as_plain
from opbench.verdicts.conclusions import measurement_statistics, share_of_round

__all__ = ["PoolError", "check_alike", "pool_baselines"]

# What must be equal for two runs' rounds to be pooled: the pair compared, how a sample was
# taken, and what a round holds.
_SAME_CONFIG = ("reference", "target", "device", "threads", "modes", "backward", "launch",
                "passes", "processes")
_SAME_SETTINGS = ("rounds", "min_sample_time_s", "max_time_s")


class PoolError(ValueError):
    """The baselines cannot be pooled; the message names the file and the difference."""


def _differs(what: str, mine: Any, theirs: Any) -> tuple[str, Any, Any] | None:
    mine, theirs = as_plain(mine), as_plain(theirs)
    return None if mine == theirs else (what, mine, theirs)


def check_alike(records: Sequence[RunRecord], names: Sequence[str]) -> None:
    first = records[0]
    for name, record in zip(names[1:], records[1:]):
        # getattr: the keys compared are named in the tables above
        found = [d for key in _SAME_CONFIG
                 if (d := _differs(key, getattr(record.config, key),
                                   getattr(first.config, key)))]
        found += [d for key in _SAME_SETTINGS
                  if (d := _differs(f"settings.{key}", getattr(record.config.settings, key),
                                    getattr(first.config.settings, key)))]
        if found:
            what, mine, theirs = found[0]
            raise PoolError(f"{name}: {what} is {mine!r}, {names[0]} has {theirs!r}; only "
                            f"baselines measured alike can be pooled")
        differing = record.other_builds(first)
        if differing:
            raise PoolError(f"{name}: " + "; ".join(
                f"{fw} {mine}, {names[0]} has {theirs}" for fw, (mine, theirs)
                in differing.items()) + "; a baseline pools runs of the same code (one "
                "version and build of each framework)")


def _pool_measurement(parts: Sequence[Measurement], reference: str,
                      target: str) -> Measurement:
    """One measurement key of one instance over several runs: rounds concatenated in run
    order (each run's rounds stay paired), statistics redone on the pool."""
    samples = {n: [x for p in parts for x in p.samples_s[n]] for n in parts[0].samples_s}
    order = [list(o) for p in parts for o in p.order]
    # Every run's processes are processes of their own: run 2's process 1 is not run 1's.
    process_of_round: list[Any] = []
    # per round, not first-run-only: a share is (process, pass), and the order-effect test
    # restarts the alternation at every share
    pass_of_round: list[int] = []
    run_of_round: list[int] = []
    for run_index, p in enumerate(parts):
        n = len(p.samples_s[reference])
        labels = p.process_of_round or [1] * n
        process_of_round += [f"{run_index + 1}.{label}" for label in labels]
        pass_of_round += p.pass_of_round or [1] * n
        run_of_round += [run_index] * n
    # the first run's interference line says nothing of the pool: only the pool's own stays
    first = {k: v for k, v in parts[0].to_dict().items() if k != "interference_ruled_out"}
    pooled = {**first, "samples_s": samples, "order": order,
              "run_of_round": run_of_round, "rounds": len(samples[reference]),
              "process_of_round": process_of_round, "pass_of_round": pass_of_round}
    stats = measurement_statistics(samples, reference, target, parts[0].threshold,
                                   order=order or None, groups=process_of_round,
                                   shares=share_of_round(pooled))
    return Measurement.from_dict({**pooled, **stats.as_fields()})


def _pool_instance(versions: Sequence[InstanceRecord], reference: str,
                   target: str) -> InstanceRecord:
    measured = [v for v in versions if v.measured]
    if not measured:
        return versions[0]                  # ERROR / MISMATCH everywhere: as it was
    keys = [k for k in measured[0].measurements
            if all(k in v.measurements for v in measured)]
    return measured[0].replace(
        measurements={k: _pool_measurement([v.measurements[k] for v in measured], reference,
                                           target) for k in keys},
        pooled_runs=len(measured))


def pool_baselines(records: Sequence[RunRecord], names: Sequence[str]) -> RunRecord:
    """records[i] was read from names[i]. One record: returned unchanged. Several: one
    record whose instances carry every run's rounds (`run_of_round` says whose), with
    ratio, interval and verdict recomputed; an instance measured in only some runs pools
    those. `pooled_from` lists the names. The environment is the first run's, with
    machine_id cleared unless every run has the same one (absolute times are compared only
    on one machine). Raises PoolError when the runs were not measured alike."""
    if len(records) != len(names) or not records:
        raise ValueError("one name per record, at least one record")
    if len(records) == 1:
        return records[0]
    check_alike(records, names)
    first = records[0]
    reference, target = first.config.reference, first.config.target
    by_id: dict[str, list[InstanceRecord]] = {}
    for record in records:
        for inst in record.instances:
            by_id.setdefault(inst.id, []).append(inst)
    environment = first.environment
    if len({r.environment.machine_id for r in records}) != 1:
        environment = environment.replace(machine_id=None)
    return first.replace(
        instances=[_pool_instance(versions, reference, target) for versions in by_id.values()],
        environment=environment, pooled_from=list(names))

"""The gate's second stage in fresh processes: a new worker pool (opbench/runner/workers.py).

Why fresh processes: most of a ratio's run-to-run noise on a shared CPU machine is an
offset that one process keeps for its whole life (thread placement, allocator state,
where the frameworks' code landed in memory; 2-8% per instance here, docs/gate.md). A
second stage measured in the first stage's processes shares their offsets, so it cannot
confirm or clear what the first stage saw independently. Replayed on 11 recorded A/A
processes, a second stage from another process gave 0.6% false REGRESSIONs per instance
against 2.2% seen live with a same-process second stage.

Stage 2 uses the same machinery as every run: a pool of `config.processes` new workers
(at least one), each instance's rounds spread over them. The worker spawner is a
parameter (and `workers.spawn_worker` is looked up when a pool is made), so the path is
unit-tested on fake workers.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from opbench.cases.case_files import CaseInstance
from opbench.results.records import InstanceRecord
from opbench.runloop.recorded_run import FROM_ENVIRONMENT

__all__ = ["FreshStageError", "remeasure_in_fresh_processes"]


class FreshStageError(RuntimeError):
    """The fresh workers could not be started or failed; the message says why."""


def remeasure_in_fresh_processes(instances: Sequence[CaseInstance], ids: Sequence[str],
                                 config: Any, *, on_progress: Any = None,
                                 on_pass: Any = None,
                                 spawn: Callable[[int], Any] | None = None,
                                 early_stop: Any = None,
                                 facts_cache: Any = FROM_ENVIRONMENT
                                 ) -> dict[str, InstanceRecord]:
    """Measure `ids` (a subset of `instances`) again, as stage 1 did, in new worker
    processes: {id: instance record}; early_stop (results.sequential_run.EarlyStop): each
    instance stops at the end of the process after which its rule decides it. Raises
    FreshStageError when an id is not among the instances or the workers cannot be
    started. facts_cache: where the per-call floors are kept (runner/machine_facts.py; the
    environment's cache by default, as a run's: stage 1 has just measured or read them)."""
    from opbench.runloop.recorded_run import machine_facts, run_passes
    from opbench.runner.workers import WorkerError, worker_pool
    from opbench.verdicts.conclusions import apply_between_process_prior

    by_id = {inst.id: inst for inst in instances}
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise FreshStageError(f"not in the selection any more: {', '.join(missing)}")
    subset = [by_id[i] for i in ids]
    try:
        with worker_pool(config, spawn=spawn) as pool:
            pool.open()
            machine_facts(pool, config, facts_cache)
            records = run_passes(pool, subset, [], on_progress=on_progress, on_pass=on_pass,
                                 early_stop=early_stop)
    except WorkerError as exc:
        raise FreshStageError(f"the stage-2 worker processes failed: {exc}") from None
    records, _ = apply_between_process_prior(records, config)
    return {inst.id: InstanceRecord.from_dict(record) for inst, record in zip(subset, records)}

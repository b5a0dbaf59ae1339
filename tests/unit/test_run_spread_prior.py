"""The run's between-process prior (verdicts/conclusions.py run_between_process_prior): the
one estimator (stats.run_spread_prior) over every measurement made in several processes,
each measurement's excess remembered by its rounds so that a sequential run, which asks at
every instance it judges, does not recompute them all."""
from __future__ import annotations

import numpy as np

from opbench.config import RunConfig
from opbench.verdicts.conclusions import run_between_process_prior
from opbench.verdicts.stats import between_process_excess, run_spread_prior

CONFIG = RunConfig()
REF, TARGET = CONFIG.names


def _measurement(rng, processes: int, offset_sd: float, rounds: int = 6) -> dict:
    groups = [p for p in range(1, processes + 1) for _ in range(rounds)]
    offsets = {p: rng.normal(0, offset_sd) for p in range(1, processes + 1)}
    target = [1e-3 * np.exp(rng.normal(0, 0.05)) for _ in groups]
    ref = [t * 0.5 * np.exp(offsets[g] + rng.normal(0, 0.05)) for t, g in zip(target, groups)]
    return {"samples_s": {REF: ref, TARGET: target}, "process_of_round": groups}


def _fresh(records) -> object:
    """The prior computed from scratch, every excess recomputed."""
    found = [between_process_excess(m["samples_s"][REF], m["samples_s"][TARGET],
                                    m["process_of_round"])
             for r in records for m in r["measurements"].values()
             if len(set(m["process_of_round"])) > 1]
    return run_spread_prior(found)


def test_the_prior_follows_measurements_that_gain_rounds():
    rng = np.random.default_rng(3)
    records = [{"measurements": {"serial": _measurement(rng, 2, 0.05)}} for _ in range(8)]
    before = run_between_process_prior(records, CONFIG)
    assert before == _fresh(records)
    # every instance gains a third process far off the others: a remembered excess of the
    # first two processes would leave the prior where it was
    for r in records:
        m = r["measurements"]["serial"]
        extra = _measurement(rng, 1, 0.0)
        m["samples_s"][REF] = m["samples_s"][REF] + [x * 1.5 for x in extra["samples_s"][REF]]
        m["samples_s"][TARGET] = m["samples_s"][TARGET] + extra["samples_s"][TARGET]
        m["process_of_round"] = m["process_of_round"] + [3] * len(extra["process_of_round"])
    after = run_between_process_prior(records, CONFIG)
    assert after == _fresh(records)
    assert after.sd > before.sd + 0.1


def test_one_process_measurements_do_not_count():
    rng = np.random.default_rng(4)
    records = [{"measurements": {"serial": _measurement(rng, 1, 0.05)}} for _ in range(8)]
    assert run_between_process_prior(records, CONFIG) is None
    records += [{"measurements": {"serial": _measurement(rng, 3, 0.05)}} for _ in range(5)]
    prior = run_between_process_prior(records, CONFIG)
    assert prior.instances == 5 and prior == _fresh(records)

"""The gate's decision rule: the path table, the two-stage rule, and - by simulation - its
false-alarm rate and power, including the absolute-time path and the second stage.

Simulated runs come from timing_simulation (drift, bursts, per-sample noise); on top, each
run gets a machine-speed factor of its own (the same for both sides of that run), because
two CI runs of the same code never see quite the same machine."""
from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from timing_simulation import NOISY, SHARED_MACHINE, NoiseModel, simulate_runs

from opbench.cli.gate import GATE_DEFAULT_ROUNDS
from opbench.gate.decision import (
                                   PATH_RATIO,
                                   PATH_REFERENCE_TIME,
                                   PATH_TARGET_TIME,
                                   GateVerdict,
                                   RunSamples,
                                   combine_paths,
                                   decide,
                                   needs_remeasure,
                                   staged,
                                   )
from opbench.verdicts.rules import ChangeVerdict

U, R, I, N = (ChangeVerdict.UNCHANGED, ChangeVerdict.REGRESSION, ChangeVerdict.IMPROVEMENT,
              ChangeVerdict.INCONCLUSIVE)
SIMULATED_GATES = 1000
BASELINE_RATIO = 0.9
# Run-to-run machine speed on a shared runner: a few percent, sometimes ten (log-scale sd).
MACHINE_SPEED_SD = 0.05
FALSE_ALARM_LIMIT = 0.01      # the bar: at most 1% of identical pairs fail
POWER_FLOOR = 0.95            # ... and a 20% slowdown caught in at least 95%


# --------------------------------------------------------------------------- the path table

@pytest.mark.parametrize("ratio, target, reference, expected, decided_by", [
    (R, None, None, GateVerdict.REGRESSION, PATH_RATIO),
    (R, R, U, GateVerdict.REGRESSION, f"{PATH_RATIO} + {PATH_TARGET_TIME}"),
    # The ratio fell because the reference got faster while the target did not get slower:
    # the reference did not track the machine, so the ratio cannot convict the target - but
    # nor is the drop cleared: INCONCLUSIVE, never PASS.
    (R, U, I, GateVerdict.INCONCLUSIVE, f"{PATH_RATIO} + {PATH_REFERENCE_TIME}"),
    (R, I, I, GateVerdict.INCONCLUSIVE, f"{PATH_RATIO} + {PATH_REFERENCE_TIME}"),
    (R, ChangeVerdict.NOT_SLOWER, I, GateVerdict.INCONCLUSIVE,
     f"{PATH_RATIO} + {PATH_REFERENCE_TIME}"),
    # ... only then: a target that may have got slower, or a reference merely unchanged,
    # leaves the ratio's regression standing
    (R, N, I, GateVerdict.REGRESSION, PATH_RATIO),
    (R, U, U, GateVerdict.REGRESSION, PATH_RATIO),
    (R, I, N, GateVerdict.REGRESSION, PATH_RATIO),
    # The target alone slowed while the machine demonstrably did not: absolute path decides.
    (N, R, U, GateVerdict.REGRESSION, PATH_TARGET_TIME),
    (U, R, I, GateVerdict.REGRESSION, PATH_TARGET_TIME),
    # The target slowed, but so did the reference (the machine): not the target's fault.
    (N, R, R, GateVerdict.INCONCLUSIVE, PATH_RATIO),
    (U, R, R, GateVerdict.PASS, PATH_RATIO),
    (U, R, N, GateVerdict.PASS, PATH_RATIO),
    (U, None, None, GateVerdict.PASS, PATH_RATIO),
    (I, None, None, GateVerdict.PASS, PATH_RATIO),
    (I, U, R, GateVerdict.PASS, PATH_RATIO),
    # The target is slower in absolute time; the ratio "improved" only because the
    # reference slowed down even more: the ratio cannot vouch for the target.
    (I, R, R, GateVerdict.INCONCLUSIVE, f"{PATH_RATIO} + {PATH_TARGET_TIME}"),
    (N, None, None, GateVerdict.INCONCLUSIVE, PATH_RATIO),
    # Absolute times cannot pass a case the ratio cannot decide (machine speed unknown).
    (N, U, U, GateVerdict.INCONCLUSIVE, PATH_RATIO),
])
def test_combine_paths(ratio, target, reference, expected, decided_by):
    assert combine_paths(ratio, target, reference) == (expected, decided_by)


def test_a_reference_that_sped_up_withholds_a_ratio_regression_only_with_process_intervals():
    """Rounds-only intervals of absolute times are narrower than the host's drift between
    runs: they may not overrule the ratio (a simulated 20% slowdown lost 5% of its catches
    to such spurious "reference improved" verdicts)."""
    assert combine_paths(R, U, I, times_by_process=False) == (GateVerdict.REGRESSION,
                                                              PATH_RATIO)


def samples(reference_s, target_s) -> RunSamples:
    return RunSamples.of(reference_s, target_s)


def test_decide_compares_absolute_times_only_on_the_same_machine():
    rng = np.random.default_rng(1)
    base = samples(1e-3 * np.exp(rng.normal(0, 0.01, 20)), 1e-3 * np.exp(rng.normal(0, 0.01, 20)))
    # A 30% slower machine: both sides slower, the ratio untouched.
    slow_machine = samples(np.array(base.reference_s) * 1.3, np.array(base.target_s) * 1.3)
    other = decide(base, slow_machine, same_machine=False)
    assert other.target_time is None and other.reference_time is None
    assert other.verdict is GateVerdict.PASS and "different machine" in other.reason
    same = decide(base, slow_machine, same_machine=True)
    assert same.target_time.verdict is ChangeVerdict.REGRESSION
    assert same.reference_time.verdict is ChangeVerdict.REGRESSION
    assert same.verdict is GateVerdict.PASS       # the guard: the machine got slower
    assert "target time -23.1%" in same.reason


def test_decide_orientation_a_slower_target_is_a_regression():
    rng = np.random.default_rng(2)
    ref = 1e-3 * np.exp(rng.normal(0, 0.01, 20))
    tgt = 2e-3 * np.exp(rng.normal(0, 0.01, 20))
    decision = decide(samples(ref, tgt), samples(ref, tgt * 1.25), same_machine=True)
    assert decision.verdict is GateVerdict.REGRESSION
    assert decision.decided_by == f"{PATH_RATIO} + {PATH_TARGET_TIME}"
    assert decision.ratio.estimate.change == pytest.approx(0.8, rel=0.02)
    faster = decide(samples(ref, tgt), samples(ref, tgt / 1.25), same_machine=True)
    assert faster.verdict is GateVerdict.PASS
    assert faster.ratio.verdict is ChangeVerdict.IMPROVEMENT


def test_min_effect_is_per_call():
    rng = np.random.default_rng(3)
    ref = 1e-3 * np.exp(rng.normal(0, 0.01, 20))
    tgt = 1e-3 * np.exp(rng.normal(0, 0.01, 20))
    current = samples(ref, tgt * 1.15)    # a 13% ratio drop
    assert decide(samples(ref, tgt), current, min_effect=0.10).verdict is GateVerdict.REGRESSION
    assert decide(samples(ref, tgt), current, min_effect=0.25).verdict is GateVerdict.PASS


def test_unpaired_samples_are_refused():
    with pytest.raises(ValueError, match="equal lengths"):
        decide(samples([1.0, 1.0], [1.0]), samples([1.0], [1.0]))


# --------------------------------------------------------------------------- two stages

def _decision(verdict: GateVerdict):
    rng = np.random.default_rng(4)
    ref = np.exp(rng.normal(0, 0.01, 10))
    base = samples(ref, ref)
    d = decide(base, base)
    return type(d)(verdict=verdict, decided_by=d.decided_by, reason=verdict.value,
                   ratio=d.ratio, target_time=None, reference_time=None, min_effect=0.1)


P, RG, INC = GateVerdict.PASS, GateVerdict.REGRESSION, GateVerdict.INCONCLUSIVE


@pytest.mark.parametrize("first, second, final", [
    (P, None, P),
    (RG, RG, RG),            # confirmed by an independent second measurement
    (RG, P, P),              # not confirmed: the second stage excludes a min_effect drop
    (RG, INC, INC),
    (INC, P, P),
    (INC, INC, INC),
    (INC, RG, INC),          # seen once, in one stage: not enough to fail a merge
    (RG, None, RG),          # the command always runs stage 2; alone, stage 1 stands
])
def test_two_stage_rule(first, second, final):
    s = staged(_decision(first), _decision(second) if second else None)
    assert s.verdict is final
    assert s.remeasured is (second is not None)


def test_a_pass_is_never_remeasured():
    assert not needs_remeasure(GateVerdict.PASS)
    assert needs_remeasure(GateVerdict.REGRESSION) and needs_remeasure(GateVerdict.INCONCLUSIVE)
    with pytest.raises(ValueError, match="no second stage"):
        staged(_decision(P), _decision(RG))


# --------------------------------------------------------------------------- simulation

def _run(rng, rounds: int, slowdown: float, model: NoiseModel, machine_factor: float
         ) -> RunSamples:
    ref, tgt = simulate_runs(rng, 1, rounds, BASELINE_RATIO, model)
    return RunSamples.of(ref[0] * machine_factor, tgt[0] * machine_factor * slowdown)


def gate_rates(seed: int, slowdown: float, *, rounds: int = GATE_DEFAULT_ROUNDS,
               model: NoiseModel = SHARED_MACHINE, same_machine: bool = True,
               machine_shift: float = 1.0, runs: int = SIMULATED_GATES) -> Counter:
    """Final verdict rates of the full two-stage gate over `runs` simulated gates. Each gate
    has its own baseline run; stage 1 and (if asked for) stage 2 are fresh current runs of
    the same code, each on a machine whose speed differs from the baseline's by a random
    factor times machine_shift. slowdown multiplies the target's time in the current runs."""
    rng = np.random.default_rng(seed)
    counts: Counter = Counter()
    for _ in range(runs):
        baseline = _run(rng, rounds, 1.0, model, 1.0)

        def current():
            factor = machine_shift * math.exp(rng.normal(0.0, MACHINE_SPEED_SD))
            return decide(baseline, _run(rng, rounds, slowdown, model, factor),
                          same_machine=same_machine)

        first = current()
        second = current() if needs_remeasure(first.verdict) else None
        counts[staged(first, second).verdict] += 1
    return Counter({k: v / runs for k, v in counts.items()})


def test_identical_code_rarely_fails_the_gate():
    rates = gate_rates(100, 1.0)
    assert rates[GateVerdict.REGRESSION] <= FALSE_ALARM_LIMIT
    # ... and mostly passes outright at the gate's default rounds (the reason for them).
    assert rates[GateVerdict.PASS] >= 0.95


def test_identical_code_on_a_noisy_machine_is_inconclusive_not_failed():
    # Stage 1 alone would fail ~2% of these (a 95% interval is below 1 by chance 2.5% of the
    # time, and NOISY makes the size bar easy); needing both stages squares that away.
    rates = gate_rates(101, 1.0, model=NOISY)
    assert rates[GateVerdict.REGRESSION] <= FALSE_ALARM_LIMIT
    # Most noisy gates cannot exclude a 10% drop. The rest PASS because their interval's low
    # end is above -10% (NOT SLOWER: the one-sided question a gate asks), ~36% at this seed.
    assert rates[GateVerdict.INCONCLUSIVE] >= 0.5
    assert 0.2 <= rates[GateVerdict.PASS] <= 0.5


def test_a_20_percent_slowdown_fails_the_gate():
    # Target time x1.25 = the ratio falls 20%.
    rates = gate_rates(102, 1.25)
    assert rates[GateVerdict.REGRESSION] >= POWER_FLOOR
    assert rates[GateVerdict.PASS] == 0.0


def test_a_20_percent_slowdown_is_caught_even_at_run_default_rounds():
    # A baseline recorded with `opbench run`'s default 15 rounds, and a gate run at 15.
    rates = gate_rates(103, 1.25, rounds=15)
    assert rates[GateVerdict.REGRESSION] >= POWER_FLOOR


def test_a_slowdown_is_caught_on_another_machine_by_the_ratio():
    # Different machine (absolute times not compared) that is also 30% slower overall.
    rates = gate_rates(104, 1.25, same_machine=False, machine_shift=1.3)
    assert rates[GateVerdict.REGRESSION] >= POWER_FLOOR


def test_a_slower_machine_alone_never_fails_the_gate():
    # Same machine id, but 15% slower today (a busy neighbour): both absolute times fall by
    # more than min_effect; the reference-time guard keeps the absolute path quiet and the
    # ratio does not move.
    rates = gate_rates(105, 1.0, machine_shift=1.15)
    assert rates[GateVerdict.REGRESSION] <= FALSE_ALARM_LIMIT
    faster = gate_rates(106, 1.0, machine_shift=1 / 1.15)
    assert faster[GateVerdict.REGRESSION] <= FALSE_ALARM_LIMIT


def _quiet_target_runs(seed: int, slowdown: float, same_machine: bool, runs: int = 400
                       ) -> Counter:
    """A quiet target (0.01 log-sd) measured against a noisy reference (0.12): the ratio
    inherits the reference's noise, the target's own time does not."""
    rng = np.random.default_rng(seed)

    def run(factor: float) -> RunSamples:
        ref = 1e-3 * np.exp(rng.normal(0, 0.12, GATE_DEFAULT_ROUNDS))
        tgt = 1e-3 * factor * np.exp(rng.normal(0, 0.01, GATE_DEFAULT_ROUNDS))
        return RunSamples.of(ref, tgt)

    counts: Counter = Counter()
    for _ in range(runs):
        baseline = run(1.0)
        first = decide(baseline, run(slowdown), same_machine=same_machine)
        second = (decide(baseline, run(slowdown), same_machine=same_machine)
                  if needs_remeasure(first.verdict) else None)
        s = staged(first, second)
        counts[s.verdict] += 1
        if s.verdict is GateVerdict.REGRESSION:
            counts[s.decided_by] += 1
    return counts


def test_the_absolute_path_catches_what_a_noisy_reference_hides():
    # An 11% slowdown, just past min_effect: the target's own time shows it plainly, the
    # ratio only about half the time.
    with_absolute = _quiet_target_runs(107, 1 / 0.89, same_machine=True)
    ratio_only = _quiet_target_runs(107, 1 / 0.89, same_machine=False)
    assert with_absolute[GateVerdict.REGRESSION] >= 0.75 * 400
    assert with_absolute[GateVerdict.REGRESSION] > ratio_only[GateVerdict.REGRESSION] + 0.2 * 400
    assert with_absolute[PATH_TARGET_TIME] > 0    # decided by the target time alone
    # ... without raising false alarms on identical code.
    same = _quiet_target_runs(108, 1.0, same_machine=True)
    assert same[GateVerdict.REGRESSION] <= FALSE_ALARM_LIMIT * 400


# --------------------------------------------------------------------------- process offsets

# Measured on the shipped cases here (docs/gate.md): one instance's ratio moves by a standard
# deviation of 2-8% from one process to the next, ~4% typically, and every round of a
# process shares that offset. Rounds cannot average it away; processes can.
PROCESS_OFFSET_SD = 0.04


def _process(rng, slowdown: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """One process's rounds: the shared-machine noise, plus this process's own offset on
    the target's time (which the ratio does not cancel)."""
    ref, tgt = simulate_runs(rng, 1, GATE_DEFAULT_ROUNDS, BASELINE_RATIO, SHARED_MACHINE)
    return ref[0], tgt[0] * math.exp(rng.normal(0.0, PROCESS_OFFSET_SD)) * slowdown


def process_gate_rates(seed: int, *, stage2_fresh: bool, baseline_processes: int = 1,
                       slowdown: float = 1.0, runs: int = SIMULATED_GATES) -> Counter:
    """Final verdict rates when each process carries an offset. The baseline pools the
    rounds of `baseline_processes` processes (as gate/pool.py does); stage 2 runs either in
    a fresh process (a new offset) or in stage 1's (the same offset, new rounds)."""
    rng = np.random.default_rng(seed)
    counts: Counter = Counter()
    for _ in range(runs):
        parts = [_process(rng) for _ in range(baseline_processes)]
        baseline = RunSamples.of(np.concatenate([p[0] for p in parts]),
                                 np.concatenate([p[1] for p in parts]))
        ref, tgt = simulate_runs(rng, 2, GATE_DEFAULT_ROUNDS, BASELINE_RATIO, SHARED_MACHINE)
        stage1_offset = math.exp(rng.normal(0.0, PROCESS_OFFSET_SD))
        first = decide(baseline, RunSamples.of(ref[0], tgt[0] * stage1_offset * slowdown))
        second = None
        if needs_remeasure(first.verdict):
            offset = (math.exp(rng.normal(0.0, PROCESS_OFFSET_SD)) if stage2_fresh
                      else stage1_offset)
            second = decide(baseline, RunSamples.of(ref[1], tgt[1] * offset * slowdown))
        counts[staged(first, second).verdict] += 1
    return Counter({k: v / runs for k, v in counts.items()})


def test_a_stage_2_in_the_same_process_shares_its_offset_and_false_alarms_follow():
    """Why stage 2 runs in a fresh process (runloop/gate_fresh_stage.py): with one baseline process,
    a same-process stage 2 confirms most of stage 1's false alarms (2.7% of gates at this
    seed); a fresh one needs a second unlucky process (0.6%)."""
    same = process_gate_rates(110, stage2_fresh=False)
    fresh = process_gate_rates(110, stage2_fresh=True)
    assert same[GateVerdict.REGRESSION] > FALSE_ALARM_LIMIT
    assert fresh[GateVerdict.REGRESSION] < same[GateVerdict.REGRESSION] / 2
    assert fresh[GateVerdict.PASS] > same[GateVerdict.PASS]


def test_a_pooled_baseline_and_a_fresh_stage_2_meet_the_bars_despite_process_offsets():
    """The CI job in docs/gate.md: baseline recorded in two processes, stage 2 in a fresh one."""
    identical = process_gate_rates(111, stage2_fresh=True, baseline_processes=2)
    assert identical[GateVerdict.REGRESSION] <= FALSE_ALARM_LIMIT
    assert identical[GateVerdict.PASS] >= 0.95
    slower = process_gate_rates(112, stage2_fresh=True, baseline_processes=2, slowdown=1.25)
    assert slower[GateVerdict.REGRESSION] >= POWER_FLOOR

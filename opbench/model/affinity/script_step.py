"""The script's step, not one of its layers: what a suggestion's saving is "per step" of.

The automatic rule (model/steady.py) takes the smallest period with which the calls repeat,
by API, shapes and dtypes. In a model whose layers have one shape every layer repeats like
that, so the period found is a layer's: measured on the affinity pairs, a torch script of 4
pre-norm layers was replayed as one layer and its layer-norm swap claimed 0.886 ms per step
against the 3.559 ms its fix saves (4 x 0.886 = 3.54), a MindSpore one of 8 layers with a
host sync in each claimed one sync. Each layer reads its own weights, though: the external
tensors a call reads repeat only with the script's step. So the layer period is widened to
the smallest multiple of it over which the externals each call reads repeat as well; where
they never repeat, the period found stays. An external read once in the whole stretch (a
fresh input batch each step, made where no captured call saw it) counts as "a fresh one".
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace

from opbench.model.program import Program, exts_in
from opbench.model.steady import RULE_AUTO, Region, own_time_ns

__all__ = ["script_step_region"]


_FRESH = -1


def _externals_read(program: Program, start: int, end: int) -> list[tuple[int, ...]]:
    """Per call, the externals it reads; one read once in the whole stretch (a step's fresh
    input batch, made where no captured call saw it) is only "a fresh one"."""
    read = [[e.id for e in exts_in(call)] for call in program.calls[start:end]]
    times = Counter(i for ids in read for i in ids)
    return [tuple(i if times[i] > 1 else _FRESH for i in ids) for ids in read]


def _repeats(keys: list[tuple[int, ...]], period: int) -> bool:
    return all(keys[i] == keys[i + period] for i in range(len(keys) - period))


def script_step_region(program: Program, region: Region) -> Region:
    """`region` with its automatic period widened to the script's step (see above); any
    other region (markers, --skip-first-calls, a period the externals agree with) as it is."""
    if region.rule != RULE_AUTO or region.warmup is None or not region.steps:
        return region
    start, end = region.warmup[0], region.steps[-1][1]
    period = region.steps[0][1] - region.steps[0][0]
    keys = _externals_read(program, start, end)
    if period <= 0 or _repeats(keys, period):
        return region
    span = end - start
    for multiple in range(2, span // (2 * period) + 1):
        widened = multiple * period
        if not _repeats(keys, widened):
            continue
        periods = [(start + k * widened, start + (k + 1) * widened)
                   for k in range(span // widened)]
        steady = periods[1:]
        inside = {i for a, b in steady for i in range(a, b)}
        own = own_time_ns(program)
        outside = [c for c in program.calls if c.index not in inside]
        note = (f"the calls repeat every {period} calls (a layer) but the external tensors "
                f"they read every {widened}: the script's step is {widened} calls")
        return replace(region, steps=tuple(steady), warmup=periods[0],
                       excluded_calls=len(outside),
                       excluded_ns=sum(own(c) for c in outside),
                       note="; ".join(n for n in (region.note, note) if n))
    return region

"""SELF-TEST FACILITY - never active unless the environment variable below is set.

`OPBENCH_INJECT_SLOWDOWN=<id-substring>:<factor>` makes `opbench gate` slow down the
*target* side of every instance whose id contains <id-substring> by <factor> (e.g.
`add[shape=256x1024:1.25`), so the gate's own self-test can check that a known slowdown is
caught on the real frameworks. The slowdown is real work, not a sleep or a doctored number:
the target's own call runs again (and is synced) on a fixed fraction of calls - factor 1.25
means one extra call and sync every 4th call - so the measured per-call time grows by the
factor in serial mode (the default; in async mode the extra syncs add a little more).
Forward+backward measurements are left alone. Every output of a gate run with an injection
says so in its first line of notes, and such a run is never recorded in the history.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from opbench.cases.case_files import CaseInstance
from opbench.config import RunConfig
from opbench.runner.session import Session

__all__ = ["INJECT_ENV", "Injection", "InjectingSession", "injection_from_env", "slowed"]

INJECT_ENV = "OPBENCH_INJECT_SLOWDOWN"
# More than doubling a call is not a "slowdown to detect" but a different operator; the
# facility is for testing the gate near its min_effect, so it refuses silly factors.
MAX_FACTOR = 4.0


@dataclass(frozen=True)
class Injection:
    id_substring: str
    factor: float

    def describe(self) -> str:
        return (f"SELF-TEST: {INJECT_ENV} is set - the target side of instances whose id "
                f"contains '{self.id_substring}' is slowed x{self.factor:g} by repeated calls")


def parse_injection(text: str) -> Injection:
    """'<id-substring>:<factor>' -> Injection; ValueError naming the variable otherwise."""
    substring, sep, factor_text = text.rpartition(":")
    try:
        factor = float(factor_text)
    except ValueError:
        factor = float("nan")
    if not sep or not substring or not 1.0 < factor <= MAX_FACTOR:
        raise ValueError(f"{INJECT_ENV} must be '<id-substring>:<factor>' with factor in "
                         f"(1, {MAX_FACTOR:g}], got {text!r}")
    return Injection(substring, factor)


def injection_from_env(environ: Mapping[str, str] = os.environ) -> Injection | None:
    text = environ.get(INJECT_ENV, "").strip()
    return parse_injection(text) if text else None


def slowed(fn: Callable[..., Any], sync: Callable[[], None],
           factor: float) -> Callable[..., Any]:
    """fn, doing (factor - 1) extra synced calls per call on average, spread evenly by an
    accumulator (deterministic: the same calls are repeated in every run)."""
    extra_per_call = factor - 1.0
    owed = [0.0]

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        owed[0] += extra_per_call
        while owed[0] >= 1.0:
            sync()  # the measured call's own sync, before the extra one starts
            fn(*args, **kwargs)
            owed[0] -= 1.0
        return result

    return wrapper


class InjectingSession(Session):
    """A Session whose target-side callables are wrapped by slowed() for matching ids."""

    def __init__(self, config: RunConfig, injection: Injection, **kwargs: Any):
        super().__init__(config, **kwargs)
        self.injection = injection

    def _prepare(self, instance: CaseInstance, arrays: Mapping[str, np.ndarray], name: str,
                 grad: bool):
        prepared = super()._prepare(instance, arrays, name, grad)
        if (not grad and name == self.config.target_name
                and self.injection.id_substring in instance.id):
            prepared.fn = slowed(prepared.fn, prepared.adapter.sync, self.injection.factor)
        return prepared

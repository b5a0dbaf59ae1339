"""Fake frameworks on a fake clock for the pytest plugin's tests (a helper, not a test module).

The plugin runs the real opbench Session (inputs, output check, interleaved measurement,
statistics, verdict); only the frameworks and the clock are fakes, through the plugin's
`pytest_opbench_make_session` hook. A fake framework computes with numpy (the API's last
dotted name: `torch.add` and `mindspore.mint.add` are both numpy.add, so outputs agree unless
a case names different functions) and charges a fixed cost per call to the fake clock, so a
ratio is exactly the ratio of the costs: verdicts are deterministic, with no sleeping.
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from opbench.config import RunConfig
from opbench.frameworks.base import Adapter, Unsupported
from opbench.runner.session import Session

# A clock that moves only when read would make every sample zero: each read costs a tick.
CLOCK_READ_S = 1e-9
# Fake seconds; small so a warm-up of a few fake calls does, not thousands of Python calls.
WARMUP_TIME_S = 1e-3
COSTS_FILE = "fake_costs.json"


class FakeClock:
    """Time advances only by the work charged to it, plus a tick per read."""

    def __init__(self) -> None:
        self.now_s = 0.0

    def __call__(self) -> float:
        self.now_s += CLOCK_READ_S
        return self.now_s

    def charge(self, seconds: float) -> None:
        self.now_s += seconds


class FakeAdapter(Adapter):
    """Charges cost_s per call; with noise_sd, each call's cost is scaled by a seeded
    log-normal factor (the same distribution on both sides, so ratios stay centred on the
    ratio of the costs while single samples scatter, as on a busy machine)."""

    def __init__(self, name: str, cost_s: float, clock: FakeClock, noise_sd: float = 0.0,
                 seed: int = 0):
        self.name = name
        self.cost_s = cost_s
        self.clock = clock
        self.noise_sd = noise_sd
        self._rng = np.random.default_rng(seed)
        self.setup_calls: list[tuple[str, int]] = []

    def version(self) -> str:
        return "0.0+fake"

    def setup(self, device: str, threads: int) -> None:
        self.setup_calls.append((device, threads))

    def threads(self) -> int:
        return self.setup_calls[-1][1] if self.setup_calls else 1

    def device(self) -> str:
        return "cpu"

    def resolve(self, api: str) -> Callable[..., Any]:
        function = getattr(np, api.rsplit(".", 1)[-1])

        def charged(*args: Any, **kwargs: Any) -> Any:
            noise = self._rng.lognormal(0.0, self.noise_sd) if self.noise_sd else 1.0
            self.clock.charge(self.cost_s * noise)
            return function(*args, **kwargs)

        return charged

    def from_numpy(self, array: np.ndarray, dtype: str, requires_grad: bool = False) -> Any:
        return np.array(array, copy=True)

    def to_numpy(self, value: Any) -> Any:
        if isinstance(value, (tuple, list)):
            return tuple(self.to_numpy(v) for v in value)
        return np.asarray(value)

    def sync(self) -> None:
        """Nothing is queued: the fake computes eagerly."""

    def trivial_op(self) -> Callable[[], Any]:
        return lambda: self.clock.charge(self.cost_s / 10)

    def forward_backward(self, fn, args, kwargs, grad_positions, grad_weight=None):
        raise Unsupported("the fake frameworks have no autograd")


class FakeSession(Session):
    """A real Session whose frameworks are FakeAdapters charging `costs_s[name]` per call."""

    def __init__(self, config: RunConfig, costs_s: dict[str, float], noise_sd: float = 0.0):
        config = replace(config, settings=replace(config.settings,
                                                  warmup_time_s=WARMUP_TIME_S))
        super().__init__(config, clock=FakeClock())
        self.costs_s = costs_s
        self.noise_sd = noise_sd

    def open(self) -> None:
        for seed, name in enumerate(self.config.frameworks):
            adapter = FakeAdapter(name, self.costs_s[name], self.clock, self.noise_sd, seed)
            adapter.setup(self.config.device, self.config.threads)
            self.adapters[name] = adapter


def session_from_costs_file(directory: Path, config: RunConfig) -> FakeSession:
    """The FakeSession described by `fake_costs.json` in `directory`:
    {"costs_s": {"torch": 1e-4, "mindspore": 5e-4}, "noise_sd": 0.0}."""
    spec = json.loads((directory / COSTS_FILE).read_text())
    return FakeSession(config, spec["costs_s"], spec.get("noise_sd", 0.0))

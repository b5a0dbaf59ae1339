"""Fake frameworks for runner, report and CLI tests: numpy-backed adapters whose calls cost
a chosen amount of *fake* time, so verdicts are deterministic and no real framework (or real
waiting) is involved.

A FakeAdapter named "torch" or "mindspore" resolves API paths from a dict of numpy
functions; every call advances a shared FakeClock by that API's cost. Case files can then
use ordinary `torch:` / `mindspore:` sections.
"""
from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from opbench.cases.case_files import expand, load_cases
from opbench.config import MeasureSettings, RunConfig
from opbench.frameworks.base import Adapter, UnknownAPI
from opbench.runner.session import Session

# Small enough that a whole fake run takes well under a second of real time, large enough
# that calibration needs a few dozen loops per sample (like a real op).
OP_COST_S = 1e-4
TRIVIAL_COST_S = 2e-5
CLOCK_TICK_S = 1e-9

FAST_SETTINGS = MeasureSettings(rounds=6, min_sample_time_s=2e-3, warmup_time_s=1e-3,
                                max_time_s=1.0)


class FakeClock:
    """Time moves when fake work says so, plus one tick per read (a real clock never returns
    the same value forever, and calibration reads it in a loop)."""

    def __init__(self, tick_s: float = CLOCK_TICK_S):
        self.t = 0.0
        self.tick_s = tick_s

    def advance(self, seconds: float) -> None:
        self.t += seconds

    def __call__(self) -> float:
        self.t += self.tick_s
        return self.t


def _raise_runtime_error(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("fake kernel failed\n  C++ stack line 1\n  C++ stack line 2")


def _raise_keyboard_interrupt(*args: Any, **kwargs: Any) -> Any:
    raise KeyboardInterrupt


def default_functions(name: str) -> dict[str, Callable[..., Any]]:
    return {
        f"{name}.add": np.add,
        f"{name}.neg": np.negative,
        f"{name}.sin": np.sin,
        f"{name}.split2": lambda x: tuple(np.split(x, 2)),
        f"{name}.boom": _raise_runtime_error,
        f"{name}.interrupt": _raise_keyboard_interrupt,
    }


class FakeAdapter(Adapter):
    """numpy underneath; each resolved call advances `clock` by its cost."""

    def __init__(self, name: str, clock: FakeClock, cost_s: float = OP_COST_S,
                 costs: Mapping[str, float] | None = None,
                 functions: Mapping[str, Callable[..., Any]] | None = None,
                 trivial_cost_s: float = TRIVIAL_COST_S, grad_scale: float = 1.0,
                 build_id: str | None = None):
        self.name = name
        self.build_id = build_id          # what build() reports (None: no build known)
        self.clock = clock
        self.cost_s = cost_s
        self.costs = dict(costs or {})
        self.functions = {**default_functions(name), **(functions or {})}
        self.trivial_cost_s = trivial_cost_s
        self.grad_scale = grad_scale      # != 1 makes this side's gradients wrong
        self.calls: Counter[str] = Counter()
        self._device, self._threads = "cpu", 1

    def version(self) -> str:
        return "0.0-fake"

    def build(self) -> str | None:
        return self.build_id

    def setup(self, device: str, threads: int) -> None:
        self._device, self._threads = device, threads

    def threads(self) -> int:
        return self._threads

    def device(self) -> str:
        return self._device

    def resolve(self, api: str) -> Callable[..., Any]:
        if api not in self.functions:
            raise UnknownAPI(f"{api!r} does not exist in fake {self.name}")
        fn, cost_s = self.functions[api], self.costs.get(api, self.cost_s)

        def timed(*args: Any, **kwargs: Any) -> Any:
            self.calls[api] += 1
            self.clock.advance(cost_s)
            return fn(*args, **kwargs)

        return timed

    def from_numpy(self, array: np.ndarray, dtype: str, requires_grad: bool = False) -> Any:
        return np.array(array, copy=True)

    def to_numpy(self, value: Any) -> Any:
        if isinstance(value, (tuple, list)):
            return tuple(self.to_numpy(v) for v in value)
        return np.asarray(value)

    def sync(self) -> None:
        """numpy-backed: nothing is ever queued."""

    def trivial_op(self) -> Callable[[], Any]:
        def trivial() -> None:
            self.clock.advance(self.trivial_cost_s)
        return trivial

    def forward_backward(self, fn, args, kwargs, grad_positions, grad_weight=None):
        """Central differences of sum(output * weight): exact enough for the linear and
        smooth ops used here, and the same on both sides unless grad_scale says otherwise."""
        step = 1e-6

        def loss(call_args: tuple) -> float:
            out = fn(*call_args, **kwargs)
            weight = 1.0 if grad_weight is None else np.asarray(grad_weight, dtype=np.float64)
            return float(np.sum(np.asarray(out, dtype=np.float64) * weight))

        def run() -> tuple[Any, tuple[np.ndarray, ...]]:
            output = fn(*args, **kwargs)
            grads = []
            for position in grad_positions:
                base = np.asarray(args[position], dtype=np.float64)
                grad = np.zeros_like(base)
                for index in np.ndindex(base.shape):
                    values = []
                    for sign in (1.0, -1.0):
                        moved = base.copy()
                        moved[index] += sign * step
                        call_args = list(args)
                        call_args[position] = moved
                        values.append(loss(tuple(call_args)))
                    grad[index] = (values[0] - values[1]) / (2 * step)
                grads.append((grad * self.grad_scale).astype(np.float32))
            return output, tuple(grads)

        return run


def fake_session(config: RunConfig, clock: FakeClock | None = None,
                 **target_options: Any) -> Session:
    """A Session whose reference and target are FakeAdapters sharing one fake clock;
    target_options (cost_s, costs, functions, grad_scale) shape the target's behaviour."""
    clock = clock or FakeClock()
    session = Session(config, clock)
    session.adapters = {
        config.reference_name: FakeAdapter(config.reference_name, clock),
        config.target_name: FakeAdapter(config.target_name, clock, **target_options),
    }
    for adapter in session.adapters.values():
        adapter.setup(config.device, config.threads)
    return session


def fake_config(**overrides: Any) -> RunConfig:
    options: dict[str, Any] = {"reference": "torch", "target": "mindspore", "threads": 2,
                               "settings": FAST_SETTINGS}
    options.update(overrides)
    return RunConfig(**options)


def write_case_file(directory: Path, text: str, name: str = "cases.yaml") -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def load_instances(path: Path) -> list:
    return [inst for case in load_cases([path]) for inst in expand(case)]


def binary_case(name: str, torch_api: str = "torch.add", mindspore_api: str = "mindspore.add",
                shape: str = "[4, 8]", extra: str = "") -> str:
    """YAML for one case calling api(x, y) in both frameworks (indented as a list item)."""
    return f"""
  - name: {name}
    inputs:
      x: {{shape: {shape}}}
      y: {{shape: {shape}}}
    torch: {{api: {torch_api}, args: [$x, $y]}}
    mindspore: {{api: {mindspore_api}, args: [$x, $y]}}
{textwrap.indent(textwrap.dedent(extra).strip(), '    ') if extra.strip() else ''}"""


def case_file(directory: Path, *cases: str, name: str = "cases.yaml") -> Path:
    return write_case_file(directory, "cases:" + "".join(cases) + "\n", name)


def fake_session_class(target_options: Mapping[str, Any] | None = None) -> type[Session]:
    """A Session class whose open() installs FakeAdapters on a fake clock instead of
    importing frameworks: for code that builds its own Session (the CLI, the gate's stage-2
    child). target_options: FakeAdapter keywords for the target side, read at every open(),
    so a test may change them between runs."""
    options = target_options if target_options is not None else {}

    class FakeOpeningSession(Session):
        def __init__(self, config, clock=None, **kwargs):
            super().__init__(config, FakeClock(), **kwargs)

        def open(self) -> None:
            cfg = self.config      # a side's label names its adapter's framework
            self.adapters = {
                cfg.reference_name: FakeAdapter(cfg.reference.framework, self.clock),
                cfg.target_name: FakeAdapter(cfg.target.framework, self.clock, **options)}
            for adapter in self.adapters.values():
                adapter.setup(self.config.device, self.config.threads)

    return FakeOpeningSession

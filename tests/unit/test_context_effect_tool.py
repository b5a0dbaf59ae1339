"""tools/context_effect.py: the wrapper that times a function inside a script keeps one sample
per call under its argument shape, keeps the last arguments to re-run them back to back, and
puts the original back. Framework-free (a fake module stands in for torch)."""
from __future__ import annotations

import sys
import types
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import context_effect  # noqa: E402  (tools/ is not a package)


class _Shaped:
    def __init__(self, *shape: int) -> None:
        self.shape = shape
        self.dtype = "torch.float32"


def _fake_module(monkeypatch) -> types.ModuleType:
    module = types.ModuleType("fake_framework")
    module.double = lambda x, scale=2: ("doubled", x, scale)
    monkeypatch.setitem(sys.modules, "fake_framework", module)
    return module


def test_each_call_is_timed_under_its_shape_and_the_original_comes_back(monkeypatch):
    module = _fake_module(monkeypatch)
    original = module.double
    samples, last = defaultdict(list), {}
    restore = context_effect._instrument("fake_framework.double", samples, last)
    assert module.double is not original
    a, b = _Shaped(2, 3), _Shaped(4)
    assert module.double(a) == ("doubled", a, 2)     # results pass through unchanged
    module.double(a, scale=3)
    module.double(b)
    keys = sorted(samples)
    assert keys == [("fake_framework.double", "float32[2, 3]"),
                    ("fake_framework.double", "float32[2, 3], scale=int"),
                    ("fake_framework.double", "float32[4]")]
    assert all(len(samples[k]) == 1 and samples[k][0] >= 0 for k in keys)
    fn, args, kwargs = last[("fake_framework.double", "float32[2, 3], scale=int")]
    assert fn is original and args == (a,) and kwargs == {"scale": 3}
    restore()
    assert module.double is original


def test_back_to_back_runs_the_kept_call_the_asked_number_of_times():
    calls = []
    times = context_effect._back_to_back(lambda *a, **k: calls.append((a, k)), (1,), {"k": 2}, 7)
    assert len(times) == 7 and all(t >= 0 for t in times)
    assert calls == [((1,), {"k": 2})] * 7

"""Shared fakes for the trace unit tests: a ticking clock, fake tensors, a recorded trace."""
from __future__ import annotations

from opbench.trace.events import FUNCTION, MODULE, SCOPE, TENSOR_METHOD, CallSite, TensorSpec
from opbench.trace.recorder import Recorder, TraceData


class FakeTensor:
    def __init__(self, *shape: int, dtype: str = "float32"):
        self.shape, self.dtype = shape, dtype


def fake_spec(value):
    return TensorSpec(value.shape, value.dtype) if isinstance(value, FakeTensor) else None


class TickClock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        self.now += 1
        return self.now

    def work(self, ns: int) -> None:
        self.now += ns


def site(framework: str, api: str, kind: str = FUNCTION, skip: int = 0) -> CallSite:
    return CallSite(framework, api, kind, skip)


def recorded(nested: bool = False, timing: str = "serial") -> TraceData:
    """A small trace: a user model calling a layer (which adds), an operator, a failure,
    in torch; one MindSpore call."""
    clock = TickClock()
    recorder = Recorder(nested=nested, timing=timing, clock=clock)
    for framework in ("torch", "mindspore"):
        recorder.add_framework(framework, sync=lambda: None, tensor_spec=fake_spec)
    recorder.start()
    add = site("torch", "torch.add")
    layer = site("torch", "torch.nn.Linear", MODULE, skip=1)
    user = site("torch", "Model", SCOPE, skip=1)
    plus = site("torch", "torch.Tensor.__add__", TENSOR_METHOD)
    x = FakeTensor(2, 3)

    def work(ns):
        return lambda *a, **k: clock.work(ns)

    def linear(module, value):
        clock.work(100)
        return recorder.call(add, work(300), (value, value), {})

    def model(module, value):
        recorder.call(layer, linear, (object(), value), {})
        recorder.call(plus, work(50), (value, value), {})
        recorder.call(plus, work(70), (value, value), {})

    recorder.call(user, model, (object(), x), {})
    try:
        recorder.call(add, lambda *a: 1 / 0, (x, FakeTensor(7)), {})
    except ZeroDivisionError:
        pass
    recorder.call(site("mindspore", "mindspore.mint.add"), work(200), (x, 1.0), {})
    recorder.stop()
    return recorder.data()

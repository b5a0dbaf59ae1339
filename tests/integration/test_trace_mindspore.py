"""opbench trace on real MindSpore: counts, nesting, exceptions, restoration, cases."""
from __future__ import annotations

import importlib
import json
import sys
from collections import Counter

import numpy as np
import pytest

ms = pytest.importorskip("mindspore")
from mindspore import Tensor, mint, nn, ops  # noqa: E402

from opbench.cases.case_files import expand, load_cases
from opbench.config import RunConfig
from opbench.frameworks import get_adapter
from opbench.runloop.recorded_run import check_only, run
from opbench.trace import trace
from opbench.trace.events import SCOPE
from opbench.trace.mindspore_intercept import FUNCTION_NAMESPACES

pytestmark = pytest.mark.integration
THREADS = 2


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(8, 8)
        self.add = ops.Add()
        self.w = ms.Parameter(Tensor(np.ones((8, 4), np.float32)))

    def construct(self, x, y):
        h = mint.nn.functional.relu(self.fc(x))
        s = h + y
        p = s * 2
        m = s @ self.w
        r = s[0]
        t = mint.cat([s, p])
        q = self.add(t, 1.0)
        return q.sum() + m.sum() + r.sum()


FORWARD_CALLS = {"mindspore.nn.Dense": 1, "mindspore.mint.nn.functional.relu": 1,
                 "mindspore.Tensor.__add__": 3, "mindspore.Tensor.__mul__": 1,
                 "mindspore.Tensor.__matmul__": 1, "mindspore.Tensor.__getitem__": 1,
                 "mindspore.mint.cat": 1, "mindspore.ops.Add": 1, "mindspore.Tensor.sum": 3}


@pytest.fixture(scope="module")
def setup_mindspore():
    # Thread count and device are process-global in MindSpore: set them before any operator.
    get_adapter("mindspore").setup("cpu", THREADS)


@pytest.fixture
def net_and_inputs(setup_mindspore):
    rng = np.random.default_rng(0)
    return (Net(), Tensor(rng.standard_normal((4, 8)).astype(np.float32)),
            Tensor(rng.standard_normal((4, 8)).astype(np.float32)))


def api_calls(tracer):
    counts = Counter()
    for key, stats in tracer.data.stats.items():
        if key.kind != SCOPE:
            counts[key.api] += stats.calls
    return dict(counts)


def callables(owner):
    # (data attributes such as Cell.total_instance_count change on their own)
    return {k: id(v) for k, v in vars(owner).items() if callable(v)}


def interception_state():
    namespaces = [importlib.import_module(name) for name in FUNCTION_NAMESPACES]
    primitives = {name: id(vars(cls).get("__call__")) for name, cls in vars(ops).items()
                  if isinstance(cls, type) and issubclass(cls, ops.Primitive)}
    return (callables(Tensor), callables(nn.Cell), [callables(m) for m in namespaces],
            primitives, list(sys.meta_path))


def test_call_counts_match_what_the_network_called(net_and_inputs):
    net, x, y = net_and_inputs
    with trace(framework="mindspore") as tracer:
        for _ in range(2):
            net(x, y)
        z = x + y
    assert z.shape == (4, 8)
    expected = {api: 2 * n for api, n in FORWARD_CALLS.items()}
    expected["mindspore.Tensor.__add__"] += 1
    assert api_calls(tracer) == expected
    assert all(e.depth == 0 for e in tracer.data.events)


def test_nested_tracing_shows_what_apis_call_inside(net_and_inputs):
    net, x, y = net_and_inputs
    with trace(framework="mindspore", nested=True) as tracer:
        net(x, y)
    calls = api_calls(tracer)
    for api, n in FORWARD_CALLS.items():
        assert calls[api] >= n
    events = tracer.data.events
    by_index = {e.index: e for e in events}
    dense_children = {e.api for e in events
                      if e.parent is not None and by_index[e.parent].api == "mindspore.nn.Dense"}
    assert "mindspore.ops.MatMul" in dense_children
    assert sum(calls.values()) > sum(FORWARD_CALLS.values())
    [scope] = [e for e in events if e.kind == SCOPE]
    assert scope.api == "Net"


class Boom(Exception):
    pass


def test_a_failing_call_is_recorded_and_reraised_unchanged(net_and_inputs):
    net, x, y = net_and_inputs
    layer = nn.Dense(8, 2)
    error = Boom("from a hook inside nn.Dense")

    def explode(cell, args):
        raise error

    layer.register_forward_pre_hook(explode)
    with trace(framework="mindspore") as tracer:
        with pytest.raises(Boom) as caught:
            layer(x)
        with pytest.raises(ValueError):
            mint.reshape(x, (7,))
        net(x, y)
    assert caught.value is error
    failed = {k.api: s.failed for k, s in tracer.data.stats.items() if s.failed}
    assert failed == {"mindspore.nn.Dense": 1, "mindspore.mint.reshape": 1}
    assert api_calls(tracer)["mindspore.mint.cat"] == 1


def test_everything_is_restored_also_when_the_traced_code_raises(net_and_inputs):
    net, x, y = net_and_inputs
    before = interception_state()
    with trace(framework="mindspore", nested=True):
        assert mint.add is not vars(mint).get("__opbench_never__")
        assert getattr(mint.add, "__opbench_trace_original__", None) is not None
        net(x, y)
    assert interception_state() == before
    with pytest.raises(ZeroDivisionError):
        with trace(framework="mindspore"):
            net(x, y)
            1 / 0
    assert interception_state() == before
    assert not hasattr(mint.add, "__opbench_trace_original__")
    assert (x + y).shape == (4, 8)


def test_outputs_and_overhead(net_and_inputs, tmp_path):
    net, x, y = net_and_inputs
    with trace(framework="mindspore", nested=True, sync="async") as tracer:
        net(x, y)
    assert "host-side launch time only" in tracer.table()
    [overhead] = tracer.data.overheads
    assert overhead.framework == "mindspore" and overhead.traced_ns_per_call > 0
    counts = tracer.export_chrome_trace(tmp_path / "trace.json")
    assert counts == {"mindspore (async timing) / MainThread": len(tracer.data.events)}
    loaded = json.loads((tmp_path / "trace.json").read_text())
    assert loaded["otherData"]["timing"] == "async"


def test_emitted_cases_load_and_run(net_and_inputs, tmp_path):
    net, x, y = net_and_inputs
    with trace(framework="mindspore") as tracer:
        net(x, y)
    report = tracer.emit_cases(tmp_path / "cases.yaml")
    assert {"add", "mul", "getitem", "cat", "relu", "sum"} <= {c["op"] for c in report.cases}
    reasons = {s.api: s.reason for s in report.skipped}
    assert "constructor" in reasons["mindspore.nn.Dense"]
    assert "primitive" in reasons["mindspore.ops.Add"]
    instances = [i for case in load_cases([tmp_path / "cases.yaml"]) for i in expand(case)]
    record = run(instances, check_only(RunConfig(threads=THREADS)))
    verdicts = {r.id: r.verdict for r in record.instances}
    assert set(verdicts.values()) == {"PASS"}, verdicts

"""Case emission: valid case YAML for both frameworks, and a list of what could not be one."""
from __future__ import annotations

import yaml
from trace_helpers import FakeTensor, TickClock, fake_spec

from opbench.cases.case_files import expand, load_cases
from opbench.frameworks.apimap import ApiMapping, MappingEntry
from opbench.trace.emit import build_cases, case_api, emit_cases, op_name
from opbench.trace.events import FUNCTION, MODULE, TENSOR_METHOD, CallSite
from opbench.trace.mapping_fit import call_fits
from opbench.trace.recorder import Recorder

MAPPING = ApiMapping([
    MappingEntry("torch.nn.functional.softmax", "mindspore.mint.nn.functional.softmax",
                 "functional", "same"),
    MappingEntry("torch.Tensor.__add__", "mindspore.Tensor.__add__", "tensor_method", "same"),
    MappingEntry("torch.empty", "mindspore.mint.empty", "function", "same"),
    MappingEntry("torch.sum", "mindspore.ops.sum", "function", "differs",
                 "argument names differ: torch (dim, keepdim) vs MindSpore (axis, keep_dims)"),
    MappingEntry("torch.addmm", "mindspore.mint.addmm", "function", "differs",
                 "MindSpore lacks torch argument(s): out_dtype"),
    MappingEntry("torch.Tensor.backward", None, "tensor_method", "none", "no tape"),
])


def trace_of(calls, framework="torch"):
    """calls: (api, kind, args, kwargs, times)."""
    recorder = Recorder(clock=TickClock())
    recorder.add_framework(framework, sync=lambda: None, tensor_spec=fake_spec)
    recorder.start()
    for api, kind, args, kwargs, times in calls:
        for _ in range(times):
            recorder.call(CallSite(framework, api, kind, 1 if kind == MODULE else 0),
                          lambda *a, **k: None, args, kwargs)
    recorder.stop()
    return recorder.data()


X = FakeTensor(4, 8)


def test_one_case_per_api_and_shapes_with_both_frameworks():
    data = trace_of([
        ("torch.nn.functional.softmax", FUNCTION, (X,), {"dim": -1}, 3),
        ("torch.nn.functional.softmax", FUNCTION, (X,), {"dim": 0}, 1),   # same shapes: merged
        ("torch.nn.functional.softmax", FUNCTION, (FakeTensor(2),), {"dim": -1}, 1),
        ("torch.Tensor.__add__", TENSOR_METHOD, (X, X), {}, 2),
    ])
    emitted, skipped = build_cases(data, MAPPING)
    cases = [e.case for e in emitted]
    assert [c["name"] for c in cases] == ["trace_softmax_1", "trace_softmax_2", "trace_add_1"]
    first = cases[0]
    assert first["torch"] == {"api": "torch.nn.functional.softmax", "args": ["$x0"],
                              "kwargs": {"dim": -1}}         # the most frequent argument set
    assert first["mindspore"] == {"api": "mindspore.mint.nn.functional.softmax",
                                  "args": ["$x0"], "kwargs": {"dim": -1}}
    assert first["inputs"] == {"x0": {"shape": [4, 8], "dtype": "float32", "dist": "normal"}}
    assert cases[2]["torch"]["api"] == "Tensor.__add__"
    assert cases[2]["mindspore"]["api"] == "Tensor.__add__"
    assert cases[2]["torch"]["args"] == ["$x0", "$x1"] and skipped == []


def test_what_cannot_become_a_case_is_listed_with_the_reason():
    data = trace_of([
        ("torch.nn.Linear", MODULE, (object(), X), {}, 1),
        ("torch.Tensor.backward", TENSOR_METHOD, (FakeTensor(),), {}, 1),
        ("torch.unmapped", FUNCTION, (X,), {}, 1),
        ("torch.Tensor.__add__", TENSOR_METHOD, (X, slice(0, 2)), {}, 1),
        ("torch.nn.functional.softmax", FUNCTION, (FakeTensor(3, dtype="complex64"),), {}, 1),
    ])
    emitted, skipped = build_cases(data, MAPPING)
    assert emitted == []
    reasons = {s.api: s.reason for s in skipped}
    assert "constructor" in reasons["torch.nn.Linear"]
    assert reasons["torch.Tensor.backward"] == "no MindSpore equivalent: no tape"
    assert "no entry in the API mapping" in reasons["torch.unmapped"]
    assert reasons["torch.Tensor.__add__"] == "arguments a case file cannot hold (slice)"
    assert "complex64" in reasons["torch.nn.functional.softmax"]


def test_mindspore_calls_map_back_to_torch():
    data = trace_of([("mindspore.Tensor.__add__", TENSOR_METHOD, (X, 2.0), {}, 1)],
                    framework="mindspore")
    [item], _ = build_cases(data, MAPPING)
    assert item.case["torch"] == {"api": "Tensor.__add__", "args": ["$x0", 2.0]}
    assert item.case["mindspore"]["api"] == "Tensor.__add__"


def test_differences_a_call_does_not_touch_keep_the_case_runnable():
    data = trace_of([
        ("torch.sum", FUNCTION, (X, 1), {}, 1),                # positional: fits
        ("torch.sum", FUNCTION, (FakeTensor(3, 3),), {"dim": 1}, 1),   # keyword dim: draft
        ("torch.addmm", FUNCTION, (X, X, X), {}, 1),
    ])
    emitted, _ = build_cases(data, MAPPING)
    drafts = {e.case["name"]: e.draft for e in emitted}
    assert drafts["trace_sum_1"] is None and drafts["trace_addmm_1"] is None
    assert "dim by keyword" in drafts["trace_sum_2"]
    assert emitted[0].note.startswith("argument names differ")


def test_call_fits_reads_the_mapping_notes():
    renamed = MAPPING.from_torch("torch.sum")
    assert call_fits(renamed, "torch", []) == (True, "")
    assert call_fits(renamed, "torch", ["dim"])[0] is False
    assert call_fits(renamed, "mindspore", ["axis"])[0] is False
    lacks = MAPPING.from_torch("torch.addmm")
    assert call_fits(lacks, "torch", ["out_dtype"])[0] is False
    assert call_fits(lacks, "mindspore", ["out_dtype"]) == (True, "")
    odd = MappingEntry("torch.x", "mindspore.x", "function", "differs", "returns a tuple")
    assert call_fits(odd, "torch", []) == (False, "returns a tuple")


def test_emitted_file_is_valid_and_loads(tmp_path):
    data = trace_of([
        ("torch.nn.functional.softmax", FUNCTION, (X,), {"dim": -1}, 1),
        ("torch.Tensor.__add__", TENSOR_METHOD, (X, FakeTensor(8, dtype="int64")), {}, 1),
        ("torch.empty", FUNCTION, ([2, 3],), {}, 1),
        ("torch.sum", FUNCTION, (FakeTensor(3, 3),), {"dim": 1}, 1),
        ("torch.nn.functional.softmax", FUNCTION, (FakeTensor(5), "$weird"), {}, 1),
        ("torch.unmapped", FUNCTION, (X,), {}, 1),
    ])
    path = tmp_path / "cases.yaml"
    report = emit_cases(data, path, MAPPING)
    assert report.written and len(report.cases) == 4 and len(report.drafts) == 1
    text = path.read_text()
    assert "&id" not in text and "*id" not in text        # no YAML aliases
    assert "#   torch: torch.unmapped(f32[4,8]) x1: no entry" in text
    assert "# DRAFT - mapping differs" in text and "  # - name: trace_sum_1" in text
    loaded = yaml.safe_load(text)
    by_name = {c["name"]: c for c in loaded["cases"]}
    assert by_name["trace_empty_1"]["compare"] == "shape"     # uninitialised output
    assert by_name["trace_add_1"]["inputs"]["x1"] == {"shape": [8], "dtype": "int64",
                                                      "dist": "randint", "low": 0, "high": 1}
    assert by_name["trace_softmax_2"]["torch"]["args"] == ["$x0", "$$weird"]
    cases = load_cases([path])
    assert sorted(c.name for c in cases) == sorted(by_name)
    for case in cases:
        [instance] = expand(case)
        assert set(instance.calls) == {"torch", "mindspore"}


def test_nothing_is_written_when_no_case_can_be_made(tmp_path):
    data = trace_of([("torch.unmapped", FUNCTION, (X,), {}, 1)])
    path = tmp_path / "cases.yaml"
    report = emit_cases(data, path, MAPPING)
    assert not report.written and not path.exists() and len(report.skipped) == 1


def test_names():
    assert op_name("torch.nn.functional.softmax") == "softmax"
    assert op_name("torch.Tensor.__getitem__") == "getitem"
    assert op_name("torch.Tensor.add_") == "add_"
    assert case_api("torch", "torch.Tensor.sum") == "Tensor.sum"
    assert case_api("mindspore", "mindspore.mint.sum") == "mindspore.mint.sum"

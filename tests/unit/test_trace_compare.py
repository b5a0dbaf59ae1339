"""`opbench trace compare A.json B.json`: two hand-made trace records joined API by API
(framework-free: the records are written here, as opbench trace writes them)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from opbench.cli.main import cli
from opbench.cli.trace import trace_command
from opbench.report.trace_compare import render_comparison_markdown
from opbench.trace.compare import (COMPARE_FORMAT, compare_loaded, compare_traces,
                                   comparison_json, operation_of)
from opbench.trace.events import TensorSpec
from opbench.trace.record_format import RECORD_FORMAT, RECORD_VERSION, signature_json
from opbench.trace.record_read import TraceRecordError, load_trace_record, read_trace_record
from opbench.trace.recorder import Recorder
from opbench.trace.events import CallSite, Signature
from opbench.trace.signature import format_inputs
from opbench.trace.steps import marked_steps

F32 = "float32"


def call(api: str, *shapes: tuple[int, ...], ns: int = 1000, kind: str = "") -> dict:
    """One call: its API, its tensor inputs' shapes (float32) and its time."""
    if not kind:
        kind = "tensor_method" if ".Tensor." in api else "function"
    return {"api": api, "kind": kind, "shapes": shapes, "ns": ns}


def record(framework: str, calls: list[dict], markers: tuple[int, ...] = (),
           nested_parents: dict[int, int] | None = None) -> dict:
    """A trace record as opbench trace writes it: summary rows grouped by API and inputs,
    signatures, events (index = position) and optional step marks (event indices)."""
    signatures: list[Signature] = []
    events, summary = [], {}
    parents = nested_parents or {}
    for index, c in enumerate(calls):
        sig = Signature(tuple(TensorSpec(s, F32) for s in c["shapes"]), ())
        if sig not in signatures:
            signatures.append(sig)
        parent = parents.get(index)
        events.append({"index": index, "framework": framework, "api": c["api"],
                       "kind": c["kind"], "thread": 1, "start_ns": index * 10_000,
                       "duration_ns": c["ns"], "depth": 0 if parent is None else 1,
                       "parent": parent, "signature": signatures.index(sig),
                       "failed": False, "error": None})
        row = summary.setdefault((c["api"], c["kind"], format_inputs(sig)),
                                 {"framework": framework, "api": c["api"], "kind": c["kind"],
                                  "inputs": format_inputs(sig), "calls": 0, "failed": 0,
                                  "total_ns": 0, "self_ns": 0})
        row["calls"] += 1
        row["total_ns"] += c["ns"]
    return {"format": RECORD_FORMAT, "version": RECORD_VERSION,
            "settings": {"timing": "serial", "nested": bool(parents)},
            "frameworks": {framework: {"status": "traced", "version": "1.0"}},
            "dropped_events": 0, "summary": list(summary.values()),
            "markers": [{"at": at, "label": ""} for at in markers],
            "signatures": [signature_json(s) for s in signatures], "events": events}


def write(path: Path, data: dict) -> str:
    path.write_text(json.dumps(data))
    return str(path)


TORCH = [call("torch.nn.Linear", (2, 8), ns=4000, kind="module"),
         call("torch.Tensor.permute", (2, 8, 4)),
         call("torch.matmul", (2, 8), (8, 8), ns=3000),
         call("torch.matmul", (2, 8), (8, 8), ns=3000),
         call("torch.nn.LayerNorm", (2, 8), ns=2000, kind="module"),
         call("torch.Tensor.unbind", (3, 8))]
PORT = [call("mindspore.mint.nn.Linear", (2, 8), ns=8000, kind="module"),
        call("mindspore.mint.permute", (2, 8, 4)),
        call("mindspore.mint.matmul", (2, 8), (8, 8), ns=6000),
        call("mindspore.mint.matmul", (2, 8), (8, 8), ns=6000),
        call("mindspore.Tensor.astype", (2, 8), ns=5000),            # a cast the port added
        call("mindspore.ops.LayerNorm", (2, 8), (8,), (8,), ns=4000, kind="primitive"),
        call("mindspore.Tensor.__getitem__", (3, 8)),
        call("mindspore.Tensor.__getitem__", (3, 8))]


def compare(torch_calls=TORCH, port_calls=PORT, **kw):
    return compare_loaded(read_trace_record(record("torch", torch_calls), "a.json"),
                          read_trace_record(record("mindspore", port_calls), "b.json"), **kw)


def rows_by_operation(comparison):
    return {r.operation: r for r in comparison.rows}


def test_a_script_and_its_port_join_through_the_mapping_with_counts_times_and_ratio():
    rows = rows_by_operation(compare())
    matmul = rows["torch.matmul"]
    assert matmul.joined_by == "mapping"
    assert (matmul.a.apis, matmul.b.apis) == (("torch.matmul",), ("mindspore.mint.matmul",))
    assert (matmul.a.calls, matmul.b.calls) == (2, 2) and not matmul.calls_differ
    assert (matmul.a.total_ns, matmul.b.total_ns) == (6000, 12000)
    assert matmul.a.per_call_ns == 3000 and matmul.b.per_call_ns == 6000
    assert matmul.ratio == pytest.approx(0.5) and matmul.delta_ns == 6000
    linear = rows["torch.nn.Linear"]          # module calls join like functions
    assert linear.b.apis == ("mindspore.mint.nn.Linear",) and linear.ratio == 0.5


def test_what_the_mapping_does_not_join_joins_by_operation():
    rows = rows_by_operation(compare())
    assert rows["permute"].joined_by == "operation"
    assert rows["permute"].a.apis == ("torch.Tensor.permute",)
    assert rows["permute"].b.apis == ("mindspore.mint.permute",)
    norm = rows["layernorm"]                  # a layer against a primitive taking the weights
    assert (norm.a.apis, norm.b.apis) == (("torch.nn.LayerNorm",), ("mindspore.ops.LayerNorm",))
    (signature,) = norm.signatures            # joined by the first input
    assert signature.inputs == "f32[2,8]" and signature.b_inputs == "f32[2,8], f32[8], f32[8]"
    assert (signature.a_calls, signature.b_calls) == (1, 1)


@pytest.mark.parametrize("name, kind, operation", [
    ("torch.Tensor.permute", "tensor_method", "permute"),
    ("mindspore.mint.permute", "function", "permute"),
    ("torch.nn.LayerNorm", "module", "layernorm"),
    ("torch.nn.functional.layer_norm", "function", "layernorm"),
    ("torch.nn.BatchNorm2d", "module", "batchnorm"),
    ("torch.nn.Conv2d", "module", "conv2d"),
    ("torch.Tensor.__add__", "tensor_method", "add"),
    ("torch.Tensor.__iadd__", "tensor_method", "add_"),
    ("torch.Tensor.add_", "tensor_method", "add_"),
    ("torch.Tensor.__invert__", "tensor_method", "invert"),
])
def test_operation_names(name, kind, operation):
    assert operation_of(name, kind) == operation


def test_calls_with_no_counterpart_are_listed_with_their_share_and_why():
    comparison = compare()
    only_b = {u.api: u for u in comparison.unmatched_of("b")}
    cast = only_b["mindspore.Tensor.astype"]
    assert cast.calls == 1 and cast.total_ns == 5000
    assert cast.share == pytest.approx(5000 / comparison.b.api_ns)
    # Tensor.astype is an alternative of torch's Tensor.to (the model replay routes by it)
    assert cast.reason == "its counterpart torch.Tensor.to is not called in A"
    assert only_b["mindspore.Tensor.__getitem__"].calls == 2
    only_a = {u.api: u for u in comparison.unmatched_of("a")}
    assert "mindspore.Tensor.unbind is not called in B" in only_a["torch.Tensor.unbind"].reason
    # every call is either joined or unmatched
    joined_b = sum(r.b.calls for r in comparison.rows)
    assert joined_b + sum(u.calls for u in comparison.unmatched_of("b")) == len(PORT)


def test_an_api_absent_from_the_mapping_says_so():
    comparison = compare(TORCH, PORT + [call("mindspore.ops.no_such_thing", (2,))])
    (row,) = [u for u in comparison.unmatched if u.api == "mindspore.ops.no_such_thing"]
    assert row.reason.startswith("not in the API mapping")


def test_different_call_counts_are_flagged():
    comparison = compare(TORCH, PORT + [call("mindspore.mint.matmul", (2, 8), (8, 8))])
    assert [r.operation for r in comparison.calls_differ] == ["torch.matmul"]
    assert "CALL COUNTS DIFFER" in render_comparison_markdown(comparison)
    assert comparison_json(comparison)["calls_differ"] == ["torch.matmul"]


def test_two_traces_of_one_framework_join_by_name():
    later = [dict(c, ns=c["ns"] * 2) for c in TORCH]
    comparison = compare_loaded(read_trace_record(record("torch", TORCH), "a.json"),
                                read_trace_record(record("torch", later), "b.json"))
    assert not comparison.unmatched and not comparison.calls_differ
    assert {r.joined_by for r in comparison.rows} == {"name"}
    assert all(r.ratio == pytest.approx(0.5) for r in comparison.rows)


def test_marked_steps_keep_the_steady_state_only():
    setup = [call("torch.empty", (2, 8)), call("torch.Tensor.copy_", (2, 8))]
    step = [call("torch.matmul", (2, 8), (8, 8))]
    calls = setup + step * 3 + [call("torch.Tensor.numpy", (2, 8))]
    # marks before each of the three steps: the first is the warm-up, the set-up before
    # it is left out, and so is the call after the loop (the last step is cut to the
    # length of the one before)
    loaded = read_trace_record(record("torch", calls, markers=(2, 3, 4)), "a.json")
    assert {(g.api, g.calls) for g in loaded.groups} == {("torch.matmul", 2)}
    assert "2 marked steps" in loaded.region and "warm-up" in loaded.region


def test_a_last_step_unlike_the_one_before_is_kept_whole():
    step = [call("torch.matmul", (2, 8), (8, 8)), call("torch.softmax", (2, 8))]
    last = [call("torch.Tensor.numpy", (2, 8))] * 3
    loaded = read_trace_record(record("torch", step * 2 + last, markers=(0, 2, 4)), "a.json")
    assert {(g.api, g.calls) for g in loaded.groups} == {
        ("torch.matmul", 1), ("torch.softmax", 1), ("torch.Tensor.numpy", 3)}


def test_marks_are_event_indices_with_gaps():
    """A mark takes an index of its own in the recorder: the events around it skip one."""
    recorder = Recorder(clock=iter(range(0, 10**9, 10)).__next__)
    recorder.add_framework("torch", sync=lambda: None, tensor_spec=lambda v: None)
    recorder.start()
    site = CallSite("torch", "torch.add", "function")
    recorder.call(site, lambda: None, (), {})
    recorder.mark("step")
    recorder.call(site, lambda: None, (), {})
    recorder.stop()
    data = recorder.data()
    assert data.markers == [(1, "step")]
    assert [e.index for e in data.events] == [0, 2]


def test_marked_steps_rule():
    same = marked_steps([0, 3, 6], 10, key=lambda i: i % 3)
    assert same.warmup == (0, 3) and same.steady == ((3, 6), (6, 9)) and same.after_loop == 1
    assert marked_steps([5], 5, key=lambda i: i) is None
    single = marked_steps([2], 5, key=lambda i: i)
    assert single.steady == ((2, 5),) and single.warmup is None
    assert single.notes == ["one marked step only: it is measured cold"]


def test_a_nested_trace_compares_its_outermost_api_calls():
    calls = [call("torch.nn.Linear", (2, 8), kind="module"),
             call("torch.nn.functional.linear", (2, 8), (8, 8))]
    loaded = read_trace_record(record("torch", calls, nested_parents={1: 0}), "a.json")
    assert [g.api for g in loaded.groups] == ["torch.nn.Linear"]
    assert any("nested" in note for note in loaded.notes)


@pytest.mark.parametrize("change, key", [
    (lambda d: d.update(format="something"), "format"),
    (lambda d: d.update(version=99), "version"),
    (lambda d: d.pop("settings"), "settings"),
    (lambda d: d["settings"].update(timing="fast"), "settings.timing"),
    (lambda d: d["summary"][0].pop("calls"), "summary[0].calls"),
    (lambda d: d["summary"][0].update(total_ns="12"), "summary[0].total_ns"),
    (lambda d: d["markers"].append({"label": ""}), "markers[0].at"),
    (lambda d: (d["markers"].append({"at": 0}), d["events"][0].update(signature=7)),
     "events[0].signature"),
])
def test_a_bad_record_names_the_file_and_the_key(tmp_path, change, key):
    data = record("torch", TORCH)
    change(data)
    path = write(tmp_path / "bad.json", data)
    with pytest.raises(TraceRecordError) as caught:
        load_trace_record(path)
    assert path in str(caught.value) and repr(key) in str(caught.value)


def test_missing_and_unreadable_files_are_named(tmp_path):
    with pytest.raises(TraceRecordError, match="nowhere.json: no such file"):
        load_trace_record(tmp_path / "nowhere.json")
    (tmp_path / "text.json").write_text("{not json")
    with pytest.raises(TraceRecordError, match="text.json: not JSON"):
        load_trace_record(tmp_path / "text.json")
    with pytest.raises(TraceRecordError, match="not a trace record"):
        read_trace_record([1, 2], "list.json")


def invoke(*args: str):
    return CliRunner().invoke(cli, ["trace", "compare", *args], catch_exceptions=False)


def test_the_command_writes_json_and_markdown_and_exits_0(tmp_path):
    a = write(tmp_path / "a.json", record("torch", TORCH))
    b = write(tmp_path / "b.json", record("mindspore", PORT))
    result = invoke(a, b, "--json", str(tmp_path / "c.json"), "--markdown",
                    str(tmp_path / "c.md"))
    assert result.exit_code == 0, result.output
    assert "torch.matmul" in result.output and "mindspore.Tensor.astype" in result.output
    assert "call counts: equal for every joined API" in result.output
    written = json.loads((tmp_path / "c.json").read_text())
    assert written["format"] == COMPARE_FORMAT
    assert {r["operation"] for r in written["rows"]} >= {"torch.matmul", "permute"}
    assert written == comparison_json(compare_traces(a, b))
    markdown = (tmp_path / "c.md").read_text()
    assert "| `torch.matmul` | `mindspore.mint.matmul` | mapping | 2 | 2 |" in markdown


def test_the_command_reads_a_trace_directory_and_exits_3_when_counts_differ(tmp_path):
    (tmp_path / "torch-out").mkdir()
    write(tmp_path / "torch-out" / "trace_record.json", record("torch", TORCH))
    b = write(tmp_path / "b.json", record("mindspore", PORT + PORT[2:3]))
    result = invoke(str(tmp_path / "torch-out"), b)
    assert result.exit_code == 3
    assert "CALL COUNTS DIFFER for 1 joined APIs" in result.output


def test_the_command_refuses_a_bad_file_without_a_traceback(tmp_path):
    a = write(tmp_path / "a.json", record("torch", TORCH))
    result = CliRunner().invoke(cli, ["trace", "compare", a, str(tmp_path / "b.json")])
    assert result.exit_code == 2
    assert "b.json: no such file" in result.output and "Traceback" not in result.output
    result = CliRunner().invoke(cli, ["trace", "compare", a, a, "--mapping",
                                      str(tmp_path / "none.yaml")])
    assert result.exit_code == 2 and "--mapping" in result.output


def test_opbench_trace_records_the_scripts_step_marks(tmp_path):
    script = tmp_path / "marked.py"
    script.write_text("import opbench.model\nfor _ in range(3):\n    opbench.model.step()\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(trace_command, ["-q", "-o", str(out), "--", "python",
                                                str(script)])
    assert result.exit_code == 0, result.output
    written = json.loads((out / "trace_record.json").read_text())
    assert [m["at"] for m in written["markers"]] == [0, 1, 2]

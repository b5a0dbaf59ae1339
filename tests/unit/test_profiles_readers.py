"""The profile readers (opbench/profiles) on the committed fixtures, checked against the raw
files, and their errors on missing and truncated files.

Fixtures (tests/unit/fixtures/profiles/):
  torch_cpu_block.json      torch.profiler export_chrome_trace of a softmax / matmul / gelu
                            block, 5 steps, made here (torch 2.13 CPU)
  mindspore_cpu_block/      mindspore.Profiler(activities=[CPU]) output of the same block,
                            made here (MindSpore 2.10 CPU)
  ascend_synthetic/         a hand-written Ascend kernel_details.csv: its columns are those
                            of the MindSpore 2.x / torch_npu profiler's kernel_details.csv
                            (checked against Ascend/pytorch
                            torch_npu/profiler/analysis/prof_common_func/_csv_headers.py:
                            Name, Type, Accelerator Core, Start Time(us), Duration(us), Wait
                            Time(us); start times end in a tab as the real files' do)
  torch_cuda_synthetic.json a hand-written CUDA Kineto trace: cpu_op, cuda_runtime
                            (cudaLaunchKernel, cudaMemcpyAsync with args.correlation and
                            cbid), kernel / gpu_memcpy on stream 7 (args.device, stream,
                            correlation, External id, grid, block), an ac2g flow event and
                            deviceProperties, laid out as the Kineto traces in public test data
                            (HolisticTraceAnalysis-style traces) write them
No real GPU or Ascend profile is committed (none was made here).
"""
from __future__ import annotations

import csv
import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from opbench.profiles.events import KERNEL, OP, RUNTIME, ProfileError
from opbench.profiles.kernels import kernels_of
from opbench.profiles.kinds import CAST, FALLBACK, LAYOUT
from opbench.profiles.read import read_profile

FIXTURES = Path(__file__).parent / "fixtures" / "profiles"
TORCH_CPU = FIXTURES / "torch_cpu_block.json"
MINDSPORE_CPU = FIXTURES / "mindspore_cpu_block"
ASCEND = FIXTURES / "ascend_synthetic"
TORCH_CUDA = FIXTURES / "torch_cuda_synthetic.json"


def _raw_events(path: Path, cat: str) -> list[dict]:
    return [e for e in json.loads(path.read_text())["traceEvents"]
            if e.get("ph") == "X" and e.get("cat") == cat]


def _ms_root() -> Path:
    (root,) = [p for p in MINDSPORE_CPU.iterdir() if p.name.endswith("_ascend_ms")]
    return root


def _kernel_csv() -> Path:
    (path,) = ASCEND.glob("*/ASCEND_PROFILER_OUTPUT/kernel_details.csv")
    return path


# --- torch CPU ---------------------------------------------------------------------------

def test_torch_cpu_trace_holds_every_cpu_op_of_the_file():
    profile = read_profile(TORCH_CPU)
    raw = _raw_events(TORCH_CPU, "cpu_op")
    assert (profile.framework, profile.devices) == ("torch", ("cpu",))
    ops = profile.of(OP)
    assert len(ops) == len(raw) == 115
    assert Counter(e.name for e in ops) == Counter(e["name"] for e in raw)
    assert profile.of(KERNEL) == ()


def test_torch_cpu_kernels_are_the_leaf_ops_with_their_kinds():
    kernels = kernels_of(read_profile(TORCH_CPU))
    found = Counter((k.event.name, k.kind, k.op.name) for k in kernels)
    # 5 steps: each runs _softmax, mm, gelu, the cast's copy_ and contiguous's copy_
    assert found == {("aten::_softmax", None, "aten::softmax"): 5,
                     ("aten::mm", None, "aten::matmul"): 5,
                     ("aten::gelu", None, "aten::gelu"): 5,
                     ("aten::copy_", CAST, "aten::to"): 5,
                     ("aten::copy_", LAYOUT, "aten::contiguous"): 5}


def test_torch_trace_gzipped_reads_the_same(tmp_path):
    packed = tmp_path / "w.pt.trace.json.gz"
    packed.write_bytes(gzip.compress(TORCH_CPU.read_bytes()))
    assert read_profile(packed).events == read_profile(TORCH_CPU).events
    # a directory of the tensorboard handler's traces stands for its newest trace
    assert len(read_profile(tmp_path).events) == len(read_profile(TORCH_CPU).events)


# --- MindSpore CPU -----------------------------------------------------------------------

def test_mindspore_cpu_kernels_match_the_frameworks_own_summary():
    profile = read_profile(MINDSPORE_CPU)
    assert (profile.framework, profile.devices) == ("mindspore", ("cpu",))
    assert profile.path == str(_ms_root())
    kernels = profile.of(KERNEL)
    assert len(kernels) == 45
    with (_ms_root() / "FRAMEWORK" / "cpu_op_detail_info_0.csv").open(newline="") as f:
        detail = {row["op_type"]: row for row in csv.DictReader(f)}
    assert Counter(e.name for e in kernels) == {
        name: int(row["op_occurrences"]) for name, row in detail.items()}
    for name, row in detail.items():
        total_ms = sum(e.dur_us for e in kernels if e.name == name) / 1e3
        assert total_ms == pytest.approx(float(row["op_total_time(ms)"]), rel=0.01)


def test_mindspore_cpu_kinds():
    kinds = Counter((k.event.name, k.kind) for k in kernels_of(read_profile(MINDSPORE_CPU)))
    assert kinds[("Cast", CAST)] == 5
    assert {name for (name, kind) in kinds if kind is None} == {
        "Softmax", "MatMul", "Erf", "Div", "Mul", "Sqrt", "AddExt"}


def test_mindspore_timestamp_file_read_when_trace_view_is_absent(tmp_path):
    """FRAMEWORK/cpu_op_execute_timestamp_*.txt (start ns, duration ms) gives the same
    kernels as trace_view.json (start and duration us)."""
    root = tmp_path / "h_1_2_ascend_ms"
    (root / "FRAMEWORK").mkdir(parents=True)
    for f in (_ms_root() / "FRAMEWORK").iterdir():
        (root / "FRAMEWORK" / f.name).write_bytes(f.read_bytes())
    from_stamps = read_profile(tmp_path).of(KERNEL)
    from_view = read_profile(MINDSPORE_CPU).of(KERNEL)
    assert Counter(e.name for e in from_stamps) == Counter(e.name for e in from_view)
    assert sum(e.dur_us for e in from_stamps) == pytest.approx(
        sum(e.dur_us for e in from_view), rel=1e-6)


# --- Ascend kernel_details.csv -----------------------------------------------------------

def test_ascend_kernel_details():
    profile = read_profile(ASCEND)
    with _kernel_csv().open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert (profile.framework, profile.devices) == ("mindspore", ("npu",))
    kernels = profile.of(KERNEL)
    assert [e.name for e in kernels] == [r["Name"] for r in rows]
    assert [e.dur_us for e in kernels] == [float(r["Duration(us)"]) for r in rows]
    # "1733380000000100.250\t": the tab the real files end a start time with is dropped
    assert kernels[0].start_us == pytest.approx(1733380000000100.25)
    assert [e.tid for e in kernels] == [r["Accelerator Core"] for r in rows]
    assert {k.event.name: k.kind for k in kernels_of(profile)} == {
        "aclnnSoftmax_SoftmaxV2AiCore_SoftmaxV2": None,
        "aclnnMatmul_MatMulCommon_MatMulV2": None,
        "aclnnCast_CastAiCore_Cast": FALLBACK,   # on AI_CPU: the fallback wins over cast
        "TransData": LAYOUT}


# --- torch CUDA --------------------------------------------------------------------------

def test_torch_cuda_trace_kernels_runtime_and_correlations():
    profile = read_profile(TORCH_CUDA)
    assert profile.devices == ("cuda",)
    raw_kernels = _raw_events(TORCH_CUDA, "kernel") + _raw_events(TORCH_CUDA, "gpu_memcpy")
    kernels = profile.of(KERNEL)
    assert sorted(e.name for e in kernels) == sorted(e["name"] for e in raw_kernels)
    assert all(e.device == "cuda" for e in kernels)
    assert sorted(e.correlation for e in kernels) == [101, 102, 103, 104, 106]
    runtime = profile.of(RUNTIME)
    assert len(runtime) == len(_raw_events(TORCH_CUDA, "cuda_runtime")) == 6
    assert len(profile.of(OP)) == len(_raw_events(TORCH_CUDA, "cpu_op")) == 11
    # a device profile's kernels are its device kernels, the host ops host time
    assert len(kernels_of(profile)) == 5


# --- errors ------------------------------------------------------------------------------

def test_missing_path_names_it(tmp_path):
    with pytest.raises(ProfileError, match="nope.json: no such file"):
        read_profile(tmp_path / "nope.json")


def test_truncated_torch_trace_names_the_file(tmp_path):
    cut = tmp_path / "cut.json"
    cut.write_bytes(TORCH_CPU.read_bytes()[:5000])
    with pytest.raises(ProfileError, match="cut.json: not JSON .*truncated"):
        read_profile(cut)
    gz = tmp_path / "cut.pt.trace.json.gz"
    gz.write_bytes(gzip.compress(TORCH_CPU.read_bytes())[:3000])
    with pytest.raises(ProfileError, match="cut.pt.trace.json.gz: not a readable gzip"):
        read_profile(gz)


def test_json_that_is_no_trace(tmp_path):
    other = tmp_path / "results.json"
    other.write_text(json.dumps({"instances": []}))
    with pytest.raises(ProfileError, match="results.json: no 'traceEvents' list"):
        read_profile(other)
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"traceEvents": [{"ph": "M", "name": "process_name"}]}))
    with pytest.raises(ProfileError, match="empty.json: the trace holds no operator"):
        read_profile(empty)


def test_truncated_trace_view_names_the_file(tmp_path):
    root = tmp_path / "h_1_2_ascend_ms" / "ASCEND_PROFILER_OUTPUT"
    root.mkdir(parents=True)
    view = _ms_root() / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    (root / "trace_view.json").write_bytes(view.read_bytes()[:2000])
    with pytest.raises(ProfileError, match="trace_view.json: not a readable JSON.*truncated"):
        read_profile(tmp_path)


def test_truncated_kernel_details_names_the_file_and_column(tmp_path):
    root = tmp_path / "h_1_2_ascend_ms" / "ASCEND_PROFILER_OUTPUT"
    root.mkdir(parents=True)
    text = _kernel_csv().read_text()
    cut_at = text.rindex("\n", 0, len(text) - 1)          # the last row, cut before its
    last = text[cut_at:]                                  # duration
    (root / "kernel_details.csv").write_text(text[:cut_at] + last[:last.index("\t") + 1])
    with pytest.raises(ProfileError, match=r"kernel_details.csv:7: column 'Duration\(us\)'"):
        read_profile(tmp_path)


def test_kernel_details_without_its_columns(tmp_path):
    root = tmp_path / "p" / "ASCEND_PROFILER_OUTPUT"
    root.mkdir(parents=True)
    (root / "kernel_details.csv").write_text("Op,Time\nMatMul,3\n")
    with pytest.raises(ProfileError, match="kernel_details.csv: expected columns 'Name'"):
        read_profile(tmp_path / "p")


def test_directories_that_hold_no_profile(tmp_path):
    with pytest.raises(ProfileError, match="neither a torch.profiler trace"):
        read_profile(tmp_path)
    (tmp_path / "a_ascend_ms").mkdir()
    (tmp_path / "b_ascend_ms").mkdir()
    with pytest.raises(ProfileError, match="2 profiles in it"):
        read_profile(tmp_path)
    # a profile directory analyse() never filled
    with pytest.raises(ProfileError, match=r"a_ascend_ms: no .*was analyse\(\) run"):
        read_profile(tmp_path / "a_ascend_ms")
    (tmp_path / "a_ascend_ms" / "FRAMEWORK").mkdir()
    with pytest.raises(ProfileError, match="a_ascend_ms: no kernel events found"):
        read_profile(tmp_path / "a_ascend_ms")

"""`opbench profile show|compare` (opbench/profiles/compare.py, cli/profile.py): the join of
the committed torch and MindSpore CPU profiles of one block (softmax, matmul, gelu, a cast,
a contiguous copy), kernel totals checked against the raw files, the CUDA correlation join,
the mapping pass, the CLI."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from opbench.cli.main import cli
from opbench.frameworks.apimap import load_mapping
from opbench.profiles.compare import (BY_MAPPING, BY_NAME, api_calls, api_key,
                                      compare_profiles, summarise_profile)
from opbench.profiles.events import KERNEL, OP, Profile, ProfileEvent
from opbench.profiles.read import read_profile

FIXTURES = Path(__file__).parent / "fixtures" / "profiles"
TORCH_CPU = FIXTURES / "torch_cpu_block.json"
MINDSPORE_CPU = FIXTURES / "mindspore_cpu_block"
ASCEND = FIXTURES / "ascend_synthetic"
TORCH_CUDA = FIXTURES / "torch_cuda_synthetic.json"

# The torch CPU trace's ops that ran a kernel, read off the file: each step's _softmax, mm
# and gelu, and the two copy_ (the cast's and contiguous's). Every other cpu_op encloses one
# of these or only makes a view / an empty tensor.
TORCH_KERNEL_OPS = {"aten::_softmax", "aten::mm", "aten::gelu", "aten::copy_"}


def _torch_kernel_s() -> float:
    events = json.loads(TORCH_CPU.read_text())["traceEvents"]
    return sum(e["dur"] for e in events
               if e.get("cat") == "cpu_op" and e["name"] in TORCH_KERNEL_OPS) * 1e-6


def _mindspore_kernel_s() -> float:
    (view,) = MINDSPORE_CPU.glob("*/ASCEND_PROFILER_OUTPUT/trace_view.json")
    return sum(float(e["dur"]) for e in json.loads(view.read_text())
               if e.get("ph") == "X" and e.get("args", {}).get("type") == "HostCpuOps") * 1e-6


@pytest.fixture(scope="module")
def comparison():
    return compare_profiles(read_profile(TORCH_CPU), read_profile(MINDSPORE_CPU),
                            load_mapping())


def test_api_key_aliases():
    assert {api_key(n) for n in ("aten::softmax", "aten::_softmax", "Softmax",
                                 "aclnnSoftmax_SoftmaxV2AiCore_SoftmaxV2")} == {"softmax"}
    assert {api_key(n) for n in ("aten::mm", "aten::matmul", "aten::addmm", "aten::linear",
                                 "MatMul", "Default/dense/MatMul-op12",
                                 "aclnnMatmul_MatMulCommon_MatMulV2")} == {"matmul"}
    assert {api_key(n) for n in ("Conv2D", "aten::convolution")} == {"conv"}
    assert {api_key(n) for n in ("aten::to", "aten::_to_copy", "Cast")} == {"cast"}
    assert api_key("AddExt") == "add" and api_key("Erf") == "erf"


def test_softmax_matmul_and_cast_join(comparison):
    rows = {r.api: r for r in comparison.apis}
    assert set(rows) == {"matmul", "softmax", "cast"}
    assert rows["softmax"].sides[0].names == ("aten::softmax",)
    assert [k.name for k in rows["softmax"].sides[0].kernels] == ["aten::_softmax"]
    assert [k.name for k in rows["softmax"].sides[1].kernels] == ["Softmax"]
    assert [k.name for k in rows["matmul"].sides[0].kernels] == ["aten::mm"]
    assert [k.name for k in rows["matmul"].sides[1].kernels] == ["MatMul"]
    assert all(r.joined_by == BY_NAME for r in rows.values())
    assert all(s.calls == 5 for r in rows.values() for s in r.sides)
    # by time lost, the most first
    lost = [r.lost_s for r in comparison.apis]
    assert lost == sorted(lost, reverse=True)
    assert lost[0] == pytest.approx(rows["matmul"].sides[1].kernel_s
                                    - rows["matmul"].sides[0].kernel_s)


def test_gelu_and_mindspores_decomposition_stay_unmatched_with_a_hint(comparison):
    torch_only = {u.api: u for u in comparison.unmatched_of(0)}
    ms_only = {u.api: u for u in comparison.unmatched_of(1)}
    assert set(torch_only) == {"gelu", "contiguous", "reshape", "transpose"}
    assert set(ms_only) == {"erf", "div", "mul", "sqrt", "add"}
    assert {k.name for u in ms_only.values() for k in u.usage.kernels} == {
        "Erf", "Div", "Mul", "Sqrt", "AddExt"}
    assert "gelu" in ms_only["erf"].reason
    assert "erf" in torch_only["gelu"].reason
    # a reshape runs no kernel: its calls are host time only
    assert torch_only["reshape"].usage.kernel_s == 0 and torch_only["reshape"].usage.host_s > 0


def test_kernel_totals_equal_the_raw_files(comparison):
    for side, raw in ((0, _torch_kernel_s()), (1, _mindspore_kernel_s())):
        assert comparison.api_kernel_s(side) == pytest.approx(raw, rel=0.01)
        # single-threaded CPU kernels do not overlap: their union is their sum
        assert comparison.sides[side].kernel_s == pytest.approx(raw, rel=0.01)


def test_step_split_adds_up(comparison):
    for s in comparison.sides:
        assert s.kernel_s + s.host_s + s.idle_s == pytest.approx(s.span_s, rel=1e-9)
        assert min(s.kernel_s, s.host_s, s.idle_s) >= 0
    torch_side, ms_side = comparison.sides
    assert torch_side.host_s > 0
    assert ms_side.host_s == 0 and any("no host ops" in n for n in ms_side.notes)


def test_extra_work_totals(comparison):
    torch_extra = {w.kind: w for w in comparison.sides[0].extra}
    ms_extra = {w.kind: w for w in comparison.sides[1].extra}
    assert {k: w.launches for k, w in torch_extra.items()} == {"cast": 5, "layout": 5}
    assert {k: w.launches for k, w in ms_extra.items()} == {"cast": 5}
    cast_row = next(r for r in comparison.apis if r.api == "cast")
    assert ms_extra["cast"].time_s == pytest.approx(cast_row.sides[1].kernel_s)


def test_cuda_kernels_join_their_ops_by_correlation():
    calls = {c.name: c for c in api_calls(read_profile(TORCH_CUDA))}
    assert [k.event.name for k in calls["aten::linear"].kernels] == [
        "ampere_sgemm_64x32_sliced1x4_tn"]
    assert [k.event.name for k in calls["aten::item"].kernels] == [
        "Memcpy DtoH (Device -> Pageable)"]
    assert calls["aten::softmax"].kernels[0].event.correlation == 102
    # launched outside any op: a call of its own, named by the kernel
    assert calls["my_fused_kernel"].op is None
    # ops nested in a top-level op are not calls of their own
    assert "aten::addmm" not in calls and "aten::_to_copy" not in calls


def test_cuda_against_ascend():
    c = compare_profiles(read_profile(TORCH_CUDA), read_profile(ASCEND), load_mapping())
    rows = {r.api: r for r in c.apis}
    assert set(rows) == {"matmul", "softmax", "cast"}
    assert rows["matmul"].sides[1].calls == 2
    assert rows["matmul"].sides[1].kernel_s == pytest.approx(81e-6)
    assert {u.api for u in c.unmatched_of(1)} == {"transdata"}
    assert any("different devices" in n for n in c.notes)
    assert {w.kind: w.launches for w in c.sides[1].extra} == {"layout": 1, "fallback": 1}


def _op(name, start, dur):
    return ProfileEvent(name, OP, start, dur, tid="1")


def test_the_mapping_joins_what_the_names_do_not():
    """torch.nn.functional.local_response_norm maps to mindspore.ops.lrn: aten's op and
    MindSpore's LRN kernel join through the mapping, not by name."""
    torch_side = Profile("torch", "t", "a.json", ("cpu",),
                         (_op("aten::local_response_norm", 0.0, 10.0),))
    ms_side = Profile("mindspore", "m", "b", ("cpu",),
                      (ProfileEvent("LRN", KERNEL, 0.0, 25.0),))
    joined = compare_profiles(torch_side, ms_side, load_mapping())
    assert [(r.api, r.joined_by) for r in joined.apis] == [("localresponsenorm", BY_MAPPING)]
    assert joined.apis[0].lost_s == pytest.approx(15e-6)
    alone = compare_profiles(torch_side, ms_side)
    assert alone.apis == () and len(alone.unmatched) == 2


def test_show_summary():
    s = summarise_profile(read_profile(MINDSPORE_CPU))
    assert s.kernels[0].name == "Erf"
    assert sum(k.launches for k in s.kernels) == 45
    assert sum(k.time_s for k in s.kernels) == pytest.approx(_mindspore_kernel_s(), rel=0.01)
    assert [key for key, _ in s.apis][:2] == ["erf", "matmul"]


# --- the CLI -----------------------------------------------------------------------------

def test_cli_compare_writes_json_and_markdown(tmp_path):
    out = tmp_path / "c.json"
    md = tmp_path / "c.md"
    result = CliRunner().invoke(cli, ["profile", "compare", str(TORCH_CPU), str(MINDSPORE_CPU),
                                      "--json", str(out), "--markdown", str(md), "--top", "2"])
    assert result.exit_code == 0, result.output
    assert "APIs by time lost" in result.output and "matmul" in result.output
    data = json.loads(out.read_text())
    assert {"format", "version", "sides", "apis", "unmatched"} <= set(data)
    assert len(data["sides"]) == 2
    assert {"framework", "source", "path", "kernel_s", "host_s", "idle_s", "extra"} <= set(
        data["sides"][0])
    assert len(data["apis"]) == 3          # the JSON holds every row, --top or not
    assert {"api", "lost_s", "sides"} <= set(data["apis"][0])
    assert {"calls", "kernel_s", "kernels"} <= set(data["apis"][0]["sides"][0])
    assert data["apis"][0]["sides"][1]["kernels"] == ["MatMul"]
    assert {u["api"] for u in data["unmatched"] if u["side"] == 1} == {
        "erf", "div", "mul", "sqrt", "add"}
    assert "| matmul |" in md.read_text()


def test_cli_show(tmp_path):
    out = tmp_path / "s.json"
    result = CliRunner().invoke(cli, ["profile", "show", str(TORCH_CUDA), "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "top kernels" in result.output and "ampere_sgemm" in result.output
    data = json.loads(out.read_text())
    assert data["side"]["framework"] == "torch" and data["side"]["devices"] == ["cuda"]
    assert data["kernels"][0]["name"] == "ampere_sgemm_64x32_sliced1x4_tn"


def test_cli_bad_paths_exit_2_naming_the_file(tmp_path):
    result = CliRunner().invoke(cli, ["profile", "compare", str(TORCH_CPU),
                                      str(tmp_path / "missing_profile")])
    assert result.exit_code == 2
    assert "missing_profile: no such file" in result.output
    assert "Traceback" not in result.output
    cut = tmp_path / "cut.json"
    cut.write_bytes(TORCH_CPU.read_bytes()[:4000])
    result = CliRunner().invoke(cli, ["profile", "show", str(cut)])
    assert result.exit_code == 2 and "cut.json: not JSON" in result.output

"""Mapping, case coverage and results joined onto scan rows."""
from __future__ import annotations

from pathlib import Path

from test_gate_evaluate import record as run_record

from opbench.cases.case_files import Case, CaseInstance, FrameworkCall
from opbench.frameworks.apimap import ApiMapping, MappingEntry
from opbench.results.records import RunRecord
from opbench.scan import ResultsIndex, annotate, covered_apis, normalise_case_api, summarize
from opbench.scan.rows import ScanResult, ScanRow

MAPPING = ApiMapping([
    MappingEntry("torch.nn.functional.relu", "mindspore.mint.nn.functional.relu",
                 "functional", "same"),
    MappingEntry("torch.Tensor.sum", "mindspore.Tensor.sum", "tensor_method", "differs",
                 "dim vs axis"),
    MappingEntry("torch.nn.functional.scaled_dot_product_attention", None, "functional",
                 "none", "no fused kernel"),
])


def row(api: str, framework: str = "torch", line: int = 1, guess: bool = False) -> ScanRow:
    return ScanRow(file="m.py", line=line, end_line=line, col=1, api_type="function",
                   call=f"{api}()", api=api, framework=framework, guess=guess,
                   guess_reason="because" if guess else "")


def instance(case_id: str, torch_api: str, ms_api: str) -> CaseInstance:
    case = Case(name=case_id, op=case_id, file="cases/x.yaml", line=1, tags=(),
                description="", params={}, raw={})
    calls = {"torch": FrameworkCall("torch", torch_api, (), {}),
             "mindspore": FrameworkCall("mindspore", ms_api, (), {}),
             "numpy": FrameworkCall("numpy", "numpy.sum", (), {})}
    return CaseInstance(id=case_id, case=case, params={}, inputs=(), calls=calls)


def test_mapping_columns_in_both_directions():
    torch_row, ms_row, none_row, unknown_row = annotate([
        row("torch.nn.functional.relu"),
        row("mindspore.Tensor.sum", "mindspore"),
        row("torch.nn.functional.scaled_dot_product_attention"),
        row("torch.special.zeta"),
    ], mapping=MAPPING)
    assert (torch_row.mapped_api, torch_row.mapping_status) == (
        "mindspore.mint.nn.functional.relu", "same")
    assert (ms_row.mapped_api, ms_row.mapping_status, ms_row.mapping_note) == (
        "torch.Tensor.sum", "differs", "dim vs axis")
    assert (none_row.mapped_api, none_row.mapping_status) == ("", "none")
    assert (unknown_row.mapped_api, unknown_row.mapping_status) == ("", "unknown")
    assert torch_row.covered is None and torch_row.ratio is None


def test_case_apis_are_normalised_and_numpy_ignored():
    assert normalise_case_api("torch", "Tensor.sum") == "torch.Tensor.sum"
    assert normalise_case_api("mindspore", "mindspore.mint.sum") == "mindspore.mint.sum"
    covered = covered_apis([instance("sum", "Tensor.sum", "Tensor.sum")])
    assert covered == {"torch": frozenset({"torch.Tensor.sum"}),
                       "mindspore": frozenset({"mindspore.Tensor.sum"})}


def test_covered_by_own_api_or_by_the_mapped_counterpart():
    covered = covered_apis([
        instance("relu", "torch.relu", "mindspore.mint.nn.functional.relu"),
        instance("sum", "Tensor.sum", "Tensor.sum"),
    ])
    relu, tsum, zeta = annotate(
        [row("torch.nn.functional.relu"), row("torch.Tensor.sum"), row("torch.special.zeta")],
        mapping=MAPPING, covered=covered)
    # The case runs torch.relu, but its MindSpore side is what F.relu maps to.
    assert relu.covered is True
    assert tsum.covered is True
    assert zeta.covered is False


def mode(ratio: float, verdict: str, ci_low: float | None = None,
         ci_high: float | None = None) -> dict:
    """A measurement with the given ratio (interval: the ratio itself unless given)."""
    return {"mode": "serial", "loops": 1, "rounds": 6, "threshold": 0.8,
            "samples_s": {"torch": [1e-5] * 6, "mindspore": [1e-5] * 6},
            "summary": {"torch": {"n": 6, "median_s": 1e-5},
                        "mindspore": {"n": 6, "median_s": 1e-5}},
            "ratio": ratio, "ci_low": ratio if ci_low is None else ci_low,
            "ci_high": ratio if ci_high is None else ci_high, "verdict": verdict}


def unmeasured(instance_id: str, verdict: str, **apis) -> dict:
    return {"id": instance_id, "case": "x", "op": "x", "file": "cases/x.yaml",
            "apis": apis, "verdict": verdict}


def measured(instance_id, torch_api, ms_api, **modes):
    return dict(unmeasured(instance_id, "PASS", torch=torch_api, mindspore=ms_api),
                measurements={key: mode(**m) for key, m in modes.items()})


def results(*instances: dict) -> RunRecord:
    return RunRecord.from_dict(run_record(list(instances)))


def test_results_worst_ratio_over_instances_and_modes():
    document = results(
        measured("relu[n=8]", "torch.nn.functional.relu", "mindspore.mint.nn.functional.relu",
                 serial={"ratio": 0.9, "ci_low": 0.85, "ci_high": 0.95, "verdict": "PASS"},
                 **{"async": {"ratio": 0.5, "ci_low": 0.4, "ci_high": 0.6, "verdict": "SLOW"}}),
        measured("relu[n=1024]", "torch.nn.functional.relu",
                 "mindspore.mint.nn.functional.relu",
                 serial={"ratio": 0.7, "ci_low": 0.6, "ci_high": 0.8, "verdict": "SLOW"}),
        measured("add", "torch.add", "mindspore.mint.add",
                 serial={"ratio": 1.2, "verdict": "PASS"}),
    )
    index = ResultsIndex.from_records([document])
    found = index.lookup(["torch.nn.functional.relu"])
    assert (found.ratio, found.ci_low, found.ci_high, found.verdict, found.mode,
            found.instance_id, found.instances) == (0.5, 0.4, 0.6, "SLOW", "async",
                                                    "relu[n=8]", 2)
    # Either framework's name joins.
    assert index.lookup(["mindspore.mint.add"]).ratio == 1.2
    assert index.lookup(["torch.sub"]) is None


def test_results_join_through_the_mapped_api_and_tensor_method_names():
    document = results(
        measured("relu", "torch.relu", "mindspore.mint.nn.functional.relu",
                 serial={"ratio": 0.6, "verdict": "SLOW"}),
        measured("sum", "Tensor.sum", "Tensor.sum", serial={"ratio": 0.95, "verdict": "PASS"}),
    )
    relu, tsum = annotate([row("torch.nn.functional.relu"), row("torch.Tensor.sum")],
                          mapping=MAPPING, results=ResultsIndex.from_records([document]))
    assert (relu.ratio, relu.verdict, relu.instances, relu.worst_instance) == (
        0.6, "SLOW", 1, "relu")
    assert (tsum.ratio, tsum.verdict) == (0.95, "PASS")


def test_an_instance_without_apis_joins_nothing():
    index = ResultsIndex.from_records([results(unmeasured("a", "PASS"))])
    assert len(index) == 1 and index.lookup(["torch.add"]) is None


def test_results_without_ratios_report_the_most_severe_verdict():
    # c's ratio is not a number JSON can say (Python's json reads NaN): no ratio either
    document = results(
        unmeasured("a", "PASS", torch="torch.add"),
        unmeasured("b", "MISMATCH", torch="torch.add"),
        dict(unmeasured("c", "INCONCLUSIVE", torch="torch.add"),
             measurements={"serial": mode(float("nan"), "INCONCLUSIVE")}),
    )
    found = ResultsIndex.from_records([document]).lookup(["torch.add"])
    assert (found.ratio, found.verdict, found.instance_id, found.instances) == (
        None, "MISMATCH", "b", 3)


def test_later_results_document_replaces_the_same_instance():
    old = results(measured("add", "torch.add", "mindspore.mint.add",
                           serial={"ratio": 0.5, "verdict": "SLOW"}))
    new = results(measured("add", "torch.add", "mindspore.mint.add",
                           serial={"ratio": 1.1, "verdict": "PASS"}))
    found = ResultsIndex.from_records([old, new]).lookup(["torch.add"])
    assert (found.ratio, found.verdict, found.instances) == (1.1, "PASS", 1)


def test_summary_counts_distinct_apis():
    rows = annotate([
        row("torch.nn.functional.relu", line=1), row("torch.nn.functional.relu", line=2),
        row("torch.Tensor.sum", line=3, guess=True), row("torch.special.zeta", line=4),
        row("torch.nn.functional.scaled_dot_product_attention", line=5),
    ], mapping=MAPPING, covered={"torch": frozenset({"torch.Tensor.sum"})},
        results=ResultsIndex.from_records([results(
            measured("relu", "torch.nn.functional.relu", "x",
                     serial={"ratio": 0.5, "verdict": "SLOW"}))]))
    result = ScanResult(rows=rows, errors=(), files_scanned=3, elapsed_s=0.25)
    summary = summarize(result, rows, with_cases=True, with_results=True)
    assert (summary.calls, summary.guessed_calls, summary.distinct_apis) == (5, 1, 4)
    assert (summary.mapped_apis, summary.unmapped_apis) == (2, 2)
    assert (summary.covered_apis, summary.slow_apis, summary.slow_calls) == (1, 1, 2)
    plain = summarize(result, rows)
    assert plain.covered_apis is None and plain.slow_apis is None


def test_default_cases_dir_prefers_the_working_directory_and_the_environment(tmp_path,
                                                                             monkeypatch):
    from opbench.scan.coverage import default_cases_dir

    monkeypatch.delenv("OPBENCH_CASES", raising=False)
    (tmp_path / "cases").mkdir()
    monkeypatch.chdir(tmp_path)
    assert default_cases_dir() == Path("cases")
    other = tmp_path / "lib"
    other.mkdir()
    monkeypatch.setenv("OPBENCH_CASES", str(other))
    assert default_cases_dir() == other

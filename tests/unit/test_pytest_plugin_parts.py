"""The pure parts of the pytest plugin: which files are case files, outcome texts,
pytest-benchmark entries, and the end-of-session summary. Records are built by hand in the
shape opbench.runner writes them, and read as the plugin reads them (InstanceRecord)."""
from __future__ import annotations

from pathlib import Path

import pytest

from opbench.pytest_plugin.bench_entries import entry_specs, to_benchmark_entry
from opbench.pytest_plugin.collect import is_case_file
from opbench.pytest_plugin.outcome import judge
from opbench.pytest_plugin.summary import counts_line, ratio_table, summary_lines
from opbench.results.records import InstanceRecord

REF, TGT = "torch", "mindspore"


def measurement(ref_s: float, tgt_s: float, verdict: str, rounds: int = 6,
                low: float | None = None, high: float | None = None,
                threshold: float = 0.8, **extra) -> dict:
    ratio = ref_s / tgt_s
    return {"mode": "serial",
            "summary": {REF: {"n": rounds, "median_s": ref_s},
                        TGT: {"n": rounds, "median_s": tgt_s}},
            "samples_s": {REF: [ref_s] * rounds, TGT: [tgt_s] * rounds},
            "ratio": ratio, "ci_low": ratio if low is None else low,
            "ci_high": ratio if high is None else high, "confidence": 0.95,
            "threshold": threshold, "verdict": verdict, "loops": 40, "rounds": rounds,
            "rounds_requested": rounds, "too_few_rounds": False, "notes": [], **extra}


def record(id_: str, verdict: str | None, measurements: dict | None = None,
           **extra) -> InstanceRecord:
    op = id_.split("[")[0]
    return InstanceRecord.from_dict({
        "id": id_, "case": op, "op": op, "file": "cases/x.yaml", "line": 7,
        "params": {"n": 4},
        "inputs": [{"name": "x", "shape": [4, 8], "dtype": "float32", "dist": "normal"}],
        "apis": {REF: f"{REF}.{op}", TGT: f"{TGT}.{op}"}, "verdict": verdict, "error": None,
        "measurements": measurements or {}, **extra})


# -- which YAML files are collected ------------------------------------------------------------

@pytest.mark.parametrize("name, text, given, expected", [
    ("cases.yaml", "# ops\ncases:\n  - name: a\n", False, True),
    ("cases.yml", "cases: []\n", False, True),
    ("broken.yaml", "cases:\n  - name: [unclosed\n", False, True),   # reported, not skipped
    ("ci.yaml", "on: push\njobs:\n  cases: {}\n", False, False),      # `cases` not top-level
    ("ci.yaml", "on: push\n", True, True),                             # named on the command line
    ("notes.txt", "cases:\n", True, False),
])
def test_case_files_are_recognised_by_their_top_level_key(tmp_path: Path, name, text, given,
                                                         expected):
    path = tmp_path / name
    path.write_text(text)
    assert is_case_file(path, given) is expected


# -- outcomes ---------------------------------------------------------------------------------

def test_pass_is_silent():
    outcome = judge(record("a", "PASS", {"serial": measurement(1e-6, 1e-6, "PASS")}), REF, TGT)
    assert (outcome.failed, outcome.inconclusive, outcome.message) == (False, False, "")


def test_slow_message_has_medians_ratio_interval_threshold_and_location():
    m = measurement(2e-6, 8e-6, "SLOW", low=0.2, high=0.3)
    outcome = judge(record("a[n=4]", "SLOW", {"serial": m}), REF, TGT)
    assert outcome.failed and not outcome.inconclusive
    lines = outcome.message.splitlines()
    assert lines[0] == "SLOW: mindspore is slower than torch beyond the threshold"
    assert lines[1] == "  instance  a[n=4]  (cases/x.yaml:7)"
    assert lines[2] == "  inputs    x:4x8 float32"
    assert lines[3] == ("  [serial] torch 2 us, mindspore 8 us per call "
                        "(medians of 6 rounds x 40 calls)")
    assert lines[4] == ("    ratio 0.25 [0.2, 0.3] (95% interval): whole interval below "
                        "threshold 0.8 -> SLOW")


def test_mismatch_message_has_the_errors_and_tolerances():
    check = {"ok": False, "max_abs_err": 0.5, "max_rel_err": None, "rtol": 1e-4,
             "atol": 1e-5, "detail": "3 of 32 values differ; worst at [0,1]: 1.0 against 1.5"}
    outcome = judge(record("a", "MISMATCH", check=check), REF, TGT)
    assert outcome.failed
    assert outcome.message.splitlines()[0] == "MISMATCH: torch and mindspore outputs differ"
    assert ("  outputs differ: max abs err 0.5, max rel err unbounded (rtol 0.0001, "
            "atol 1e-05)") in outcome.message
    assert "    3 of 32 values differ; worst at [0,1]: 1.0 against 1.5" in outcome.message


def test_gradient_mismatch_says_gradients():
    ok = {"ok": True, "max_abs_err": 0.0, "max_rel_err": 0.0, "rtol": 1e-4, "atol": 1e-5}
    bad = dict(ok, ok=False, max_abs_err=2.0, max_rel_err=1.0, detail="1 of 4 values differ")
    outcome = judge(record("a", "MISMATCH", check=ok, grad_check=bad,
                           error="gradients differ: 1 of 4 values differ"), REF, TGT)
    assert outcome.message.startswith("MISMATCH: torch and mindspore gradients differ")
    assert "  gradients differ: max abs err 2, max rel err 1" in outcome.message


def test_error_message_is_the_recorded_error():
    outcome = judge(record("a", "ERROR", error="mindspore failed calling mindspore.mint.x: "
                                               "RuntimeError: no kernel"), REF, TGT)
    assert outcome.failed
    assert "  error     mindspore failed calling mindspore.mint.x: RuntimeError: no kernel" \
        in outcome.message


def test_a_failing_message_keeps_a_later_pass_lost_to_a_crashed_worker():
    m = measurement(2e-6, 8e-6, "SLOW", low=0.2, high=0.3)
    lost = ("pass 1: worker process 2 was killed by SIGSEGV (signal 11) while running "
            "a[n=4]")
    outcome = judge(record("a[n=4]", "SLOW", {"serial": m}, pass_errors=[lost]), REF, TGT)
    assert f"  error     {lost} (the other passes' rounds are kept)" in \
        outcome.message.splitlines()


def test_inconclusive_is_not_failed_and_says_why():
    m = measurement(1e-6, 1.2e-6, "INCONCLUSIVE", low=0.7, high=0.95)
    outcome = judge(record("a", "INCONCLUSIVE", {"serial": m}), REF, TGT)
    assert outcome.inconclusive and not outcome.failed
    assert "interval straddles threshold 0.8 -> INCONCLUSIVE" in outcome.message


def test_a_record_without_verdict_is_an_error():
    assert judge(record("a", None), REF, TGT).failed


# -- pytest-benchmark entries -----------------------------------------------------------------

def test_one_entry_per_framework_and_mode_with_the_comparison_in_extra_info():
    rec = record("a[n=4]", "SLOW", {"serial": measurement(1e-6, 4e-6, "SLOW"),
                                    "async": measurement(1e-6, 2e-6, "SLOW")})
    specs = entry_specs(rec, "cases/x.yaml::a[n=4]", REF, TGT, {"device": "cpu", "threads": 2})
    assert [s.name for s in specs] == ["a[n=4]::torch:serial", "a[n=4]::mindspore:serial",
                                       "a[n=4]::torch:async", "a[n=4]::mindspore:async"]
    first = specs[0]
    assert first.fullname == "cases/x.yaml::a[n=4]::torch:serial"
    assert first.group == "a[n=4] (serial)"
    assert first.params == {"framework": "torch", "mode": "serial", "ratio": 0.25,
                            "ci_low": first.extra_info["ci_low"],
                            "ci_high": first.extra_info["ci_high"], "verdict": "SLOW"}
    assert first.iterations == 40 and first.samples_s == (1e-6,) * 6
    info = first.extra_info
    assert (info["ratio"], info["verdict"], info["role"], info["params"], info["threads"]) == (
        0.25, "SLOW", "reference", {"n": 4}, 2)


def test_nothing_timed_gives_no_entries():
    assert entry_specs(record("a", "MISMATCH"), "x::a", REF, TGT) == []


def test_an_entry_holds_the_per_call_samples_as_pytest_benchmark_stats():
    rec = record("a", "PASS", {"serial": measurement(1e-6, 1e-6, "PASS", rounds=7)})
    entry = to_benchmark_entry(entry_specs(rec, "x::a", REF, TGT)[1])
    saved = entry.as_dict(include_data=True)
    assert saved["name"] == "a::mindspore:serial"
    assert saved["stats"]["data"] == [1e-6] * 7
    assert saved["stats"]["median"] == pytest.approx(1e-6)   # per call, not per loop
    assert saved["stats"]["iterations"] == 40
    assert saved["extra_info"]["ratio"] == 1.0


# -- summary ----------------------------------------------------------------------------------

def test_ratio_table_is_worst_first():
    records = [record("fine", "PASS", {"serial": measurement(1e-6, 1e-6, "PASS")}),
               record("slower", "SLOW", {"serial": measurement(1e-6, 5e-6, "SLOW")}),
               record("slow", "SLOW", {"serial": measurement(1e-6, 2e-6, "SLOW")}),
               record("wrong", "MISMATCH")]
    ids = [line.split()[0] for line in ratio_table(records, REF, TGT)[1:]]
    assert ids == ["slower", "slow", "wrong", "fine"]


def test_ratio_table_is_cut_at_max_rows_and_says_so():
    records = [record(f"c{i}", "PASS", {"serial": measurement(1e-6, 1e-6, "PASS")})
               for i in range(5)]
    lines = ratio_table(records, REF, TGT, max_rows=2)
    assert len(lines) == 4 and lines[-1].startswith("... 3 more rows")


def test_counts_line_counts_verdicts_and_expected_mismatches():
    records = [record("a", "PASS", check={"ok": False, "rtol": 1e-4, "atol": 1e-5,
                                          "expected_mismatch": "known"}),
               record("b", "SLOW"), record("c", "SLOW"), record("d", "INCONCLUSIVE")]
    assert counts_line(records) == ("4 instances: 2 SLOW, 1 INCONCLUSIVE, 1 PASS, "
                                    "1 with an expected mismatch")


def test_correctness_summary_lists_problems():
    records = [record("a", "PASS"), record("b", "ERROR", error="torch failed: boom\nmore")]
    lines = summary_lines(records, REF, TGT, timing=False)
    assert lines == ["correctness: mindspore outputs against torch (no timing; --benchmark "
                     "times them)", "ERROR b: torch failed: boom",
                     "2 instances: 1 ERROR, 1 PASS"]


def test_no_records_no_summary():
    assert summary_lines([], REF, TGT, timing=True) == []

"""The affinity pairs (examples/affinity/) and their ground-truth tool (tools/affinity_pairs.py):
the manifest is valid, every planted range holds its pattern and naive.py and fixed.py differ
in exactly the lines it names; the tool alternates the steps, checks outputs, and its interval
and suggestion comparison say what they should. Framework-free: no pair's script is run here
(tests/integration/test_affinity_pairs_real.py runs them)."""
from __future__ import annotations

import argparse
import ast
import difflib
import os
import random
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import yaml

from opbench.scan.affinity import find_affinity

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import affinity_pairs  # noqa: E402  (tools/ is not a package)

PAIRS = affinity_pairs.load_manifest()
CATALOGUE = REPO / "opbench" / "data" / "affinity_families.yaml"

# What each family's planted lines must hold (every regex), read from the source: a range
# moved by an edit above it points at other code and fails here.
FAMILY_PATTERNS = {
    "linear_composed": [r"@\s*\w+\.T\b", r"\+\s*b\b"],
    "transpose_matmul": [r"matmul\(", r"\.t\(\)|transpose\("],
    "gelu_formula": [r"0\.5\s*\*", r"tanh\(", r"0\.044715", r"\*\*\s*3"],
    "silu_formula": [r"(\w+)\s*\*\s*(torch|ops)\.sigmoid\(\1\)"],
    "softmax_composed": [r"exp\(", r"sum\(", r"/"],
    "layer_norm_composed": [r"mean\(", r"var\(", r"sqrt\(", r"- mean"],
    "rms_norm_composed": [r"rsqrt\(", r"mean\(", r"pow\(2\)|\*\*\s*2"],
    "masked_write_where": [r"where\(", r"zeros_like\("],
    "masked_write_index": [r"\w+\[[^\]]*<[^\]]*\]\s*=\s*0\.0"],
    "optimizer_loop": [r"for \w+(, \w+)? in ", r"-=|assign\("],
    "host_sync_in_loop": [r"\.item\(\)|\.asnumpy\(\)"],
    "tensor_creation_in_loop": [r"(torch\.tensor|ops\.fill)\([A-Z_]*[,)]|ops\.fill\("],
    "attention_composed": [r"@\s*k\.transpose\(", r"softmax\(", r"\)\s*@\s*v\b"],
}
SCRIPT_FUNCTIONS = {"set_up", "make_state", "step", "finish", "checksum", "main"}


def _lines(pair, variant: str) -> list[str]:
    return pair.script(variant).read_text().splitlines()


def _text(lines: list[str], ranges) -> str:
    return "\n".join(line for r in ranges for line in lines[r.start - 1:r.end])


def _numbers(ranges) -> set[int]:
    return {n for r in ranges for n in range(r.start, r.end + 1)}


def test_at_least_five_pairs_per_framework_each_a_catalogue_family():
    families = {item["id"] for item in yaml.safe_load(CATALOGUE.read_text())}
    for framework in affinity_pairs.FRAMEWORKS:
        assert len([p for p in PAIRS if p.framework == framework]) >= 5, framework
    for pair in PAIRS:
        assert f"{pair.framework}.{pair.family}" in families, pair.name
        assert pair.family in FAMILY_PATTERNS, f"{pair.name}: no pattern check for its family"
        assert pair.path == pair.name and pair.directory.is_dir(), pair.name
        assert pair.planted and pair.replacement, pair.name
        assert {r.file for r in pair.planted} == {"naive.py"}, pair.name
        assert {r.file for r in pair.replacement + pair.fixed_setup} <= {"fixed.py"}, pair.name


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p.name)
def test_planted_lines_hold_the_pattern_and_the_replacement_its_api(pair):
    naive, fixed = _lines(pair, "naive"), _lines(pair, "fixed")
    for r in pair.planted:
        assert r.end <= len(naive), f"{pair.name}: {r.text()} past the file's end"
    planted = _text(naive, pair.planted)
    for pattern in FAMILY_PATTERNS[pair.family]:
        assert re.search(pattern, planted), f"{pair.name}: {pattern!r} not in {planted!r}"
    replaced = _text(fixed, pair.replacement + pair.fixed_setup)
    if not pair.affinity_api.startswith("("):      # "(keep on device ...)": no API to call
        short = pair.affinity_api.rsplit(".", 1)[-1]
        assert short in replaced, f"{pair.name}: {short} not in {replaced!r}"
    # the pattern is gone from the fixed step
    assert not all(re.search(p, _text(fixed, pair.replacement))
                   for p in FAMILY_PATTERNS[pair.family]), pair.name


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p.name)
def test_naive_and_fixed_differ_in_exactly_the_manifest_lines(pair):
    naive, fixed = _lines(pair, "naive"), _lines(pair, "fixed")
    naive_changed, fixed_changed = set(), set()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, naive, fixed,
                                                       autojunk=False).get_opcodes():
        if tag != "equal":
            naive_changed |= set(range(i1 + 1, i2 + 1))
            fixed_changed |= set(range(j1 + 1, j2 + 1))
    assert naive_changed == _numbers(pair.planted), pair.name
    assert fixed_changed == _numbers(pair.replacement) | _numbers(pair.fixed_setup), pair.name


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p.name)
@pytest.mark.parametrize("variant", ["naive", "fixed"])
def test_scripts_are_plain_scripts_with_the_harness_functions(pair, variant):
    tree = ast.parse(pair.script(variant).read_text())
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert SCRIPT_FUNCTIONS <= functions, f"{pair.name} {variant}: {SCRIPT_FUNCTIONS - functions}"
    imported = {alias.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
                for alias in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree)
                 if isinstance(n, ast.ImportFrom) and n.module}
    assert "opbench" not in imported        # a user's script: opbench traces it from outside
    other = {"torch": "mindspore", "mindspore": "torch"}[pair.framework]
    assert pair.framework in imported and other not in imported


def test_manifest_errors_name_the_file_the_pair_and_the_key(tmp_path):
    path = tmp_path / "manifest.yaml"
    good = yaml.safe_load(affinity_pairs.MANIFEST.read_text())["pairs"][0]
    cases = [({**good, "framework": "jax"}, "pairs[0].framework"),
             ({**good, "planted": [{"file": "naive.py", "start": 9, "end": 3}]},
              "pairs[0].planted"),
             ({k: v for k, v in good.items() if k != "affinity_api"}, "pairs[0]: expected"),
             ({**good, "training": "yes"}, "pairs[0].training")]
    for item, where in cases:
        path.write_text(yaml.safe_dump({"pairs": [item]}))
        with pytest.raises(affinity_pairs.ManifestError) as caught:
            affinity_pairs.load_manifest(path)
        assert str(path) in str(caught.value) and where in str(caught.value), caught.value
    path.write_text(yaml.safe_dump({"pairs": [good, good]}))
    with pytest.raises(affinity_pairs.ManifestError, match="listed twice"):
        affinity_pairs.load_manifest(path)
    path.write_text("pairs: [unclosed")
    with pytest.raises(affinity_pairs.ManifestError, match="cannot read it as YAML"):
        affinity_pairs.load_manifest(path)


# --------------------------------------------------------------------------- measuring

class FakeClock:
    """Advances by each step's cost: a step's time is what the fake module says it costs."""
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _fake_script(name: str, cost_s: float, clock: FakeClock, order: list[str],
                 offset: float = 0.0):
    def step(state):
        order.append(name)
        clock.now += cost_s
        state["n"] += 1
        return np.full(4, state["n"] + offset, dtype=np.float32)
    return SimpleNamespace(
        make_state=lambda seed: {"n": seed},
        step=step,
        finish=lambda result: np.asarray(result),
        checksum=lambda state, result: (float(result.sum()), float(np.abs(result).sum())))


def test_measure_pair_alternates_the_steps_abba_after_warm_up_and_checks_outputs():
    clock, order = FakeClock(), []
    naive = _fake_script("naive", 0.003, clock, order)
    fixed = _fake_script("fixed", 0.002, clock, order)
    samples = affinity_pairs.measure_pair("torch/x", naive, fixed, seconds=0.1, warmup=2,
                                          clock=clock)
    assert samples.outputs_equal and samples.max_abs_err == 0.0
    # output check: 2 steps each + one for the checksums; warm-up: 2 rounds A B
    head = 3 + 3 + 4
    timed = order[head:]
    assert timed[:8] == ["naive", "fixed", "fixed", "naive", "naive", "fixed", "fixed", "naive"]
    assert len(samples.naive_s) == len(samples.fixed_s) >= affinity_pairs.MIN_ROUNDS
    assert samples.naive_s == pytest.approx([0.003] * len(samples.naive_s))
    assert samples.fixed_s == pytest.approx([0.002] * len(samples.fixed_s))


def test_measure_pair_reports_outputs_that_differ():
    clock, order = FakeClock(), []
    naive = _fake_script("naive", 0.001, clock, order)
    wrong = _fake_script("fixed", 0.001, clock, order, offset=0.5)
    samples = affinity_pairs.measure_pair("torch/x", naive, wrong, seconds=0.01, warmup=0,
                                          clock=clock)
    assert not samples.outputs_equal and samples.max_abs_err == pytest.approx(0.5)


def _processes(saving_s: float, seed: int, processes: int = 6, rounds: int = 40):
    """Simulated processes in modes (a process's speed x1 or x2, as MindSpore's here), with
    round noise; the fixed step costs `saving_s` less in the process's own speed."""
    rng = random.Random(seed)
    out = []
    for _ in range(processes):
        mode = rng.choice([1.0, 2.0])
        naive = [mode * (0.010 + rng.gauss(0, 0.0005)) for _ in range(rounds)]
        fixed = [mode * (0.010 - saving_s + rng.gauss(0, 0.0005)) for _ in range(rounds)]
        out.append((naive, fixed))
    return out


def test_difference_calls_faster_slower_and_no_difference_by_its_interval():
    faster = affinity_pairs.difference(_processes(0.002, seed=1))
    assert faster.verdict == affinity_pairs.FASTER and faster.ci_low_s > 0
    assert faster.ratio > 1 and faster.processes == 6 and len(faster.process_differences_s) == 6
    slower = affinity_pairs.difference(_processes(-0.002, seed=2))
    assert slower.verdict == affinity_pairs.SLOWER and slower.ci_high_s < 0 and slower.ratio < 1
    none = affinity_pairs.difference(_processes(0.0, seed=3))
    assert none.ci_low_s <= 0 <= none.ci_high_s and none.verdict == affinity_pairs.NO_DIFFERENCE


def test_difference_interval_covers_the_mean_saving_about_95_percent():
    # The processes' modes scale the saving (x1 or x2): the target is its mean, 1.5 x 2 ms.
    covered = 0
    trials = 300
    for seed in range(trials):
        d = affinity_pairs.difference(_processes(0.002, seed=seed))
        covered += d.ci_low_s <= 0.003 <= d.ci_high_s
    assert 0.88 <= covered / trials <= 0.99


def test_difference_of_one_process_is_its_rounds_range():
    d = affinity_pairs.difference([([0.010, 0.011, 0.012], [0.009, 0.009, 0.010])])
    assert d.processes == 1 and d.estimate_s == pytest.approx(0.002)
    assert (d.ci_low_s, d.ci_high_s) == pytest.approx((0.001, 0.002))
    with pytest.raises(ValueError):
        affinity_pairs.difference([([], [])])


# --------------------------------------------------------------------------- --suggest

def _measured(saving_s: float):
    return affinity_pairs.difference([([0.010 + saving_s] * 10, [0.010] * 10)] * 2)


def _row(start: int, end: int, saving_s: float, api: str = "torch.nn.functional.gelu",
         equal: bool = True, file: str = "/x/examples/affinity/torch/gelu_formula/naive.py"):
    return {"file": file, "start_line": start, "end_line": end, "affinity_api": api,
            "saving_s": {"estimate": saving_s, "ci_low": saving_s / 2, "ci_high": 2 * saving_s},
            "outputs_equal": equal}


def test_compare_suggestions_needs_the_planted_lines_the_api_and_the_saving():
    pair = next(p for p in PAIRS if p.name == "torch/gelu_formula")
    line = pair.planted[0].start
    measured = _measured(0.001)
    good = affinity_pairs.compare_suggestions(pair, [_row(line, line, 0.0009)], measured)
    assert good.found_lines and good.right_api and good.outputs_equal and good.within_tolerance
    assert good.claimed_saving_s == pytest.approx(0.0009)
    off = affinity_pairs.compare_suggestions(pair, [_row(line + 1, line + 1, 0.001)], measured)
    assert not off.found_lines and not off.right_api
    other_file = affinity_pairs.compare_suggestions(
        pair, [_row(line, line, 0.001, file="/x/fixed.py")], measured)
    assert not other_file.found_lines
    wrong_api = affinity_pairs.compare_suggestions(
        pair, [_row(line, line, 0.001, api="torch.nn.functional.silu")], measured)
    assert wrong_api.found_lines and not wrong_api.right_api
    overclaimed = affinity_pairs.compare_suggestions(
        pair, [_row(line, line, 0.0015), _row(50, 50, 0.0005, equal=False)], measured)
    assert not overclaimed.within_tolerance and not overclaimed.outputs_equal
    assert good.agrees and not off.agrees and not wrong_api.agrees


def test_a_fix_measured_no_faster_agrees_only_when_not_called_faster():
    pair = next(p for p in PAIRS if p.name == "torch/gelu_formula")
    line = pair.planted[0].start
    slower = _measured(-0.001)
    assert slower.verdict == affinity_pairs.SLOWER
    no_gain = _row(line, line, -0.0002)
    no_gain["saving_s"] = {"estimate": -0.0002, "ci_low": -0.0005, "ci_high": 0.0001}
    assert affinity_pairs.compare_suggestions(pair, [no_gain], slower).agrees
    assert affinity_pairs.compare_suggestions(pair, [], slower).agrees
    called = affinity_pairs.compare_suggestions(pair, [_row(line, line, 0.001)], slower)
    assert not called.agrees


def test_suggest_is_skipped_with_a_message_when_opbench_model_lacks_it():
    skipped = affinity_pairs.SuggestCheck(False, "`opbench model --help` lists no --suggest")
    row = {"pair": "torch/gelu_formula", "planted": ["naive.py:43"], "outputs_equal": True,
           "difference": {"naive_median_s": 0.004, "fixed_median_s": 0.003,
                          "estimate_s": 0.001, "ci_low_s": 0.0008, "ci_high_s": 0.0012,
                          "ratio": 1.3, "ratio_low": 1.2, "ratio_high": 1.4,
                          "processes": 6, "verdict": "faster"},
           "suggest": skipped.__dict__}
    table = affinity_pairs.markdown([row], "python tools/affinity_pairs.py")
    assert "| `torch/gelu_formula` | naive.py:43 | 4.000 | 3.000 | 1.000 [0.800, 1.200] |" in table
    assert "lists no --suggest" in table and "+25.0%" in table


def test_rotation_moves_every_pair_through_the_order():
    names = ["a", "b", "c"]
    assert [affinity_pairs.rotated(names, k)[0] for k in range(3)] == names
    assert affinity_pairs.rotated(names, 4) == ["b", "c", "a"]


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p.name)
def test_the_static_scan_finds_the_planted_family_in_naive_only(pair):
    # `opbench scan --affinity` reads the same catalogue: a second reader of the planted lines
    family = f"{pair.framework}.{pair.family}"
    planted = _numbers(pair.planted)
    hits = find_affinity([pair.script("naive")]).hits
    assert any(h.family == family and planted & set(range(h.start_line, h.end_line + 1))
               for h in hits), f"{pair.name}: {[(h.family, h.start_line) for h in hits]}"
    # nothing else is planted: a second family would add a saving the pair does not measure
    assert {h.family for h in hits} == {family}, pair.name
    assert not find_affinity([pair.script("fixed")]).hits, pair.name


def test_run_suggest_skips_without_the_option_and_reads_the_rows_with_it(tmp_path, monkeypatch):
    pair = next(p for p in PAIRS if p.name == "torch/silu_formula")
    calls, environments = [], []

    def fake_run(command, **options):
        calls.append(command)
        environments.append(options.get("env"))
        if "--help" in command:
            return SimpleNamespace(stdout="Usage: opbench suggest", stderr="",
                                   returncode=help_status)
        json_path = Path(command[command.index("--json") + 1])
        json_path.write_text('{"suggestions": [{"file": "naive.py"}]}')
        return SimpleNamespace(stdout="", stderr="", returncode=0)

    monkeypatch.setattr(affinity_pairs.subprocess, "run", fake_run)
    help_status = 2
    rows, note = affinity_pairs.run_suggest(pair, tmp_path, lock=None)
    assert rows is None and "not compared" in note and len(calls) == 1
    help_status = 0
    rows, note = affinity_pairs.run_suggest(pair, tmp_path, lock=None)
    assert rows == [{"file": "naive.py"}] and note == "exit 0"
    command = calls[-1]
    assert command[command.index("--") + 1:][1] == str(pair.script("naive"))
    assert command[3] == "suggest" and command[command.index("--processes") + 1] == "6"
    # the script's interpreter imports this checkout's opbench, not the one a venv holds
    assert environments[-1]["PYTHONPATH"].split(os.pathsep)[0] == str(REPO)


def test_a_row_whose_replacement_did_not_run_changes_no_output():
    pair = next(p for p in PAIRS if p.name == "torch/gelu_formula")
    line = pair.planted[0].start
    measured = _measured(0.001)
    timed = _row(line, line, 0.001)
    untimed = {**_row(line, line, 0.0), "outputs_equal": None, "saving_s": None}
    assert affinity_pairs.compare_suggestions(pair, [timed, untimed], measured).outputs_equal
    differs = {**untimed, "outputs_equal": False}
    assert not affinity_pairs.compare_suggestions(pair, [timed, differs], measured).outputs_equal


def test_a_suggestion_on_other_lines_is_listed_but_not_summed_into_the_claim():
    """The fixed script changes the planted lines alone: a swap elsewhere (a MindSpore route
    swap of a call both scripts make) is in both steps, not in the measured difference."""
    pair = next(p for p in PAIRS if p.name == "torch/gelu_formula")
    line = pair.planted[0].start
    check = affinity_pairs.compare_suggestions(
        pair, [_row(line, line, 0.0009), _row(line + 2, line + 2, 0.004)], _measured(0.001))
    assert check.claimed_saving_s == pytest.approx(0.0009) and check.within_tolerance
    assert check.elsewhere == 1 and check.claimed_elsewhere_s == pytest.approx(0.004)


def test_suggest_runs_between_the_halves_of_its_pair_s_ground_truth(monkeypatch):
    """--suggest: the pair's processes run half before its `opbench suggest`, half after, so
    drift on the machine between them reaches the claim and the truth alike."""
    pair = PAIRS[0]
    events: list[str] = []

    def fake_process(framework, names, seconds, threads, lock):
        events.append("truth")
        return [f"samples of {names[0]}"]

    def fake_suggest(pair_, out_dir, lock):
        events.append("suggest")
        return [], "exit 0"

    monkeypatch.setattr(affinity_pairs, "run_process", fake_process)
    monkeypatch.setattr(affinity_pairs, "run_suggest", fake_suggest)
    for processes, expected in ((6, ["truth"] * 3 + ["suggest"] + ["truth"] * 3),
                                (5, ["truth"] * 3 + ["suggest"] + ["truth"] * 2),
                                (1, ["truth", "suggest"])):
        events.clear()
        args = argparse.Namespace(processes=processes, seconds=1.5, threads=1, lock=None,
                                  out=Path("/nonexistent"))
        got, suggestion = affinity_pairs.bracketed(pair, args)
        assert events == expected
        assert got == [f"samples of {pair.name}"] * processes
        assert suggestion == ([], "exit 0")

"""`opbench merge` (opbench/merge.py and its command): shards joined into one record that
passes the results schema and feeds report, gate (as baseline and as candidate) and history
like a single run; everything that would make the whole mean nothing is refused with the
file and the key; different machines only with --allow-machines, marked."""
from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from click.testing import CliRunner
from rich.console import Console
from test_cli import FAST, assert_user_error, cases_dir, fake_frameworks  # noqa: F401
from test_gate_evaluate import evaluate, instance, measurement, record, same_machine

from opbench.cli.main import cli
from opbench.report.markdown import render_markdown
from opbench.report.terminal import render_terminal
from opbench.report.text import timing_notes
from opbench.results.history import HistoryStore
from opbench.results.io import validate_record, write_json_atomic
from opbench.results.merge import MergeError, merge_records
from opbench.results.records import RunRecord, load_results

IDS = ("add[a]", "add[b]", "relu[a]", "sum[a]")
DIGEST = "0123456789abcdef"


def whole_run(seed: int, slowdown: dict[str, float] | None = None, **kwargs):
    """A single run of every id in IDS (target time x slowdown[id])."""
    rng = np.random.default_rng(seed)
    slowdown = slowdown or {}
    return record([instance(i, i.split("[")[0],
                            measurement(rng, 1e-3, 1e-3 * slowdown.get(i, 1.0)))
                   for i in IDS], **kwargs)


def as_shards(run: dict, groups=(("add[a]", "add[b]"), ("relu[a]", "sum[a]"))):
    """The run cut into shard records, as `opbench run --shard k/N` would write them."""
    parts = []
    for k, ids in enumerate(groups, start=1):
        part = copy.deepcopy(run)
        part["instances"] = [i for i in part["instances"] if i["id"] in ids]
        part["config"]["shard"] = {"index": k, "count": len(groups),
                                   "of_instances": len(run["instances"]),
                                   "selection": DIGEST}
        parts.append(part)
    return parts


def merge(parts: list[dict], file_names: list[str], **options) -> dict:
    """merge_records over parts given as their files' dicts; the merged record as its file
    holds it (what these tests check against the format)."""
    typed = [RunRecord.from_dict(p) for p in parts]
    return merge_records(typed, file_names, **options).to_dict()


def typed(record: dict) -> RunRecord:
    return RunRecord.from_dict(record)


def names(n):
    return [f"shard{k}.json" for k in range(1, n + 1)]


def verdicts(result):
    return {i.id: i.verdict.value for i in result.instances}


# --------------------------------------------------------------------------- joining

def test_shards_merge_into_the_unsharded_selection():
    run = whole_run(1)
    merged = merge(as_shards(run), names(2))
    assert [i["id"] for i in merged["instances"]] == list(IDS)
    assert merged["instances"] == run["instances"]       # measurements kept, not redone
    assert merged["complete"] and merged["absolute_times_comparable"]
    assert "shard" not in merged["config"] and merged["config"] == run["config"]
    assert [(p["file"], p["instances"], p["shard"]["index"]) for p in
            merged["merged_from"]] == [("shard1.json", 2, 1), ("shard2.json", 2, 2)]
    validate_record(merged)


def test_the_inputs_are_not_modified():
    parts = as_shards(whole_run(1))
    before = copy.deepcopy(parts)
    merge(parts, names(2))
    assert parts == before


def test_a_missing_shard_makes_an_incomplete_record_that_says_which():
    parts = as_shards(whole_run(1), groups=(("add[a]", "add[b]"), ("relu[a]",), ("sum[a]",)))
    merged = merge([parts[0], parts[2]], ["shard1.json", "shard3.json"])
    assert not merged["complete"] and merged["missing_shards"] == [2]
    assert "shard" not in merged["config"]
    validate_record(merged)
    console = Console(record=True, width=120)
    render_terminal(typed(merged), console)
    assert "shards 2 are missing" in console.export_text()
    # one shard alone is still that shard, complete as what it claims to be
    alone = merge(parts[:1], ["shard1.json"])
    assert alone["config"]["shard"]["index"] == 1 and alone["complete"]


def test_an_interrupted_part_makes_the_merge_incomplete():
    parts = as_shards(whole_run(1))
    parts[1]["complete"], parts[1]["interrupted"] = False, True
    merged = merge(parts, names(2))
    assert not merged["complete"] and merged["interrupted"]


# --------------------------------------------------------------------------- refusals

def refused(parts, *fragments, **kwargs):
    with pytest.raises(MergeError) as info:
        merge(parts, names(len(parts)), **kwargs)
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)


def test_a_duplicate_instance_is_refused_naming_both_files():
    parts = as_shards(whole_run(1), groups=(("add[a]", "add[b]"), ("add[b]", "sum[a]")))
    refused(parts, "instance 'add[b]' is in both shard1.json and shard2.json")


def test_another_opbench_version_is_refused():
    parts = as_shards(whole_run(1))
    parts[1]["environment"]["opbench"] = "0.2.0"
    refused(parts, "shard2.json: environment.opbench is '0.2.0', shard1.json has '0.1.0'")


def test_other_framework_versions_are_refused():
    parts = as_shards(whole_run(1))
    parts[1]["frameworks"]["mindspore"]["version"] = "2.11.0"
    refused(parts, "shard2.json: the frameworks", "'mindspore': '2.11.0'",
            "shard1.json has")


def test_two_builds_of_one_version_are_refused():
    parts = as_shards(whole_run(1))
    parts[0]["frameworks"]["mindspore"]["build"] = "4bcfac44"
    parts[1]["frameworks"]["mindspore"]["build"] = "91d0e2aa"
    refused(parts, "shard2.json: the frameworks (frameworks.*.version and .build)",
            "'mindspore': '2.10.0 (build 91d0e2aa)'", "'mindspore': '2.10.0 (build 4bcfac44)'",
            "the same framework builds")
    parts[1]["frameworks"]["mindspore"]["build"] = "4bcfac44"
    assert merge(parts, names(2))["frameworks"]["mindspore"]["build"] == "4bcfac44"


def test_other_case_files_are_refused():
    parts = as_shards(whole_run(1))
    parts[1]["config"]["shard"]["selection"] = "ffffffffffffffff"
    refused(parts, "shard2.json: config.shard.selection is 'ffffffffffffffff'",
            "different case files")
    parts = as_shards(whole_run(1))
    parts[1]["environment"]["git_commit"] = "def"
    refused(parts, "shard2.json: environment.git_commit is 'def', shard1.json has 'abc'")


def test_shards_of_different_matrices_or_a_shard_and_a_whole_run_are_refused():
    parts = as_shards(whole_run(1))
    parts[1]["config"]["shard"]["count"] = 3
    refused(parts, "config.shard.count is 3")
    parts = as_shards(whole_run(1))
    del parts[1]["config"]["shard"]
    refused(parts, "one is a shard (config.shard) and the other is not")


@pytest.mark.parametrize("key, value", [("threads", 1), ("modes", ["serial", "async"]),
                                        ("settings", {"rounds": 9})])
def test_another_configuration_is_refused(key, value):
    parts = as_shards(whole_run(1))
    parts[1]["config"][key] = value
    refused(parts, f"shard2.json: config.{key} is {value!r}")


def test_different_machines_are_refused_unless_allowed_and_then_marked():
    parts = as_shards(whole_run(1))
    parts[1]["environment"].update(machine_id="m2", cpu_model="other cpu", cpu_count=8)
    refused(parts, "environment.machine_id differs: shard1.json (m1), shard2.json (m2)",
            "not comparable", "--allow-machines")
    merged = merge(parts, names(2), allow_machines=True)
    validate_record(merged)
    assert merged["absolute_times_comparable"] is False
    assert merged["environment"]["machine_id"] == "mixed:m1+m2"
    assert merged["environment"]["cpu_model"] == "cpu | other cpu"
    assert merged["environment"]["cpu_count"] is None and merged["overhead"] == {}
    assert [i["machine_id"] for i in merged["instances"]] == ["m1", "m1", "m2", "m2"]
    # ratios are each machine's own, untouched
    assert [i["measurements"] for i in merged["instances"]] == \
        [i["measurements"] for p in parts for i in p["instances"]]
    # never "the same machine", not even as another merge of the same machines
    assert not same_machine(merged, copy.deepcopy(merged))
    assert not same_machine(merged, parts[0])
    console = Console(record=True, width=200)
    render_terminal(typed(merged), console)
    assert "absolute times of different rows are not comparable" in console.export_text()


# --------------------------------------------------------------------------- consumers

def test_a_merged_baseline_gates_like_the_single_run():
    baseline = whole_run(1)
    current = whole_run(2, slowdown={"relu[a]": 1.5})
    merged = merge(as_shards(baseline), names(2))
    single = evaluate(baseline, current)
    from_merge = evaluate(merged, current)
    assert verdicts(from_merge) == verdicts(single)
    assert verdicts(single)["relu[a]"] == "REGRESSION"
    assert from_merge.same_machine


def test_a_merged_candidate_gates_like_the_single_run():
    baseline = whole_run(1)
    current = whole_run(2, slowdown={"add[b]": 1.5})
    merged = merge(as_shards(current), names(2))
    assert verdicts(evaluate(baseline, merged)) == verdicts(evaluate(baseline, current))
    assert verdicts(evaluate(baseline, merged))["add[b]"] == "REGRESSION"


def test_a_merged_record_renders_and_goes_into_the_history(tmp_path):
    merged = merge(as_shards(whole_run(1)), names(2))
    console = Console(record=True, width=160)
    render_terminal(typed(merged), console)
    text = console.export_text()
    assert "4 instances" in text and "merged from 2 records" in text
    assert "sum[a]" in render_markdown(typed(merged))
    with HistoryStore(tmp_path / "h.db") as store:
        run_id, added = store.record_run(typed(merged), source="all.json", label="merged")
        assert added
        assert {p.instance_id for p in store.trend("add")} == {"add[a]", "add[b]"}
        assert [p.run_id for p in store.trend("sum")] == [run_id]


def test_each_part_keeps_its_own_set_up_and_measuring_time():
    parts = as_shards(whole_run(1))
    for seconds, part in zip((11.25, 9.5), parts):
        part["setup_s"] = seconds
        for inst in part["instances"]:
            inst["duration_s"] = 2.0
    merged = merge(parts, names(2))
    assert [(p["setup_s"], p["measuring_s"]) for p in merged["merged_from"]] == \
        [(11.25, 4.0), (9.5, 4.0)]
    assert "setup_s" not in merged            # one part's set-up is not the whole run's
    validate_record(merged)


def test_workers_parts_say_where_the_wall_time_went():
    parts = as_shards(whole_run(1))
    for k, (seconds, part) in enumerate(zip((11.0, 12.0), parts)):
        part["setup_s"] = seconds
        part["config"]["shard"] = None
        part["config"]["worker"] = {"id": f"gw{k}", "cpus": [k], "device": "cpu",
                                    "visible_device": None}
        for inst in part["instances"]:
            inst["duration_s"] = 3.0 + k
    merged = merge(parts, ["pytest-xdist worker gw0", "pytest-xdist worker gw1"])
    assert [i["worker"] for i in merged["instances"]] == ["gw0", "gw0", "gw1", "gw1"]
    validate_record(merged)
    notes = timing_notes(typed(merged))
    assert notes[0] == ("pytest-xdist worker gw0 (cores 0): 2 instances measured in 6.0 s "
                        "after a 11.0 s set-up (both frameworks imported in this process)")
    assert notes[1].startswith("pytest-xdist worker gw1 (cores 1): 2 instances measured in "
                               "8.0 s after a 12.0 s set-up")
    assert "slowest worker's set-up and measuring (20.0 s)" in notes[2]
    console = Console(record=True, width=300)
    render_terminal(typed(merged), console)
    assert "more workers shorten only the measuring" in console.export_text()


def test_a_single_run_says_its_set_up_and_measuring_time():
    run = whole_run(1)
    assert timing_notes(typed(run)) == []                   # not recorded: nothing claimed
    run["setup_s"], run["config"]["processes"] = 8.84, 3
    for inst in run["instances"]:
        inst["duration_s"] = 1.5
    assert timing_notes(typed(run)) == [
        "time: 8.8 s set-up (3 processes, each importing both frameworks; per-call "
        "floors and ceilings measured), 6.0 s measuring 4 instances"]
    validate_record(run)


# --------------------------------------------------------------------------- the command

def invoke(*args):
    return CliRunner().invoke(cli, list(args))


def write_parts(tmp_path, parts):
    paths = []
    for k, part in enumerate(parts, start=1):
        paths.append(str(tmp_path / f"shard{k}.json"))
        write_json_atomic(paths[-1], part)
    return paths


def test_merge_writes_a_record_that_report_and_history_read(tmp_path):
    paths = write_parts(tmp_path, as_shards(whole_run(1)))
    out = tmp_path / "all.json"
    result = invoke("merge", *paths, "-o", str(out))
    assert result.exit_code == 0, result.output
    assert "merged 4 instances from 2 files" in result.stderr
    assert [i.id for i in load_results(out).instances] == list(IDS)
    assert invoke("report", str(out)).exit_code == 0
    history = invoke("history", "--db", str(tmp_path / "h.db"), "--add", str(out))
    assert history.exit_code == 0, history.output


def test_merge_refusals_exit_2_naming_file_and_key(tmp_path):
    parts = as_shards(whole_run(1))
    parts[1]["config"]["threads"] = 1
    paths = write_parts(tmp_path, parts)
    result = invoke("merge", *paths, "-o", str(tmp_path / "all.json"))
    assert_user_error(result, "shard2.json: config.threads is 1")
    assert not (tmp_path / "all.json").exists()


def test_merge_of_a_file_that_is_no_record_exits_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"hello": 1}))
    assert_user_error(invoke("merge", str(bad), "-o", str(tmp_path / "o.json")),
                      "bad.json: not an opbench results file")


def test_shards_run_merged_and_gated_end_to_end(fake_frameworks, cases_dir, tmp_path):
    """`opbench run --shard` twice, `opbench merge`, then the gate with the merged record
    as its baseline: what the shards CI example in docs/gate.md does."""
    paths = []
    for k in (1, 2):
        paths.append(str(tmp_path / f"shard{k}.json"))
        result = invoke("run", str(cases_dir), *FAST, "--processes", "1", "-q", "--shard",
                        f"{k}/2", "--json", paths[-1])
        assert result.exit_code == 0, result.output
    merged = tmp_path / "all.json"
    assert invoke("merge", *paths, "-o", str(merged)).exit_code == 0
    ids = [i.id for i in load_results(merged).instances]
    assert sorted(ids) == ["add[shape=2x3]", "add[shape=4x8]", "sub"]
    result = invoke("gate", str(cases_dir), "--baseline", str(merged), "--processes", "1",
                    "-q", "--json", str(tmp_path / "current.json"))
    assert result.exit_code == 0, result.output
    assert "gate: PASS" in result.stdout


def test_parts_of_one_shard_stay_that_shard():
    """The workers of `pytest -n 2 --opbench-shard 1/2`: one shard measured in two parts."""
    shard = as_shards(whole_run(1))[0]
    parts = [copy.deepcopy(shard), copy.deepcopy(shard)]
    parts[0]["instances"], parts[1]["instances"] = shard["instances"][:1], shard["instances"][1:]
    merged = merge(parts, ["gw0", "gw1"])
    assert merged["config"]["shard"] == shard["config"]["shard"]
    assert "missing_shards" not in merged and merged["complete"]
    validate_record(merged)

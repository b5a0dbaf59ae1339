"""--shard K/N (opbench/shard.py and both front doors): N shards cover a selection exactly
once, a case's instances stay together, shards are balanced and the same on every call,
bad specs are usage errors, and the record says which shard it holds."""
from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from runner_fakes import binary_case, case_file, fake_session_class
from runner_fakes import load_instances as load_fake_instances
from test_cli import FAST, SWEEP_CASE, assert_user_error
from test_pytest_plugin_fake import project  # noqa: F401 - a fixture
from test_pytest_plugin_fake import run as run_pytest
from worker_fakes import Spawner

from opbench.cases.shard import assign, select, selection_digest, shard_info
from opbench.cli.main import cli
from opbench.config import Shard, ShardError, parse_shard
from opbench.results.records import load_results

pytest_plugins = ["pytester"]


def fake_instances(sizes: dict[str, int]) -> list:
    """Instances (only what sharding reads) of cases with the given numbers of sizes, in
    the selection's order: case by case."""
    return [SimpleNamespace(id=f"{name}[{i}]", case=SimpleNamespace(name=name))
            for name, n in sizes.items() for i in range(n)]


SIZES = {"add": 6, "softmax": 4, "sum": 3, "relu": 3, "mul": 2, "neg": 1, "exp": 1}


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7])
def test_shards_cover_the_selection_exactly_once(count):
    instances = fake_instances(SIZES)
    slices = [select(instances, Shard(k, count)) for k in range(1, count + 1)]
    ids = [inst.id for part in slices for inst in part]
    assert sorted(ids) == sorted(inst.id for inst in instances)
    assert len(ids) == len(set(ids))
    # a case's sizes are all in one shard
    for part_a, part_b in itertools.combinations(slices, 2):
        assert not {i.case.name for i in part_a} & {i.case.name for i in part_b}
    # each shard keeps the selection's order
    for part in slices:
        assert part == [i for i in instances if i in part]


def test_shards_are_balanced_by_instance_count():
    # 20 instances in 2 shards: largest-first puts 10 and 10 (add 6 + neg 1 + sum 3; ...)
    loads = [len(select(fake_instances(SIZES), Shard(k, 2))) for k in (1, 2)]
    assert loads == [10, 10]
    # 3 shards: the best possible split of 20 is 7/7/6; LPT reaches it here
    assert sorted(len(select(fake_instances(SIZES), Shard(k, 3))) for k in (1, 2, 3)) == \
        [6, 7, 7]


def test_the_slice_is_the_same_on_every_call_and_independent_of_hashing():
    keys = [i.case.name for i in fake_instances(SIZES)]
    assert assign(keys, 3) == assign(list(keys), 3)
    assert assign(keys, 3) == {"add": 1, "softmax": 2, "sum": 3, "relu": 3, "mul": 2,
                               "neg": 1, "exp": 2}


def test_an_empty_shard_says_how_many_shards_the_selection_allows():
    with pytest.raises(ShardError, match=r"shard 3/3 is empty: .* 2 case\(s\) of 3 "
                                         r"instance\(s\).*at most 2 shards"):
        select(fake_instances({"add": 2, "neg": 1}), Shard(3, 3))


@pytest.mark.parametrize("text, message", [
    ("0/2", "shard 0/2 does not exist: K/N needs 1 <= K <= N"),
    ("3/2", "shard 3/2 does not exist"),
    ("1/0", "shard 1/0 does not exist"),
    ("x", "'x' is not a shard: write K/N"),
    ("1/2/3", "is not a shard"),
    ("-1/2", "is not a shard"),
])
def test_bad_shard_specs_are_refused_with_a_reason(text, message):
    with pytest.raises(ShardError, match=message):
        parse_shard(text)


def test_a_shard_spec_reads_as_written():
    assert parse_shard(" 2 / 4 ") == Shard(2, 4) and str(Shard(2, 4)) == "2/4"


def test_the_selection_digest_changes_with_the_cases(tmp_path):
    a = load_fake_instances(case_file(tmp_path, SWEEP_CASE))
    b = load_fake_instances(case_file(tmp_path, SWEEP_CASE.replace("[2, 3]", "[2, 5]"),
                                      name="other.yaml"))
    assert selection_digest(a) == selection_digest(list(a))
    assert selection_digest(a) != selection_digest(b)
    assert shard_info(Shard(1, 2), a).of_instances == 2


# --------------------------------------------------------------------------- the CLI

@pytest.fixture
def fake_frameworks(monkeypatch):
    FakeSession = fake_session_class({})
    monkeypatch.setattr("opbench.runloop.recorded_run.Session", FakeSession)
    monkeypatch.setattr("opbench.runner.workers.spawn_worker", Spawner(FakeSession))


CASES = SWEEP_CASE + binary_case("sub", shape="[3]")


def invoke(*args):
    return CliRunner().invoke(cli, list(args))


@pytest.mark.parametrize("spec", ["0/2", "3/2", "x"])
def test_a_bad_shard_is_a_usage_error_before_anything_runs(tmp_path, spec):
    path = case_file(tmp_path, CASES)
    assert_user_error(invoke("run", str(path), "--shard", spec), "--shard: ")


def test_run_shards_record_their_slice_and_cover_the_run(fake_frameworks, tmp_path):
    path = case_file(tmp_path, CASES)
    records = []
    for k in (1, 2):
        out = tmp_path / f"shard{k}.json"
        result = invoke("run", str(path), *FAST, "--processes", "1", "-q", "--shard",
                        f"{k}/2", "--json", str(out))
        assert result.exit_code == 0, result.output
        records.append(load_results(out))      # valid against the results schema
    ids = [[i.id for i in r.instances] for r in records]
    assert ids == [["add[shape=4x8]", "add[shape=2x3]"], ["sub"]]
    whole = selection_digest(load_fake_instances(path))
    assert [r.config.shard.to_dict() for r in records] == [
        {"index": k, "count": 2, "of_instances": 3, "selection": whole} for k in (1, 2)]


def test_a_run_without_shard_records_none(fake_frameworks, tmp_path):
    out = tmp_path / "all.json"
    result = invoke("run", str(case_file(tmp_path, CASES)), *FAST, "--processes", "1", "-q",
                    "--json", str(out))
    assert result.exit_code == 0, result.output
    assert not load_results(out).config.has("shard")


def test_more_shards_than_cases_is_a_usage_error(fake_frameworks, tmp_path):
    result = invoke("run", str(case_file(tmp_path, CASES)), "--shard", "3/3")
    assert_user_error(result, "shard 3/3 is empty", "at most 2 shards")


# --------------------------------------------------------------------------- pytest

def test_pytest_shards_split_the_case_items_like_the_cli(project):
    import json

    kept = []
    for k in (1, 2):
        out = project.path / f"shard{k}.json"
        result = run_pytest(project, "--opbench-shard", f"{k}/2", "--opbench-json", str(out))
        assert result.ret == 0, result.stdout.str()
        record = json.loads(out.read_text())
        kept.append([i["id"] for i in record["instances"]])
        assert record["config"]["shard"]["index"] == k
        assert record["config"]["shard"]["of_instances"] == 3
    # add's two sizes together in shard 1, neg alone in shard 2
    assert kept == [["add[n=4]", "add[n=16]"], ["neg"]]


def test_a_bad_pytest_shard_is_a_usage_error(project):
    result = run_pytest(project, "--opbench-shard", "0/2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*opbench: --opbench-shard: shard 0/2 does not exist*"])

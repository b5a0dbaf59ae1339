"""The `opbench` command through click's CliRunner: listing, schemas, user errors (exit 2,
file:line, no traceback), reports of saved files, and whole runs on fake frameworks
(exit codes by verdict, interrupt)."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from runner_fakes import binary_case, case_file, fake_config, fake_session, fake_session_class
from runner_fakes import load_instances as load_fake_instances
from worker_fakes import Spawner

from opbench.cases.case_files import load_schema
from opbench.cli.main import cli
from opbench.results.io import results_schema
from opbench.results.records import load_results, write_results
from opbench.runloop.recorded_run import run

SWEEP_CASE = """
  - name: add
    tags: [math]
    params:
      shape: [[4, 8], [2, 3]]
    inputs:
      x: {shape: $shape}
      y: {shape: $shape}
    torch: {api: torch.add, args: [$x, $y]}
    mindspore: {api: mindspore.add, args: [$x, $y]}
"""


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=True)


def assert_user_error(result, *fragments: str) -> None:
    """Exit 2, the message on stderr, no Python traceback."""
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert "error:" in result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


@pytest.fixture
def cases_dir(tmp_path):
    directory = tmp_path / "cases"
    directory.mkdir()
    case_file(directory, SWEEP_CASE, binary_case("sub"), name="math.yaml")
    return directory


@pytest.fixture
def only_cases(cases_dir, monkeypatch):
    """cases_dir instead of the shipped library ($OPBENCH_CASES)."""
    monkeypatch.setenv("OPBENCH_CASES", str(cases_dir))
    return cases_dir


# --------------------------------------------------------------------------- no frameworks

def test_list_summarises_the_library(cases_dir):
    result = invoke("list", str(cases_dir))
    assert result.exit_code == 0, result.output
    assert "2 operators, 3 instances, 0 with backward, dtypes: float32" in result.stdout
    assert "math" in result.stdout


def test_list_instances_prints_ids_with_their_brackets(cases_dir):
    result = invoke("list", str(cases_dir), "--instances")
    assert result.exit_code == 0, result.output
    assert result.stdout.split() == ["add[shape=4x8]", "add[shape=2x3]", "sub"]


def test_list_filters_by_tag_and_keyword(cases_dir):
    assert invoke("list", str(cases_dir), "--instances", "--tag", "math").stdout.split() == [
        "add[shape=4x8]", "add[shape=2x3]"]
    assert invoke("list", str(cases_dir), "--instances", "-k", "2X3").stdout.split() == [
        "add[shape=2x3]"]


@pytest.mark.parametrize("which, schema", [("case", load_schema), ("results", results_schema)])
def test_schema_prints_the_json_schema(which, schema):
    result = invoke("schema", which)
    assert result.exit_code == 0
    assert json.loads(result.stdout) == schema()


def test_schema_defaults_to_the_case_schema():
    assert json.loads(invoke("schema").stdout) == load_schema()


def test_a_case_file_error_exits_2_naming_file_and_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("cases:\n  - name: add\n    inputs:\n      x: {shape: [2], dtype: float33}\n"
                    "    torch: {api: torch.add, args: [$x, $x]}\n"
                    "    mindspore: {api: mindspore.add, args: [$x, $x]}\n")
    for command in (["list"], ["check"], ["run"]):
        result = invoke(*command, str(path))
        assert_user_error(result, f"{path}:4 case 'add'", "float33")


def test_invalid_yaml_exits_2_with_the_line(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("cases:\n  - name: [unclosed\n")
    assert_user_error(invoke("list", str(path)), f"{path}:", "invalid YAML")


def test_a_missing_path_with_brackets_is_named_in_full(tmp_path):
    missing = tmp_path / "cases[v2]"
    assert_user_error(invoke("list", str(missing)), f"{missing}: no such case file")


def test_compare_an_unknown_op_exits_2_listing_the_known_ones(only_cases):
    result = invoke("compare", "reshpe")
    assert_user_error(result, "no case instance matches op reshpe", "ops there: add, sub")


def test_a_missing_opbench_cases_directory_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.setenv("OPBENCH_CASES", str(tmp_path / "nowhere"))
    assert_user_error(invoke("list"), "OPBENCH_CASES=", "no such case directory")


def test_commands_use_the_shipped_library_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPBENCH_CASES", raising=False)
    result = invoke("list", "--op", "reshape", "--instances")
    assert result.exit_code == 0, result.output
    assert "reshape[shape=8x16,dtype=float32]" in result.stdout


def test_compare_cases_adds_a_case_and_replaces_a_shipped_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPBENCH_CASES", raising=False)
    mine = tmp_path / "mine"
    mine.mkdir()
    # `reshape` replaces the shipped case of that name; `my_add` is new
    case_file(mine, binary_case("my_add"), binary_case("reshape"), name="mine.yaml")
    shipped = invoke("list", "--op", "reshape", "--instances").stdout.split()
    ids = invoke("list", "--op", "reshape", "--op", "my_add", "--instances").stdout.split()
    assert "my_add" not in ids
    result = invoke("compare", "reshape", "my_add", "--cases", str(mine), "--json",
                    str(tmp_path / "o.json"), "--threshold", "0")
    # (refused before anything runs: only the selection is of interest here)
    assert_user_error(result, "threshold must be a positive")
    from opbench.cli.common import default_cases_path, load_instances

    selected = [i.id for i in load_instances([default_cases_path()], ["reshape", "my_add"],
                                             extra_paths=[str(mine)])]
    assert "my_add" in selected
    assert selected.count("reshape") == 1          # the user's case, without params
    assert not any(i.startswith("reshape[") for i in selected)
    assert len(selected) == len(shipped) - sum(i.startswith("reshape[") for i in shipped) + 2


def test_one_framework_on_both_sides_in_one_process_is_refused(only_cases):
    result = invoke("compare", "add", "--reference", "numpy", "--target", "numpy",
                    "--processes", "1")
    assert_user_error(result, "one per side; --processes 1")


def test_an_unknown_framework_is_a_usage_error(cases_dir):
    # numpy first: the reference is set up before the target, and torch is not for unit tests
    result = invoke("check", str(cases_dir), "--reference", "numpy", "--target", "mindspor")
    assert_user_error(result, "unknown framework 'mindspor'", "did you mean 'mindspore'")


# --------------------------------------------------------------------------- saved results

@pytest.fixture
def saved_run(tmp_path):
    config = fake_config()
    instances = load_fake_instances(case_file(tmp_path, SWEEP_CASE))
    record = run(instances, config, session=fake_session(config, cost_s=4e-4))
    path = tmp_path / "saved.json"
    write_results(path, record)
    return path


def test_report_shows_a_saved_file_and_writes_markdown_and_html(saved_run, tmp_path):
    md, page = tmp_path / "r.md", tmp_path / "r.html"
    result = invoke("report", str(saved_run), "--markdown", str(md), "--html", str(page),
                    "--worst-first")
    assert result.exit_code == 0, result.output
    assert "add[4x8]" in result.stdout and "add[2x3]" in result.stdout   # short ids
    assert "0.25 [0.25, 0.25]" in result.stdout
    assert "2 instances: 2 SLOW" in result.stdout
    assert "`add[shape=2x3]`" in md.read_text()
    assert "<td>add[shape=4x8]</td>" in page.read_text()


def test_report_of_a_foreign_file_exits_2_naming_it(tmp_path):
    path = tmp_path / "other.json"
    path.write_text('{"hello": 1}')
    assert_user_error(invoke("report", str(path)), f"{path}: not an opbench results file")


# --------------------------------------------------------------------------- fake runs

@pytest.fixture
def fake_frameworks(monkeypatch):
    """`opbench run/compare/check` on FakeAdapters: Session.open() installs them on a fake
    clock. Returns the dict of target options a test may set before invoking."""
    target_options: dict = {}
    FakeSession = fake_session_class(target_options)
    # in-process runs (--processes 1) and worker processes (threads here) alike
    monkeypatch.setattr("opbench.runloop.recorded_run.Session", FakeSession)
    monkeypatch.setattr("opbench.runner.workers.spawn_worker", Spawner(FakeSession))
    return target_options


FAST = ("--rounds", "6", "--min-sample-time", "0.002", "--max-time", "1")


def test_a_passing_run_exits_0_and_saves_a_valid_file(fake_frameworks, cases_dir, tmp_path):
    out = tmp_path / "out.json"
    result = invoke("run", str(cases_dir), *FAST, "--json", str(out))
    assert result.exit_code == 0, result.output
    record = load_results(out)
    assert [i.verdict for i in record.instances] == ["PASS"] * 3
    assert record.config.settings.rounds == 6
    assert "[1/3] add[4x8]" in result.stderr       # progress lines: short ids
    assert "3 instances: 3 PASS" in result.stdout
    # where the wall time went: the set-up (opening, floors) apart from the measuring
    assert record.setup_s > 0
    assert "s set-up (" in result.stdout and "s measuring 3 instances" in result.stdout


def test_a_slow_target_exits_1(fake_frameworks, only_cases, tmp_path):
    fake_frameworks["costs"] = {"mindspore.add": 4e-4}
    result = invoke("compare", "add", *FAST, "-q",
                    "--json", str(tmp_path / "o.json"))
    assert result.exit_code == 1, result.output
    assert "2 instances: 2 SLOW" in result.stdout
    assert "[1/2]" not in result.stderr      # -q: no progress lines
    # the gap map's figures are in the file: a cause for every SLOW measurement
    causes = [m.cause for i in load_results(tmp_path / "o.json").instances
              for m in i.measurements.values()]
    assert causes and all(c is not None and c["kind"] in ("overhead", "kernel") for c in causes)


def test_an_error_only_run_exits_3(fake_frameworks, tmp_path):
    path = case_file(tmp_path, binary_case("broken", mindspore_api="mindspore.boom"))
    result = invoke("run", str(path), *FAST, "--json", str(tmp_path / "o.json"))
    assert result.exit_code == 3, result.output
    assert "fake kernel failed" in result.stdout


def _crashing_workers(fake_frameworks, monkeypatch, **dying) -> None:
    """Worker processes (fake) of which some die as an operator crash would: Spawner's
    die_on_run_in / die_on_extend_in / exit_code."""
    monkeypatch.setattr("opbench.runner.workers.spawn_worker",
                        Spawner(fake_session_class(fake_frameworks), **dying))


def test_a_crashed_worker_is_named_with_its_signal_and_instance(fake_frameworks, cases_dir,
                                                                tmp_path, monkeypatch):
    _crashing_workers(fake_frameworks, monkeypatch, die_on_run_in={1}, exit_code=-11)
    out = tmp_path / "o.json"
    result = invoke("run", str(cases_dir), *FAST, "--json", str(out))
    assert result.exit_code == 3, result.output       # an ERROR, the rest PASS
    # the terminal's problem lines: the short id, as in the table
    assert ("add[4x8]: worker process 1 was killed by SIGSEGV (signal 11) while running "
            "add[4x8]") in " ".join(result.stdout.split())
    crashed = load_results(out).instances[0]
    assert crashed.verdict == "ERROR"
    assert crashed.error == ("worker process 1 was killed by SIGSEGV (signal 11) while "
                             "running add[shape=4x8]")


def test_the_gate_junit_names_a_crashed_worker(fake_frameworks, cases_dir, tmp_path,
                                               monkeypatch):
    import xml.etree.ElementTree as ET

    base = tmp_path / "base.json"
    assert invoke("run", str(cases_dir), *FAST, "-q", "--json", str(base)).exit_code == 0
    # stage 1: worker 1 dies on the first instance's pass 1 (no measurement: BROKEN, then
    # re-measured in fresh processes, where it runs); worker 2 dies on its first later pass
    _crashing_workers(fake_frameworks, monkeypatch, die_on_run_in={1}, die_on_extend_in={2},
                      exit_code=-11)
    junit = tmp_path / "gate.xml"
    current = tmp_path / "current.json"
    result = invoke("gate", str(cases_dir), "--baseline", str(base), "-q",
                    "--junit", str(junit), "--json", str(current))
    assert result.exit_code == 3, result.output        # flaky, not compared: INCONCLUSIVE
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    skipped = cases["add[shape=4x8]"].find("skipped")
    assert ("stage 1 ERROR (worker process 1 was killed by SIGSEGV (signal 11) while running "
            "add[shape=4x8])") in skipped.get("message")
    lost_pass = ("pass 1: worker process 2 was killed by SIGSEGV (signal 11) while running "
                 "add[shape=2x3]")
    assert cases["add[shape=2x3]"].find("system-err").text == lost_pass
    assert load_results(current).instances[1].pass_errors == (lost_pass,)


def test_check_compares_without_timing(fake_frameworks, cases_dir, tmp_path):
    fake_frameworks["costs"] = {"mindspore.add": 4e-4}    # slow, but check does not time
    out = tmp_path / "check.json"
    result = invoke("check", str(cases_dir), "--json", str(out))
    assert result.exit_code == 0, result.output
    record = load_results(out)
    assert record.config.timing is False
    assert all(not i.has("measurements") for i in record.instances)


def test_a_mismatch_in_check_exits_1(fake_frameworks, cases_dir, tmp_path):
    fake_frameworks["functions"] = {"mindspore.add": lambda x, y: x - y}
    result = invoke("check", str(cases_dir), "--json", str(tmp_path / "o.json"))
    assert result.exit_code == 1, result.output
    assert "MISMATCH" in result.stdout


def test_an_unknown_api_exits_2_before_timing(fake_frameworks, tmp_path):
    path = case_file(tmp_path, binary_case("typo", mindspore_api="mindspore.ad"))
    result = invoke("run", str(path), *FAST, "--json", str(tmp_path / "o.json"))
    assert_user_error(result, "nothing was timed", f"{path}:", "mindspore.ad")


def test_an_interrupt_exits_130_and_keeps_the_finished_instances(fake_frameworks, tmp_path):
    path = case_file(tmp_path, binary_case("first"),
                     binary_case("second", mindspore_api="mindspore.interrupt"))
    out = tmp_path / "partial.json"
    # in this process: the fake op raises KeyboardInterrupt where Ctrl-C would land
    result = invoke("run", str(path), *FAST, "--processes", "1", "--json", str(out))
    assert result.exit_code == 130, result.output
    assert "1 finished instances saved" in result.stderr
    saved = json.loads(out.read_text())
    assert saved["interrupted"] is True
    assert [i["id"] for i in saved["instances"]] == ["first"]


def test_the_default_results_file_goes_to_out(fake_frameworks, cases_dir, tmp_path,
                                              monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("check", str(cases_dir), "-q")
    assert result.exit_code == 0, result.output
    (saved,) = (tmp_path / "out").glob("opbench-*.json")
    assert len(load_results(saved).instances) == 3


def test_list_shows_case_file_paths_with_brackets(tmp_path):
    directory = tmp_path / "lib[v2]"
    directory.mkdir()
    case_file(directory, binary_case("sub"), name="ops[v2].yaml")
    result = CliRunner().invoke(cli, ["list", str(directory)], terminal_width=400)
    assert result.exit_code == 0, result.output
    # the file's name (not its site-packages path), brackets not eaten as markup
    assert "ops[v2].yaml" in result.stdout.replace("\n", "")


def test_run_records_into_the_history_database(fake_frameworks, cases_dir, tmp_path):
    from opbench.results.history import HistoryStore

    db = tmp_path / "hist.db"
    for i, threshold in enumerate(["0.8", "0.5"]):
        result = invoke("run", str(cases_dir), *FAST, "-q", "--threshold", threshold, "--json",
                        str(tmp_path / f"out{i}.json"), "--history-db", str(db))
        assert result.exit_code == 0, result.output
        assert "recorded in" in result.stderr
    with HistoryStore(db) as store:
        assert store.run_count() == 2
        assert "add" in store.operators()


def test_run_for_gate_records_the_gate_settings_and_options_given_win(fake_frameworks,
                                                                      cases_dir, tmp_path):
    out = tmp_path / "base.json"
    result = invoke("run", str(cases_dir), "--for-gate", "--passes", "2", "--max-time", "1",
                    "--min-sample-time", "0.002", "-q", "--json", str(out))
    assert result.exit_code == 0, result.output
    config = load_results(out).config
    assert (config.launch, config.threads, config.passes) == ("blocking", 1, 2)
    assert config.settings.rounds == 40 and config.settings.max_time_s == 1
    m = load_results(out).instances[0].measurements["serial"]
    assert m.passes == 2 and m.rounds == 40


def test_the_gate_measures_like_its_baseline(fake_frameworks, cases_dir, tmp_path):
    base = tmp_path / "base.json"
    assert invoke("run", str(cases_dir), "--launch", "blocking", "--passes", "2",
                  "--rounds", "8", *FAST[2:], "--threads", "3", "-q",
                  "--json", str(base)).exit_code == 0
    current = tmp_path / "current.json"
    result = invoke("gate", str(cases_dir), "--baseline", str(base), "-q",
                    "--json", str(current))
    assert result.exit_code == 0, result.output
    assert ("measuring like the baseline: --mode serial, --threads 3, --launch blocking, "
            "--passes 2, --processes 3, --rounds 8, --min-sample-time 0.002, --max-time 1") in " ".join(
                result.stderr.split())
    config = load_results(current).config
    assert (config.launch, config.passes, config.threads) == ("blocking", 2, 3)
    assert "gate: PASS" in result.stdout


def test_the_gates_first_stage_is_the_run_path_of_every_command(fake_frameworks, tmp_path,
                                                                  monkeypatch):
    """Stage 1 goes through common.run_and_record like `opbench run`: SIGINT is taken back
    from MindSpore after each instance (the gate's own copy of the path did not), and an
    interrupt says how many instances were saved."""
    base = tmp_path / "base.json"
    assert invoke("run", str(case_file(tmp_path, binary_case("first"), binary_case("second"))),
                  *FAST, "--processes", "1", "-q", "--json", str(base)).exit_code == 0
    reclaimed = []
    monkeypatch.setattr("opbench.cli.interrupts.reclaim", lambda: reclaimed.append(1))
    now = case_file(tmp_path, binary_case("first"),
                    binary_case("second", mindspore_api="mindspore.interrupt"), name="now.yaml")
    out = tmp_path / "current.json"
    result = invoke("gate", str(now), "--baseline", str(base), "--json", str(out))
    assert result.exit_code == 130, result.output
    assert reclaimed
    assert f"1 finished instances saved in {out}" in " ".join(result.stderr.split())
    assert json.loads(out.read_text())["interrupted"] is True


def test_check_takes_its_options_from_the_table(fake_frameworks, cases_dir, tmp_path):
    out = tmp_path / "check.json"
    result = invoke("check", str(cases_dir), "--threads", "3", "--reference", "torch", "-q",
                    "--json", str(out))
    assert result.exit_code == 0, result.output
    config = load_results(out).config
    assert (config.threads, config.timing) == (3, False)


def test_a_gate_option_given_on_the_command_line_wins_and_is_listed(fake_frameworks,
                                                                    cases_dir, tmp_path):
    base = tmp_path / "base.json"
    assert invoke("run", str(cases_dir), "--passes", "2", "--rounds", "8", *FAST[2:], "-q",
                  "--json", str(base)).exit_code == 0
    result = invoke("gate", str(cases_dir), "--baseline", str(base), "--passes", "1", "-q",
                    "--json", str(tmp_path / "current.json"))
    assert "passes: 2 in the baseline, 1 now" in " ".join(result.stdout.split())


def test_the_gate_pools_several_baselines_and_says_so(fake_frameworks, cases_dir, tmp_path):
    paths = []
    for i in range(2):
        paths.append(str(tmp_path / f"base{i}.json"))
        assert invoke("run", str(cases_dir), *FAST, "-q", "--json", paths[-1]).exit_code == 0
    report = tmp_path / "gate.json"
    result = invoke("gate", str(cases_dir), "--baseline", paths[0], "--baseline", paths[1],
                    "-q", "--json", str(tmp_path / "current.json"), "--report", str(report))
    assert result.exit_code == 0, result.output
    assert "gate: PASS" in result.stdout
    assert "pools 2 runs" in " ".join(result.stdout.split())
    gate = json.loads(report.read_text())
    assert gate["notes"][0]["kind"] == "pooled baseline"


def test_baselines_measured_differently_are_not_pooled(fake_frameworks, cases_dir, tmp_path):
    a, b = str(tmp_path / "a.json"), str(tmp_path / "b.json")
    assert invoke("run", str(cases_dir), *FAST, "-q", "--json", a).exit_code == 0
    assert invoke("run", str(cases_dir), *FAST, "--passes", "2", "-q",
                  "--json", b).exit_code == 0
    result = invoke("gate", str(cases_dir), "--baseline", a, "--baseline", b, "-q")
    assert result.exit_code == 2
    assert "b.json: passes is 2" in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_a_regression_is_confirmed_by_a_second_stage_in_a_fresh_process(
        fake_frameworks, cases_dir, tmp_path):
    base = tmp_path / "base.json"
    assert invoke("run", str(cases_dir), *FAST, "-q", "--json", str(base)).exit_code == 0
    fake_frameworks["cost_s"] = 2e-4   # the target side now does twice the work
    report = tmp_path / "gate.json"
    result = invoke("gate", str(cases_dir), "--baseline", str(base), "--report", str(report),
                    "--json", str(tmp_path / "current.json"))
    assert result.exit_code == 1, result.output
    assert "in fresh processes" in result.stderr
    assert "stage 2 [" in result.stderr            # the child's progress lines
    gate = json.loads(report.read_text())
    assert sorted(gate["stage2_records"]) == ["add[shape=2x3]", "add[shape=4x8]", "sub"]
    assert not any(n["kind"] == "stage 2" for n in gate["notes"])
    assert "REGRESSION (2nd)" in result.stdout


def test_when_the_fresh_process_fails_stage_2_runs_here_and_the_report_says_so(
        fake_frameworks, cases_dir, tmp_path, monkeypatch):
    FakeSession = fake_session_class(fake_frameworks)
    base = tmp_path / "base.json"
    assert invoke("run", str(cases_dir), *FAST, "-q", "--json", str(base)).exit_code == 0
    # stage 1's three workers start; stage 2's cannot
    monkeypatch.setattr("opbench.runner.workers.spawn_worker", Spawner(FakeSession, fail_after=3))
    monkeypatch.setattr("opbench.runner.worker_main.default_session_factory",
                        lambda config, **kw: FakeSession(config, **kw))
    fake_frameworks["cost_s"] = 2e-4
    report = tmp_path / "gate.json"
    result = invoke("gate", str(cases_dir), "--baseline", str(base), "-q",
                    "--report", str(report), "--json", str(tmp_path / "current.json"))
    assert result.exit_code == 1, result.output
    notes = json.loads(report.read_text())["notes"]
    stage2 = [n["message"] for n in notes if n["kind"] == "stage 2"]
    assert stage2 and "cannot start worker process 1" in stage2[0]
    assert "Traceback" not in result.output


# --------------------------------------------------------------------------- opbench noise

def _three_runs(cases_dir, tmp_path) -> list[str]:
    paths = []
    for i in range(3):
        paths.append(str(tmp_path / f"run{i}.json"))
        assert invoke("run", str(cases_dir), *FAST, "-q", "--json", paths[-1]).exit_code == 0
    return paths


def test_noise_writes_a_profile_the_gate_reads(fake_frameworks, cases_dir, tmp_path):
    runs = _three_runs(cases_dir, tmp_path)
    profile = tmp_path / "noise.json"
    result = invoke("noise", *runs, "--json", str(profile))
    assert result.exit_code == 0, result.output
    assert "noise floor against a baseline of 2 process(es)" in result.stdout
    assert "3 instances from 3 runs" in " ".join(result.stdout.split())
    from opbench.gate.noise import NoiseProfile

    read = NoiseProfile.read(str(profile))
    assert sorted(read.instances) == ["add[shape=2x3]", "add[shape=4x8]", "sub"]
    assert read.sources == tuple(runs)

    fake_frameworks["cost_s"] = 2e-4          # twice the work: beyond any floor of these runs
    report = tmp_path / "gate.json"
    gated = invoke("gate", str(cases_dir), "--baseline", runs[0], "--noise", str(profile), "-q",
                   "--report", str(report), "--json", str(tmp_path / "current.json"))
    assert gated.exit_code == 1, gated.output
    notes = json.loads(report.read_text())["notes"]
    assert any(n["kind"] == "noise floor" and "raised for 0 of 3" in n["message"]
               for n in notes)


def test_a_noise_floor_above_the_drop_passes_it_and_says_so(fake_frameworks, cases_dir,
                                                           tmp_path):
    base = str(tmp_path / "base.json")
    assert invoke("run", str(cases_dir), *FAST, "-q", "--json", base).exit_code == 0
    profile = {"opbench_noise_version": 1, "sources": ["x"], "instances": {
        i: {"processes": 5, "sd": {"serial": {"ratio": 0.3, "target time": 0.3,
                                              "reference time": 0.3}}}
        for i in ("add[shape=2x3]", "add[shape=4x8]", "sub")}}
    (tmp_path / "noise.json").write_text(json.dumps(profile))
    fake_frameworks["cost_s"] = 2e-4   # a 50% drop; floor 1 - exp(-2.5 * 0.3 * 1.41) = 65%
    report = tmp_path / "gate.json"
    summary = tmp_path / "summary.md"
    result = invoke("gate", str(cases_dir), "--baseline", base, "-q", "--noise",
                    str(tmp_path / "noise.json"), "--report", str(report),
                    "--markdown", str(summary), "--json", str(tmp_path / "current.json"))
    assert result.exit_code == 0, result.output
    assert summary.read_text().count("65% (noise floor)") == 3
    gate = json.loads(report.read_text())
    assert all(i["min_effect"] > 0.6 for i in gate["instances"])
    assert "raised from 10% to this instance's noise floor" in gate["instances"][0]["reason"]
    assert "noise floor" in result.stdout


@pytest.mark.parametrize("content, message", [
    ("[1, 2", "not JSON"),
    ('{"x": 1}', "not an opbench noise file"),
])
def test_a_bad_noise_file_stops_the_gate_before_measuring(fake_frameworks, cases_dir,
                                                          tmp_path, content, message):
    base = str(tmp_path / "base.json")
    assert invoke("run", str(cases_dir), *FAST, "-q", "--json", base).exit_code == 0
    bad = tmp_path / "noise.json"
    bad.write_text(content)
    result = invoke("gate", str(cases_dir), "--baseline", base, "--noise", str(bad), "-q")
    assert_user_error(result, str(bad), message)


def test_noise_needs_three_runs(fake_frameworks, cases_dir, tmp_path):
    runs = _three_runs(cases_dir, tmp_path)[:2]
    assert_user_error(invoke("noise", *runs), "at least 3")


@pytest.mark.parametrize("command", ["resample", "replay"])     # replay: its former name
def test_resample_tells_how_often_the_gate_would_pass_and_catch(fake_frameworks, cases_dir,
                                                                tmp_path, command):
    runs = _three_runs(cases_dir, tmp_path)
    injected = []
    fake_frameworks["cost_s"] = 2e-4
    for i in range(2):
        injected.append(str(tmp_path / f"slow{i}.json"))
        assert invoke("run", str(cases_dir), *FAST, "-q", "--json", injected[-1]).exit_code == 1
    result = invoke(command, *runs, "-m", "1", "--profile-processes", "0", "--gates", "5",
                    *(a for p in injected for a in ("--injected", p)))
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "5 resampled gates per row over 3 processes" in text
    # A/A: every gate passed, none failed; injected: every instance caught, every gate failed
    row = "1 process │ none │ 100% │ 0.0% │ 0% │ 0.00% │ 0.0% │ 100% │ 100%"
    assert row in text


def test_resample_with_too_few_runs_says_how_many_it_needs(fake_frameworks, cases_dir,
                                                           tmp_path):
    runs = _three_runs(cases_dir, tmp_path)
    assert_user_error(invoke("resample", *runs, "-m", "2"),
                      "3 runs given; a resampled gate draws 4")


def test_the_set_up_line_says_how_many_processes_start_first():
    """A sequential run starts one worker process and more only for undecided instances: the
    progress line said "in 3 worker processes" (issue 35's note)."""
    from opbench.cli.common import _processes_text
    from opbench.config.options import RunOptions

    sequential = RunOptions().to_config(sequential=True)
    fixed = RunOptions.from_mapping({"processes": 3}).to_config()
    assert sequential.sequential is not None and fixed.sequential is None
    assert _processes_text(sequential, " in ") == " in 1 worker process at first (more when needed)"
    assert _processes_text(fixed, "") == "3 worker processes"

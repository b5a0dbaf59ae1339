"""Case files as an attack surface (issue #15): a case file arrives in a pull request and CI
runs it, so no case file may run code, exhaust the machine or crash the loader. Every
refusal is a clear error naming the file, the case and the key, with exit 2 in the CLI."""
from __future__ import annotations

import pytest
from click.testing import CliRunner
from runner_fakes import binary_case, case_file

from opbench.cases.case_files import CaseError, load_case_file
from opbench.cli.main import cli


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=True)


def assert_user_error(result, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


# -- 1. API paths that leave their framework --------------------------------------------------

@pytest.mark.parametrize("section, api", [
    ("torch", "torch.os.system"), ("torch", "torch.builtins.eval"),
    ("mindspore", "mindspore.context.os.system"), ("torch", "torch.Tensor.__class__"),
    ("torch", "torch.nn.functional.softmax.__globals__"), ("torch", "torch.load"),
    ("torch", "torch.utils.cpp_extension.load_inline"), ("mindspore", "Tensor.tofile"),
])
def test_an_api_path_out_of_its_framework_is_refused_at_load_time(tmp_path, section, api):
    apis = {"torch_api": "torch.add", "mindspore_api": "mindspore.add", f"{section}_api": api}
    path = case_file(tmp_path, binary_case("pwn", **apis))
    with pytest.raises(CaseError) as err:
        load_case_file(path)
    line = 6 if section == "torch" else 7
    assert str(err.value).startswith(f"{path}:{line} case 'pwn': key '{section}.api': {api}:")
    for command in ("list", "check"):
        assert_user_error(invoke(command, str(path)), "case 'pwn'", api)
    assert not (tmp_path / "PWNED").exists()


# -- 2. alias bombs, 9. deep nesting, 10. one parse ---------------------------------------------

def alias_bomb(levels: int = 30, inside_cases: bool = False) -> str:
    """Each level doubles: 2**levels values from ~levels lines."""
    lines = ["a0: &a0 [x, x]"] + [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}]"
                                  for i in range(1, levels)]
    if inside_cases:
        body = "\n".join("    " + line for line in lines)
        return (f"cases:\n  - name: bomb\n    params:\n{body.replace('    a', '      a')}\n"
                "    torch: {api: torch.add}\n    mindspore: {api: mindspore.add}\n")
    return "\n".join(lines) + "\ncases: []\n"


@pytest.mark.parametrize("inside_cases", [False, True])
def test_an_alias_bomb_is_refused_quickly(tmp_path, inside_cases):
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb(inside_cases=inside_cases))
    with pytest.raises(CaseError, match=r"YAML aliases expand to more than 100,000 values"):
        load_case_file(path)
    assert_user_error(invoke("list", str(path)), f"{path}:", "alias bomb")


def test_shared_anchors_and_merge_keys_still_load(tmp_path):
    path = tmp_path / "anchors.yaml"
    path.write_text("defaults: &d {torch: {api: torch.add, args: [$x, $x]},\n"
                    "              mindspore: {api: mindspore.add, args: [$x, $x]}}\n"
                    "cases: []\n")
    path.write_text("cases:\n  - &first\n    name: a\n    inputs: {x: {shape: [2]}}\n"
                    "    torch: {api: torch.add, args: [$x, $x]}\n"
                    "    mindspore: {api: mindspore.add, args: [$x, $x]}\n"
                    "  - <<: *first\n    name: b\n")
    assert [c.name for c in load_case_file(path)] == ["a", "b"]


@pytest.mark.parametrize("levels", [65, 20_000, 300_000])
def test_deep_nesting_is_refused_without_a_traceback_or_a_crash(tmp_path, levels):
    # 20,000 levels: RecursionError in PyYAML; 300,000: a segfault in libyaml's composer
    path = tmp_path / "deep.yaml"
    path.write_text("cases: " + "[" * levels + "]" * levels + "\n")
    with pytest.raises(CaseError, match=r":1: nested more than 64 levels deep"):
        load_case_file(path)


def test_the_file_is_parsed_once_with_libyaml(tmp_path, monkeypatch):
    import yaml

    from opbench.cases import yaml_source as case_yaml

    made = []
    real = case_yaml._EVENT_SOURCE
    monkeypatch.setattr(case_yaml, "_EVENT_SOURCE",
                        lambda text: made.append(real) or real(text))
    monkeypatch.setattr(yaml, "load", lambda *a, **k: pytest.fail("parsed a second time"))
    path = case_file(tmp_path, binary_case("add"))
    assert [c.name for c in load_case_file(path)] == ["add"]
    assert made == [yaml.CSafeLoader]


def test_an_empty_directory_says_it_holds_no_case_files(tmp_path):
    (tmp_path / "empty").mkdir()
    assert_user_error(invoke("list", str(tmp_path / "empty")),
                      f"{tmp_path / 'empty'}: no case files (*.yaml, *.yml) in this directory")


# -- 3. sweeps, 4. input sizes -----------------------------------------------------------------

def sweep_case(axes: int, values: int) -> str:
    params = "\n".join(f"      p{i}: [{', '.join(str(v) for v in range(values))}]"
                       for i in range(axes))
    return (f"cases:\n  - name: sweep\n    params:\n{params}\n"
            "    inputs: {x: {shape: [2]}}\n"
            "    torch: {api: torch.neg, args: [$x]}\n"
            "    mindspore: {api: mindspore.ops.neg, args: [$x]}\n")


def test_a_huge_sweep_is_refused_before_it_is_expanded(tmp_path, monkeypatch):
    monkeypatch.delenv("OPBENCH_MAX_INSTANCES", raising=False)
    path = tmp_path / "sweep.yaml"
    path.write_text(sweep_case(8, 10))   # 10**8 instances
    with pytest.raises(CaseError) as err:
        load_case_file(path)
    assert str(err.value) == (
        f"{path}:3 case 'sweep': key 'params': the sweep makes 100,000,000 instances "
        f"(10 x 10 x 10 x 10 x 10 x 10 x 10 x 10), more than the limit of 100,000; raise it "
        f"with --max-instances or OPBENCH_MAX_INSTANCES if the case really needs them")
    assert_user_error(invoke("list", str(path)), "100,000,000 instances")


def test_the_sweep_limit_can_be_raised_or_lowered(tmp_path, monkeypatch):
    monkeypatch.delenv("OPBENCH_MAX_INSTANCES", raising=False)
    path = tmp_path / "sweep.yaml"
    path.write_text(sweep_case(2, 10))   # 100 instances
    assert_user_error(invoke("--max-instances", "99", "list", str(path)), "more than the "
                                                                           "limit of 99")
    monkeypatch.delenv("OPBENCH_MAX_INSTANCES", raising=False)
    result = invoke("--max-instances", "100", "list", str(path))
    assert result.exit_code == 0, result.output
    monkeypatch.setenv("OPBENCH_MAX_INSTANCES", "50")
    assert_user_error(invoke("list", str(path)), "more than the limit of 50")


def test_inputs_over_the_memory_budget_are_refused_naming_case_and_size(tmp_path,
                                                                         monkeypatch):
    monkeypatch.delenv("OPBENCH_INPUT_BUDGET", raising=False)
    path = case_file(tmp_path, binary_case("huge", shape="[50000, 50000]"))  # 2 x 9.3 GiB
    with pytest.raises(CaseError) as err:
        load_case_file(path)
    message = str(err.value)
    assert message.startswith(f"{path}:4 case 'huge': key 'inputs.x': instance huge: its "
                              f"inputs need 18.6 GiB (x 9.3 GiB, y 9.3 GiB), more than the "
                              f"input budget of ")
    assert "--input-budget" in message
    monkeypatch.setenv("OPBENCH_INPUT_BUDGET", "32GiB")
    assert [c.name for c in load_case_file(path)] == ["huge"]
    monkeypatch.delenv("OPBENCH_INPUT_BUDGET")
    assert_user_error(invoke("--input-budget", "1KiB", "list", str(case_file(
        tmp_path, binary_case("small", shape="[64, 64]"), name="small.yaml"))),
        "its inputs need 32.0 KiB", "input budget of 1.0 KiB")


# -- 5. non-finite numbers ---------------------------------------------------------------------

@pytest.mark.parametrize("extra, key", [
    ("tolerance: {atol: .inf}", "tolerance.atol"), ("tolerance: {rtol: .nan}", "tolerance.rtol"),
    ("tolerance: {rtol: 1e400}", "tolerance.rtol"), ("threshold: 1e309", "threshold"),
    ("min_effect: .nan", "min_effect"), ("threshold: .nan", "threshold"),
])
def test_non_finite_numbers_are_refused(tmp_path, extra, key):
    path = case_file(tmp_path, binary_case("add", extra=extra))
    with pytest.raises(CaseError) as err:
        load_case_file(path)
    assert f"case 'add': key '{key}': must be a finite number, got " in str(err.value)
    assert_user_error(invoke("check", str(path)), f"key '{key}'")


# -- 7. results that cannot be written; 9. file mode -------------------------------------------

@pytest.fixture
def fake_frameworks(monkeypatch):
    from runner_fakes import fake_session_class
    from worker_fakes import Spawner

    FakeSession = fake_session_class({})
    monkeypatch.setattr("opbench.runloop.recorded_run.Session", FakeSession)
    monkeypatch.setattr("opbench.runner.workers.spawn_worker", Spawner(FakeSession))


FAST = ("--rounds", "6", "--min-sample-time", "0.002", "--max-time", "1")


@pytest.mark.parametrize("make_bad_path", [
    lambda tmp: tmp / "a_file" / "out.json",          # a file where a directory should be
    lambda tmp: tmp / "a_file" / "deeper" / "out.json",
])
def test_an_unwritable_results_path_exits_2_before_measuring(fake_frameworks, tmp_path,
                                                             monkeypatch, make_bad_path):
    (tmp_path / "a_file").write_text("")
    (tmp_path / "dir_as_file").mkdir()
    measured = []
    monkeypatch.setattr("opbench.runner.session.Session.run_instance",
                        lambda self, inst: measured.append(inst))
    path = case_file(tmp_path, binary_case("add"))
    result = invoke("run", str(path), *FAST, "--json", str(make_bad_path(tmp_path)))
    assert_user_error(result, "cannot save results to")
    assert measured == []


def test_a_read_only_directory_exits_2_before_measuring(fake_frameworks, tmp_path):
    import os

    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as a user who can write anywhere (root)")
        path = case_file(tmp_path, binary_case("add"))
        assert_user_error(invoke("check", str(path), "--json", str(locked / "o.json")),
                          "cannot save results to", "Permission denied")
    finally:
        locked.chmod(0o700)


def test_a_write_failing_mid_run_keeps_measuring_and_ends_with_a_clear_error(
        fake_frameworks, tmp_path, monkeypatch):
    import errno

    from opbench.results import io as results
    from opbench.results import safe_write

    real = results.write_json_atomic
    calls = []

    def disk_full_after_first_save(path, data):
        calls.append(len(data["instances"]))
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real(path, data)

    monkeypatch.setattr(safe_write.ResilientSaver.__init__, "__defaults__",
                        (disk_full_after_first_save,))
    path = case_file(tmp_path, binary_case("first"), binary_case("second"))
    out = tmp_path / "o.json"
    result = invoke("run", str(path), *FAST, "--json", str(out))
    assert_user_error(result, f"could not write the results to {out}: No space left on "
                              f"device", "kept in memory")
    assert "first" in result.stdout and "second" in result.stdout   # the table is shown
    assert max(calls) == 2   # both instances were measured and every save retried


def test_results_files_follow_the_umask(tmp_path):
    import os

    from opbench.results.io import write_json_atomic

    old = os.umask(0o022)
    try:
        write_json_atomic(tmp_path / "r.json", {"a": 1})
    finally:
        os.umask(old)
    assert (tmp_path / "r.json").stat().st_mode & 0o777 == 0o644


# -- 9. Ctrl-C while loading ---------------------------------------------------------------------

def test_ctrl_c_during_start_up_exits_130_with_a_message(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    path = case_file(tmp_path, *(binary_case(f"add{i}") for i in range(4000)))
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": root}
    # The signal must land after the CLI installed its handler (after its imports) and
    # before the 4,000 cases are loaded (~4 s more here). A fixed 1 s wait failed once in a
    # loaded unit run: the imports alone took longer. Wait for this machine's import time now.
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import opbench.cli.main"], env=env, check=True)
    imports_s = time.perf_counter() - began
    proc = subprocess.Popen([sys.executable, "-m", "opbench.cli.main", "list", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    time.sleep(max(1.0, 2 * imports_s + 0.3))
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted (SIGINT)" in stderr and "Traceback" not in stderr


# -- 8. the gate's history database; 9. bad baselines -------------------------------------------

@pytest.fixture
def gate_setup(fake_frameworks, tmp_path, monkeypatch):
    """A case file and a baseline measured on the fakes; counts what the gate measures."""
    path = case_file(tmp_path, binary_case("add"))
    base = tmp_path / "base.json"
    assert invoke("run", str(path), *FAST, "-q", "--json", str(base)).exit_code == 0
    return path, base


def gate(path, base, tmp_path, *extra):
    return invoke("gate", str(path), "--baseline", str(base), *FAST, "-q",
                  "--json", str(tmp_path / "cur.json"), *extra)


def test_a_garbage_history_database_stops_the_gate_before_measuring(gate_setup, tmp_path):
    path, base = gate_setup
    db = tmp_path / "h.db"
    db.write_bytes(b"this is not sqlite" * 100)
    assert_user_error(gate(path, base, tmp_path, "--history-db", str(db)),
                      "not a usable opbench history database")
    assert not (tmp_path / "cur.json").exists()


def test_a_locked_history_database_waits_then_stops_before_measuring(gate_setup, tmp_path,
                                                                      monkeypatch):
    import sqlite3

    from opbench.results import history

    path, base = gate_setup
    db = tmp_path / "h.db"
    history.HistoryStore(db).close()
    monkeypatch.setattr(history.HistoryStore.__init__, "__defaults__", (0.2,))
    holder = sqlite3.connect(db)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        assert_user_error(gate(path, base, tmp_path, "--history-db", str(db)),
                          "database is locked")
    finally:
        holder.close()
    assert not (tmp_path / "cur.json").exists()


def test_a_history_failure_after_measuring_keeps_the_verdict(gate_setup, tmp_path,
                                                             monkeypatch):
    from opbench.results import history

    path, base = gate_setup

    def locked(self, *a, **k):
        raise history.HistoryError(f"{self.path}: could not record the run (database is "
                                   f"locked)")

    monkeypatch.setattr(history.HistoryStore, "record_run", locked)
    result = gate(path, base, tmp_path, "--history-db", str(tmp_path / "h.db"))
    assert result.exit_code in (0, 3), result.output    # the gate's own verdict
    assert "history: not recorded" in result.stderr
    assert "opbench gate" in result.stdout               # the table is shown


def test_a_baseline_with_empty_samples_is_a_bad_baseline(gate_setup, tmp_path):
    import json

    path, base = gate_setup
    data = json.loads(base.read_text())
    data["instances"][0]["measurements"]["serial"]["samples_s"]["mindspore"] = []
    base.write_text(json.dumps(data))
    assert_user_error(gate(path, base, tmp_path), "not a usable baseline",
                      "has no samples for mindspore")


def test_a_baseline_of_other_cases_is_refused_before_measuring(gate_setup, tmp_path):
    _, base = gate_setup
    other = case_file(tmp_path, binary_case("other", shape="[3]"), name="other.yaml")
    assert_user_error(gate(other, base, tmp_path), "shares no instance with the selected cases")
    assert not (tmp_path / "cur.json").exists()


def test_a_string_schema_version_gets_a_message_that_makes_sense(tmp_path):
    from opbench.results.io import ResultsError
    from opbench.results.records import load_results

    path = tmp_path / "r.json"
    path.write_text('{"schema_version": "1"}')
    with pytest.raises(ResultsError, match=r"schema_version must be an integer, got '1' \(str\)"):
        load_results(path)

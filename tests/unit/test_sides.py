"""A side is a framework in an interpreter: parsing `--reference`/`--target`, named
environments, the interpreter check, and a pool whose worker processes each hold one side."""
from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import pytest
from runner_fakes import binary_case, case_file, fake_config, fake_session_class, load_instances
from worker_fakes import Spawner

import opbench.runner.workers as workers_mod
from opbench.runner import ipc
from opbench.config import OPBENCH_VERSION
from opbench.config.options import OptionError, RunOptions
from opbench.runner.measure import WarmUp
from opbench.config.environment_table import load_environments
from opbench.config.sides import Side, SideSpecError, parse_side
from opbench.runloop.recorded_run import run
from opbench.runner.interpreters import InterpreterError, check_interpreter
from opbench.runner.ipc import wire_fingerprint
from opbench.runner.workers import SidePair, WorkerPool
from opbench.runner.workers import WorkerError


def test_a_side_is_a_framework_an_interpreter_or_a_named_environment():
    envs = {"ms29": Side("mindspore", "/envs/ms29/bin/python", "ms29")}
    assert parse_side("torch") == Side("torch", None, "torch")
    assert parse_side("mindspore@/x/bin/python") == Side("mindspore", "/x/bin/python",
                                                         "mindspore@x")
    assert parse_side("ms29", envs) == Side("mindspore", "/envs/ms29/bin/python", "ms29")
    with pytest.raises(SideSpecError, match="no interpreter after '@'"):
        parse_side("torch@")


def test_environments_come_from_pyproject_and_opbench_toml(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.opbench.environments]\nms29 = {framework = "mindspore", '
        'python = "envs/ms29/bin/python"}\nold = {framework = "torch"}\n')
    (tmp_path / "opbench.toml").write_text(
        '[environments]\nold = {framework = "torch", python = "/opt/t/bin/python"}\n')
    envs = load_environments(tmp_path)
    assert envs["ms29"] == Side("mindspore", str(tmp_path / "envs/ms29/bin/python"), "ms29")
    assert envs["old"] == Side("torch", "/opt/t/bin/python", "old")     # opbench.toml wins


def test_a_bad_environment_entry_names_the_file_and_the_entry(tmp_path):
    (tmp_path / "opbench.toml").write_text('[environments]\nx = {framework = "jax"}\n')
    with pytest.raises(SideSpecError, match=r"opbench.toml: environment 'x': unknown framework"):
        load_environments(tmp_path)


def test_the_options_carry_each_side_s_interpreter(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = RunOptions(reference="torch@/a/python", target="mindspore").to_config()
    assert (config.reference_name, config.reference.python, config.target.python) == (
        "torch", "/a/python", None)
    assert config.in_workers and config.python_of("torch") == "/a/python"
    assert "reference_python" in config.as_dict() and "target_python" not in config.as_dict()
    with pytest.raises(OptionError, match="another interpreter runs in worker processes"):
        RunOptions(reference="torch@/a/python", processes=1).to_config()


def _fake_probe(stdout="", returncode=0, stderr=""):
    def fake_run(argv, **kwargs):
        return SimpleNamespace(stdout=stdout, stderr=stderr, returncode=returncode)
    return fake_run


@pytest.mark.parametrize("answer,words", [
    ('{"opbench": null, "has_framework": true, "python": "3.11.2"}',
     r"cannot import opbench; install it there: .* -m pip install "),
    ('{"opbench": "0.0.1-old", "has_framework": true, "python": "3.11.2"}',
     r"has opbench 0.0.1-old, this one is .*; install the same there"),
    (f'{{"opbench": "{OPBENCH_VERSION}", "wire": "{wire_fingerprint()}", '
     f'"has_framework": false, "python": "3.11.2"}}',
     r"has no mindspore; install it there: .* -m pip install mindspore"),
    # the same version string, other worker messages (an older install beside a checkout):
    # its worker would die on the first request it cannot unpickle
    (f'{{"opbench": "{OPBENCH_VERSION}", "wire": "0123456789abcdef", "has_framework": true, '
     f'"python": "3.11.2"}}',
     r"with other worker messages than this one .*install this one there"),
    (f'{{"opbench": "{OPBENCH_VERSION}", "wire": null, "has_framework": true, '
     f'"python": "3.11.2"}}',
     r"with other worker messages than this one"),
    ("", r"did not answer the probe: no output"),
])
def test_an_unfit_interpreter_says_why_and_what_to_run(answer, words):
    with pytest.raises(InterpreterError, match=words):
        check_interpreter(sys.executable, "mindspore", run=_fake_probe(answer))


def test_a_missing_interpreter_says_so(tmp_path):
    with pytest.raises(InterpreterError, match="does not exist or is not executable"):
        check_interpreter(str(tmp_path / "nope" / "python"), "torch")


def test_this_interpreter_passes_the_real_probe():
    facts = check_interpreter(sys.executable, "numpy", run=subprocess.run)
    assert facts.opbench == OPBENCH_VERSION


def test_a_pool_checks_each_interpreter_before_starting_any_worker(tmp_path):
    config = fake_config(processes=2, reference=Side("torch", str(tmp_path / "missing")))
    spawn = Spawner(fake_session_class())
    pool = WorkerPool(config, placement=SidePair, spawn=spawn)
    with pytest.raises(WorkerError, match="missing .*does not exist"):
        pool.open()
    assert spawn.sides == []                     # nothing started, nothing timed


def test_each_worker_holds_one_side_in_its_interpreter(tmp_path, monkeypatch):
    config = fake_config(processes=2, target=Side("mindspore", "/envs/ms/bin/python"))
    spawn = Spawner(fake_session_class())
    with WorkerPool(config, placement=SidePair, spawn=spawn) as pool:
        pool._check_interpreter = lambda python, name: {"opbench": OPBENCH_VERSION}
        opened = []
        real_answer = workers_mod.Worker.send

        def spy(worker, request):
            if isinstance(request, ipc.OpenSide):
                opened.append((worker.index, request.framework))
            return real_answer(worker, request)

        monkeypatch.setattr(workers_mod.Worker, "send", spy)
        pool.open()
        record = run(load_instances(case_file(tmp_path, binary_case("a"))), config,
                     session=pool)
    assert spawn.sides == [(1, "torch"), (1, "mindspore"), (2, "torch"), (2, "mindspore")]
    assert spawn.pythons == [None, "/envs/ms/bin/python"] * 2
    assert opened == spawn.sides
    assert record.instances[0].verdict in ("PASS", "INCONCLUSIVE")


def test_a_side_whose_checksum_differs_names_it(tmp_path):
    instance = load_instances(case_file(tmp_path, binary_case("a")))[0]

    class Answers:
        def call(self, request):
            return ipc.ForwardDone(None, "f" * 64)

    session = workers_mod.RemoteSession(fake_config(processes=2), {"torch": Answers()}, 1)
    from opbench.runner import inputs as inputs_mod
    from opbench.runner.session import SideFailed

    with pytest.raises(SideFailed, match="torch's process generated other inputs than the "
                                         "parent from the same seed"):
        session.forward_side(instance, inputs_mod.generate_inputs(instance), "torch")


class _RemoteFake:
    """A measure.RemoteSide whose process takes 1 ms per call and reports 2 ms of CPU per
    sample; it logs each request's (loops, rewarm_first)."""

    def __init__(self, name):
        self.name = name
        self.samples = []

    def sample(self, loops, mode, rewarm_first=False):
        self.samples.append((loops, rewarm_first))
        return loops * 1e-3, 2e-3

    def warm_up(self, mode, warmup_time_s):
        return WarmUp(calls=3, per_call_s=1e-3)

    def sync_cost(self):
        return 1e-6


def test_a_remote_side_re_warms_and_samples_in_one_request_where_the_side_changes():
    from opbench.runner.measure import _interleaved_rounds

    a, b = _RemoteFake("a"), _RemoteFake("b")
    rounds = _interleaved_rounds([a, b], loops=4, rounds=3, mode="serial",
                                 clock=lambda: 0.0, settle=lambda: None,
                                 cpu_clock=lambda: 0.0)
    # a b | b a | a b: the side changes before every sample but round 2's b and round 3's a
    assert [r for _, r in a.samples] == [True, True, False]
    assert [r for _, r in b.samples] == [True, False, True]
    assert rounds.per_call_s == {"a": (1e-3,) * 3, "b": (1e-3,) * 3}
    assert rounds.cpu_s == {"a": (2e-3,) * 3, "b": (2e-3,) * 3}   # the side's own CPU time


def test_a_side_worker_is_asked_for_no_separate_re_warm(tmp_path, monkeypatch):
    config = fake_config(processes=2)
    requests = []
    real_send = workers_mod.Worker.send

    def spy(worker, request):
        requests.append(request)
        return real_send(worker, request)

    monkeypatch.setattr(workers_mod.Worker, "send", spy)
    with WorkerPool(config, placement=SidePair, spawn=Spawner(fake_session_class())) as pool:
        pool.open()
        run(load_instances(case_file(tmp_path, binary_case("a"))), config, session=pool)
    samples = [r for r in requests if isinstance(r, ipc.Sample)]
    assert samples and any(r.rewarm_first for r in samples)     # the re-warm rides along
    # ... and nothing else is asked in its place: the side's requests and the opening only
    assert {type(r) for r in requests} <= set(ipc.SIDE_REQUESTS) | {ipc.OpenSide}


def _fake_interpreter(directory, answer):
    """An executable that answers the interpreter probe with `answer` (a JSON line)."""
    path = directory / "python"
    path.write_text(f"#!/bin/sh\necho '{answer}'\n")
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize("answer,words", [
    (None, "does not exist or is not executable"),
    ('{"opbench": null, "has_framework": true, "python": "3.11.2"}', "cannot import opbench"),
    ('{"opbench": "0.0.1", "has_framework": true, "python": "3.11.2"}', "has opbench 0.0.1"),
    (f'{{"opbench": "{OPBENCH_VERSION}", "wire": "{wire_fingerprint()}", '
     f'"has_framework": false, "python": "3.11.2"}}',
     "has no mindspore"),
])
def test_a_run_on_an_unfit_interpreter_ends_before_timing(tmp_path, monkeypatch, answer, words):
    from click.testing import CliRunner

    from opbench.cli.main import cli

    python = (_fake_interpreter(tmp_path, answer) if answer is not None
              else str(tmp_path / "missing" / "python"))
    spawn = Spawner(fake_session_class())
    monkeypatch.setattr("opbench.runner.workers.spawn_worker", spawn)
    cases = tmp_path / "cases"
    cases.mkdir()
    case_file(cases, binary_case("a"))
    out = tmp_path / "out.json"
    result = CliRunner().invoke(cli, ["run", str(cases), "--target", f"mindspore@{python}",
                                      "--processes", "2", "--json", str(out)])
    assert result.exit_code == 2, result.output
    assert words in result.output and "Traceback" not in result.output
    assert spawn.sides == [] and not out.exists()        # nothing started, nothing timed


@pytest.mark.parametrize("reference,target,names", [
    ("torch", "mindspore", ("torch", "mindspore")),
    ("mindspore", "mindspore@/e/ms29/bin/python", ("mindspore", "mindspore@ms29")),
    ("ms29", "ms210", ("ms29", "ms210")),
    ("mindspore", "mindspore", ("mindspore", "mindspore#2")),
])
def test_sides_on_one_framework_go_by_labels(tmp_path, monkeypatch, reference, target, names):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "opbench.toml").write_text(
        '[environments]\nms29 = {framework = "mindspore", python = "/e/ms29/bin/python"}\n'
        'ms210 = {framework = "mindspore", python = "/e/ms210/bin/python"}\n')
    config = RunOptions(reference=reference, target=target).to_config()
    assert config.names == names
    assert {config.framework_of(n) for n in names} == (
        {"torch", "mindspore"} if reference == "torch" else {"mindspore"})
    assert config.in_workers


def test_both_sides_on_one_framework_need_a_process_each():
    with pytest.raises(OptionError, match="one per side; --processes 1"):
        RunOptions(reference="mindspore", target="mindspore", processes=1).to_config()


def test_a_side_against_itself_is_measured_and_recorded_by_label(tmp_path):
    config = fake_config(reference="mindspore", target="mindspore", processes=2)
    spawn = Spawner(fake_session_class())
    with WorkerPool(config, placement=SidePair, spawn=spawn) as pool:
        pool.open()
        record = run(load_instances(case_file(tmp_path, binary_case("a"))), config,
                     session=pool)
    assert spawn.sides == [(1, "mindspore"), (1, "mindspore#2"), (2, "mindspore"),
                           (2, "mindspore#2")]
    measurement = record.instances[0].measurements["serial"]
    assert set(measurement.samples_s) == {"mindspore", "mindspore#2"}
    assert record.instances[0].verdict in ("PASS", "INCONCLUSIVE")


def test_an_a_a_run_counts_what_it_flags_by_chance(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from opbench.cli.main import cli
    from opbench.results.aa import aa_summary, is_aa
    from opbench.results.records import load_results

    monkeypatch.setattr("opbench.runner.workers.spawn_worker", Spawner(fake_session_class()))
    cases = tmp_path / "cases"
    cases.mkdir()
    case_file(cases, binary_case("a"), binary_case("b", shape="[16, 8]"))
    out = tmp_path / "aa.json"
    result = CliRunner().invoke(cli, ["run", str(cases), "--aa", "--processes", "2",
                                      "--rounds", "6", "--min-sample-time", "0.002",
                                      "--no-backward", "-q", "--json", str(out)])
    assert result.exit_code in (0, 1), result.output
    record = load_results(out)
    assert is_aa(record) and (record.config.reference, record.config.target) == (
        "mindspore", "mindspore#2")
    aa = aa_summary(record)
    assert aa.measured == 2 and aa.slow == 0 and 0 <= aa.off_one <= 2
    assert "A/A: mindspore against itself" in result.output


def test_aa_leaves_the_reference_to_the_target():
    from click.testing import CliRunner

    from opbench.cli.main import cli

    result = CliRunner().invoke(cli, ["run", "--aa", "--reference", "torch"])
    assert result.exit_code == 2 and "--aa measures the target side against itself" in (
        result.output)


def test_a_run_of_two_frameworks_is_no_a_a_run(tmp_path):
    from opbench.results.aa import aa_summary

    config = fake_config(processes=2)
    with WorkerPool(config, placement=SidePair, spawn=Spawner(fake_session_class())) as pool:
        pool.open()
        record = run(load_instances(case_file(tmp_path, binary_case("a"))), config,
                     session=pool)
    assert aa_summary(record) is None


def test_a_labelled_side_s_interpreter_is_probed_for_its_framework(tmp_path):
    # a bug once probed /e/ms29/bin/python for a package named "mindspore@ms29"
    config = fake_config(reference=Side("mindspore", "/e/ms29/bin/python"),
                         target="mindspore", processes=2)
    probed = []
    with WorkerPool(config, placement=SidePair, spawn=Spawner(fake_session_class())) as pool:
        pool._check_interpreter = lambda python, framework: probed.append((python, framework))
        pool.open()
    assert probed == [("/e/ms29/bin/python", "mindspore")]


def test_a_side_process_dying_is_error_for_its_instance_and_the_run_goes_on(tmp_path):
    config = fake_config(processes=2)
    spawn = Spawner(fake_session_class(), die_on_run_in={1}, exit_code=-11)
    instances = load_instances(case_file(tmp_path, binary_case("a"), binary_case("b")))
    with WorkerPool(config, placement=SidePair, spawn=spawn) as pool:
        pool.open()
        record = run(instances, config, session=pool)
    crashed, measured = record.instances
    assert crashed.verdict == "ERROR"
    assert crashed.error == ("worker process 1 (mindspore) was killed by SIGSEGV (signal 11) "
                             "while running a")
    assert measured.verdict != "ERROR" and measured.measurements      # a fresh process
    assert spawn.sides.count((1, "mindspore")) == 2


def test_a_side_process_dying_in_a_later_pass_keeps_the_earlier_rounds(tmp_path):
    config = fake_config(processes=2)
    spawn = Spawner(fake_session_class(), die_on_extend_in={2}, exit_code=-9)
    instances = load_instances(case_file(tmp_path, binary_case("a")))
    with WorkerPool(config, placement=SidePair, spawn=spawn) as pool:
        pool.open()
        record = run(instances, config, session=pool)
    first = record.instances[0]
    assert first.pass_errors == ("pass 1: worker process 2 (mindspore) was killed by SIGKILL "
                                 "(signal 9) while running a",)
    assert first.verdict != "ERROR"


def test_a_labelled_side_s_ceilings_are_measured_with_its_framework_s_ops(monkeypatch):
    """A MindSpore 2.9 against 2.10 run read "ceilings not measured (KeyError:
    'mindspore@ms29')": the ceiling ops were looked up by the side's label."""
    import opbench.runner.session as session_mod

    asked = []

    def ceilings(framework, adapter, clock, **kwargs):
        asked.append(framework)
        return {"bandwidth_bytes_per_s": 1e9, "peak_flops": 1e11}

    monkeypatch.setattr(session_mod, "measure_ceilings", ceilings)
    config = fake_config(reference=Side("mindspore", None, "mindspore@ms29"),
                         target="mindspore", processes=2)
    session = session_mod.Session(config, sides=["mindspore@ms29"])
    session.adapters = {"mindspore@ms29": object()}
    found = session.measure_ceilings()
    assert asked == ["mindspore"] and set(found) == {"mindspore@ms29"}


def test_a_side_s_label_defaults_to_its_framework_or_its_environment_directory():
    assert Side("torch").label == "torch"
    assert Side("mindspore", "envs/ms29/bin/python").label == "mindspore@ms29"
    assert Side("mindspore", "/opt/py3").label == "mindspore@/opt/py3"
    assert Side("mindspore", "envs/ms29/bin/python", "ms29").label == "ms29"


def test_a_side_is_described_with_the_build_it_ran():
    assert Side("mindspore", "envs/ms29/bin/python").described("2.9.0") == \
        "mindspore 2.9.0 (envs/ms29)"
    assert Side("mindspore").described("2.10.0") == "mindspore 2.10.0"
    assert Side("mindspore", "envs/ms29/bin/python").described(None) == "mindspore@ms29"


def test_a_run_config_holds_two_sides_and_keys_the_records_by_their_names():
    from opbench.config import RunConfig

    config = RunConfig(reference=Side("mindspore", "/e/ms29/bin/python"),
                       target="mindspore", processes=2)
    assert config.reference == Side("mindspore", "/e/ms29/bin/python")
    assert config.target == Side("mindspore")                  # a spec string is parsed
    assert config.names == config.frameworks == ("mindspore@ms29", "mindspore")
    assert config.framework_of("mindspore@ms29") == "mindspore"
    assert config.python_of("mindspore@ms29") == "/e/ms29/bin/python"
    assert config.python_of("mindspore") is None and config.split_sides
    recorded = config.as_dict()
    # the record's config as before sides were records: names, then the four side keys
    assert (recorded["reference"], recorded["target"]) == ("mindspore@ms29", "mindspore")
    assert (recorded["reference_python"], recorded["reference_framework"],
            recorded["target_framework"]) == ("/e/ms29/bin/python", "mindspore", "mindspore")
    assert "target_python" not in recorded
    keys = list(recorded)
    assert keys.index("reference_python") > keys.index("quiesce")
    plain = RunConfig().as_dict()
    assert (plain["reference"], plain["target"]) == ("torch", "mindspore")
    assert not {"reference_python", "reference_framework"} & set(plain)
    with pytest.raises(ValueError, match="reference must be a Side"):
        RunConfig(reference=3)

"""`opbench trace -- ...`: parsing the program to run, running it in-process, the outputs."""
from __future__ import annotations

import json
import stat
import sys

import pytest
from click.testing import CliRunner

from opbench.cli.trace import trace_command
from opbench.trace import TraceError, Tracer, trace
from opbench.trace.target import Target, TargetError, exit_outcome, parse_target, run_target

SCRIPT = """
import sys
print("argv=" + "|".join(sys.argv[1:]), "name=" + __name__)
if "--fail" in sys.argv:
    raise RuntimeError("script failed")
if "--exit" in sys.argv:
    sys.exit(int(sys.argv[-1]))
"""


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(SCRIPT)
    return str(path)


def test_parse_target(script):
    assert parse_target(["python", script, "--epochs", "1"]) == \
        Target("script", script, ("--epochs", "1"))
    assert parse_target(["python3.11", script]) == Target("script", script, ())
    assert parse_target([script, "-x"]) == Target("script", script, ("-x",))
    assert parse_target(["python", "-m", "pkg.mod", "--a"]) == Target("module", "pkg.mod",
                                                                      ("--a",))
    assert parse_target(["-mpkg"]) == Target("module", "pkg", ())
    assert parse_target([sys.executable, script]).name == script
    for words, message in ((["python"], "nothing to run"), (["python", "-m"], "module name"),
                           (["python", "-u", script], "not supported"),
                           (["python", "missing.py"], "no such script")):
        with pytest.raises(TargetError, match=message):
            parse_target(words)


def test_run_target_runs_a_script_like_python_and_restores_argv(script, capsys):
    argv, path = list(sys.argv), list(sys.path)
    assert run_target(parse_target(["python", script, "a", "b"])).status == 0
    assert "argv=a|b name=__main__" in capsys.readouterr().out
    assert sys.argv == argv and sys.path == path
    assert run_target(parse_target([script, "--exit", "3"])).status == 3
    with pytest.raises(RuntimeError, match="script failed"):
        run_target(parse_target([script, "--fail"]))
    assert sys.argv == argv


def test_run_target_runs_a_module(tmp_path, monkeypatch, capsys):
    package = tmp_path / "opbench_fake_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "main.py").write_text(SCRIPT)
    monkeypatch.chdir(tmp_path)
    assert run_target(parse_target(["python", "-m", "opbench_fake_pkg.main", "z"])).status == 0
    assert "argv=z name=__main__" in capsys.readouterr().out
    sys.modules.pop("opbench_fake_pkg", None)


def test_exit_outcome_mirrors_the_interpreter():
    assert exit_outcome(None).status == 0 and exit_outcome(4).status == 4
    assert (exit_outcome("bye").status, exit_outcome("bye").message) == (1, "bye")


def run_cli(args):
    return CliRunner().invoke(trace_command, args, catch_exceptions=False)


def test_command_runs_the_program_and_writes_every_output(script, tmp_path):
    out = tmp_path / "out"
    result = run_cli(["--nested", "--async", "-o", str(out), "--", "python", script, "--x"])
    assert result.exit_code == 0, result.output
    assert "argv=--x" in result.output
    assert "opbench trace (async timing)" in result.output
    assert "host-side launch time only" in result.output
    for name in ("trace.json", "trace_record.json", "trace.log"):
        assert (out / name).exists()
    record = json.loads((out / "trace_record.json").read_text())
    assert record["settings"] == {"timing": "async", "nested": True,
                                  "timing_note": record["settings"]["timing_note"]}
    assert json.loads((out / "trace.json").read_text())["otherData"]["timing"] == "async"


def test_command_keeps_the_programs_exit_status_and_still_writes_outputs(script, tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(trace_command, ["-o", str(out), "--", script, "--exit", "5"])
    assert result.exit_code == 5 and (out / "trace.json").exists()
    result = CliRunner().invoke(trace_command, ["-o", str(out), "--", script, "--fail"])
    assert result.exit_code == 1 and (out / "trace_record.json").exists()


def test_command_rejects_a_missing_program(tmp_path):
    result = CliRunner().invoke(trace_command, ["-o", str(tmp_path), "--", "python"])
    assert result.exit_code == 2 and "nothing to run" in result.output


def test_tracer_without_imported_frameworks_waits_for_their_import_and_cleans_up():
    meta_path = list(sys.meta_path)
    waiting = any(name not in sys.modules for name in ("torch", "mindspore"))
    with trace(framework="both") as tracer:
        # (run after integration tests in one process, both may be imported: then no hook)
        assert tracer.running and len(sys.meta_path) == len(meta_path) + waiting
    assert sys.meta_path == meta_path and not tracer.running
    data = tracer.data
    assert data.events == []
    if "torch" not in sys.modules:
        assert data.frameworks["torch"]["status"] in ("not imported by the traced code",
                                                      "not installed")
    assert "(no framework API calls were traced)" in tracer.table()


def test_tracer_rejects_bad_settings():
    with pytest.raises(TraceError, match="sync"):
        Tracer(sync="eventually")
    with pytest.raises(TraceError, match="framework"):
        Tracer(framework="jax")
    with pytest.raises(TraceError, match="never started"):
        Tracer().stop()


def test_an_exception_in_the_traced_block_propagates_and_stops_the_tracer():
    tracer = trace()
    with pytest.raises(KeyError):
        with tracer:
            raise KeyError("x")
    assert not tracer.running


def test_pause_stops_recording_but_keeps_the_interception_until_stop():
    """`opbench model --run-on` pauses inside an intercepted call: the calls after it pass
    through unrecorded, and stop() later undoes the interception and returns the calls
    recorded before the pause."""
    from trace_helpers import FakeTensor, fake_spec, site
    with pytest.raises(TraceError, match="never started"):
        Tracer().pause()
    meta_path = list(sys.meta_path)
    tracer = trace(framework="both").start()
    installed = list(sys.meta_path)                   # with the import hook, if one waits
    recorder = tracer._recorder          # noqa: SLF001 (a fake framework's calls go to it)
    recorder.add_framework("fakefw", sync=lambda: None, tensor_spec=fake_spec)
    add = site("fakefw", "fakefw.add")
    x = FakeTensor(2, 3)
    assert recorder.call(add, lambda a: "first", (x,), {}) == "first"
    tracer.pause()
    assert not tracer.running
    assert recorder.call(add, lambda a: "after", (x,), {}) == "after"   # passed through
    assert sys.meta_path == installed                 # pausing undid nothing
    data = tracer.stop()
    assert sys.meta_path == meta_path
    assert [e.api for e in data.events] == ["fakefw.add"]


def _interpreter(tmp_path, flags=""):
    """`tmp_path/bin/python`: this Python behind another path, as another venv's would be
    (with `-I -S`: one that cannot import opbench)."""
    (tmp_path / "bin").mkdir()
    python = tmp_path / "bin" / "python"
    python.write_text(f'#!/bin/sh\nexport OPBENCH_TEST_WRAPPED=yes\n'
                      f'exec "{sys.executable}" {flags} "$@"\n', encoding="utf-8")
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    return str(python)


def test_a_named_interpreter_runs_the_traced_program(tmp_path):
    """`opbench trace -- /venv/bin/python prog.py` traces in that interpreter (it printed
    the other MindSpore's version before; here: the wrapper's mark in the environment),
    with its arguments, options kept, outputs written, exit status passed on."""
    python = _interpreter(tmp_path)
    seen = tmp_path / "seen.txt"
    prog = tmp_path / "prog.py"
    prog.write_text(f"import os, sys\nopen({str(seen)!r}, 'w').write("
                    f"os.environ.get('OPBENCH_TEST_WRAPPED', 'no') + '|' + "
                    f"' '.join(sys.argv[1:]))\nsys.exit(4)\n", encoding="utf-8")
    out = tmp_path / "out"
    result = CliRunner().invoke(trace_command, ["-q", "--mode", "async", "-o", str(out), "--",
                                                python, str(prog), "--epochs", "2"])
    assert result.exit_code == 4, result.output
    assert seen.read_text() == "yes|--epochs 2"
    record = json.loads((out / "trace_record.json").read_text())
    assert record["settings"]["timing"] == "async"


def test_a_named_interpreter_that_cannot_run_opbench_says_so_before_running(tmp_path):
    python = _interpreter(tmp_path, "-I -S")
    result = CliRunner().invoke(trace_command, ["-o", str(tmp_path / "out"), "--", python,
                                                str(tmp_path / "prog.py")])
    assert result.exit_code == 2
    assert f"the interpreter {python} cannot import opbench" in " ".join(result.output.split())
    assert not (tmp_path / "out").exists()

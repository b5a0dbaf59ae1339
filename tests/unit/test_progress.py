"""Live progress (issue #16, point 2): a bar with the current instance and an ETA on a
terminal, plain lines elsewhere, and start-up that says which framework it is importing."""
from __future__ import annotations

import io
import sys
from types import SimpleNamespace

from click.testing import CliRunner
from rich.console import Console

from opbench.report.progress import RunProgress, activity, announcing_imports
from opbench.results.records import InstanceRecord


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def instance(instance_id: str):
    return SimpleNamespace(id=instance_id)


def result(verdict="PASS", ratio=0.5, duration_s=2.0):
    """An instance's record as run()'s on_progress gets it: typed, as the file will hold it."""
    summary = {"n": 3, "median_s": 1e-6}
    serial = {"mode": "serial", "loops": 10, "rounds": 3, "threshold": 0.8,
              "samples_s": {"torch": [1e-6] * 3, "mindspore": [2e-6] * 3},
              "summary": {"torch": summary, "mindspore": summary}, "ratio": ratio,
              "ci_low": ratio, "ci_high": ratio, "verdict": verdict}
    return InstanceRecord.from_dict({
        "id": "a", "case": "a", "op": "a", "file": "a.yaml", "apis": {},
        "verdict": verdict, "duration_s": duration_s, "measurements": {"serial": serial}})


def plain_console() -> Console:
    return Console(file=io.StringIO(), width=100, color_system=None, force_terminal=False)


def test_plain_lines_name_the_instance_and_an_eta():
    console, clock = plain_console(), Clock()
    progress = RunProgress(console, clock=clock)
    with progress:
        for i, name in enumerate(["reshape[shape=8x16,dtype=float32]", "add[shape=4]"]):
            progress.on_progress(i, 2, instance(name), None)
            clock.now += 3.0
            progress.on_progress(i, 2, instance(name), result())
    lines = console.file.getvalue().splitlines()
    assert lines == ["[1/2] reshape[8x16,float32] ...",
                     "[1/2] reshape[8x16,float32]: PASS serial 0.5 (2.0 s; eta 3 s)",
                     "[2/2] add[4] ...",
                     "[2/2] add[4]: PASS serial 0.5 (2.0 s)"]


def test_passes_count_in_the_eta_and_quiet_prints_nothing():
    console, clock = plain_console(), Clock()
    progress = RunProgress(console, passes=3, stage="stage 1", clock=clock)
    progress.on_progress(0, 2, instance("a"), None)
    clock.now += 10.0
    progress.on_progress(0, 2, instance("a"), result())
    assert "stage 1 [1/2] a: PASS serial 0.5 (2.0 s; eta 50 s)" in console.file.getvalue()
    quiet_console = plain_console()
    quiet = RunProgress(quiet_console, quiet=True)
    with quiet.starting():
        quiet.on_progress(0, 1, instance("a"), result())
    assert quiet_console.file.getvalue() == ""


def test_later_passes_say_how_many_are_measured_again_and_an_upper_bound_eta():
    # the gate's stage 1 under its early stop: 4 processes x 5 passes, and at the end of
    # process 1 (before pass 6) 8 of 12 instances are decided
    console, clock = plain_console(), Clock()
    progress = RunProgress(console, passes=20, clock=clock)
    progress.on_pass(5, 20, 12, 0)
    clock.now += 6.0                        # pass 5: 12 instances in 6 s
    progress.on_pass(6, 20, 4, 8)
    lines = console.file.getvalue().splitlines()
    assert lines == ["pass 5/20: more rounds for every measured instance",
                     # 4 instances x 15 passes left x 0.5 s: no more than that
                     "pass 6/20: 4 undecided measured again, 8 decided; eta at most 30 s"]


def test_on_a_terminal_a_bar_shows_the_current_instance():
    console = Console(file=io.StringIO(), width=100, force_terminal=True, color_system=None)
    progress = RunProgress(console, clock=Clock())
    assert progress.live
    with progress:
        progress.on_progress(0, 4, instance("softmax[shape=12x128x128,dtype=float16]"), None)
        bar = progress._bar
        (task,) = bar.tasks
        assert task.total == 4 and task.fields["current"] == "softmax[12x128x128,float16]"
        progress.on_progress(0, 4, instance("softmax[shape=12x128x128,dtype=float16]"),
                             result())
        assert bar.tasks[0].completed == 1
        rendered = Console(file=io.StringIO(), width=100, color_system=None)
        rendered.print(bar.get_renderable())
        line = rendered.file.getvalue()
        assert "1/4" in line and "eta" in line and "softmax[12x128x128,float16]" in line
    assert "softmax[12x128x128,float16]: PASS" in console.file.getvalue()


def test_start_up_says_which_framework_it_is_importing(tmp_path, monkeypatch):
    (tmp_path / "slowframework.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    console = plain_console()
    progress = RunProgress(console, clock=Clock())
    finders = list(sys.meta_path)
    with progress.starting("setting up torch and mindspore", modules=("slowframework",)):
        import slowframework  # noqa: F401
    assert sys.meta_path == finders                  # the announcer is gone again
    assert console.file.getvalue().splitlines() == [
        "setting up torch and mindspore...", "importing slowframework...", "ready in 0.0 s"]
    sys.modules.pop("slowframework", None)


def test_a_second_import_is_not_announced(tmp_path, monkeypatch):
    (tmp_path / "fw2.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen: list[str] = []
    with announcing_imports(seen.append, names=("fw2",)):
        import importlib

        import fw2  # noqa: F401
        importlib.import_module("fw2")
    assert seen == ["fw2"]
    sys.modules.pop("fw2", None)


def test_activity_prints_one_line_when_not_a_terminal():
    console = plain_console()
    with activity(console, "tracing python train.py", count=lambda: 3):
        pass
    assert console.file.getvalue() == "tracing python train.py...\n"


def test_cli_run_says_what_start_up_does(monkeypatch, tmp_path):
    """The real `opbench run` wiring on fake frameworks: set-up line, then instances."""
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from runner_fakes import binary_case, case_file, fake_session_class

    from opbench.cli.main import cli

    monkeypatch.setattr("opbench.runloop.recorded_run.Session", fake_session_class({}))
    path = case_file(tmp_path, binary_case("add"))
    result = CliRunner().invoke(cli, ["run", str(path), "--rounds", "6", "--min-sample-time",
                                      "0.002", "--processes", "1",
                                      "--json", str(tmp_path / "o.json")])
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert lines[0] == "setting up torch and mindspore..."
    assert lines[1].startswith("ready in ")
    assert any(line.startswith("[1/1] add: PASS") for line in lines)


def test_a_sequential_run_shows_decided_and_undecided_with_the_next_process_eta():
    console = plain_console()
    progress = RunProgress(console, clock=Clock())
    with progress:
        progress.on_look(2, 6, undecided=5, decided=28, eta_s=12.4)
    assert console.file.getvalue().splitlines() == [
        "process 2 (of at most 6): 28 decided, 5 undecided measured again; eta 12 s for "
        "this process"]

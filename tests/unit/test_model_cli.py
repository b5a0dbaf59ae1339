"""`opbench model` from the command line, framework-free: what a user can get wrong (no
command, an interpreter that does not exist or cannot import opbench, a script that imports
no framework or fails before its first call) ends with exit 2 and a message that says what
to do; and a model record (valid against opbench/schema/model.schema.json) renders in the
terminal, Markdown and HTML views."""
from __future__ import annotations

import io
import os
import re
import stat
import sys
import textwrap

import jsonschema
import pytest
from click.testing import CliRunner
from rich.console import Console

from opbench.cli.main import cli
from opbench.cli.model import model_sides
from opbench.config.sides import Side, side_labels
from opbench.model.impact.record import MODEL_FORMAT, model_schema
from opbench.model.impact.record import ModelRecord
from opbench.report.model import (model_lines, render_model_html, render_model_markdown,
                                  render_model_terminal)


def invoke(*args: str):
    return CliRunner().invoke(cli, ["model", *args], catch_exceptions=True)


def assert_user_error(result, *fragments: str) -> None:
    """Exit 2, the message on stderr, no Python traceback."""
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


def _script(tmp_path, text: str, name: str = "script.py") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(path)


# -- what the user got wrong ---------------------------------------------------------------------

def test_no_command_is_a_usage_error():
    result = invoke()
    assert result.exit_code == 2
    assert "Missing argument 'COMMAND...'" in result.output
    assert "Usage:" in result.output


def test_a_side_that_names_no_model_framework_is_refused(tmp_path):
    result = invoke("--reference", "numpy", "--", "x.py")
    assert_user_error(result, "--reference 'numpy': a model replays in torch or mindspore")
    result = invoke("--target", "mindspore@", "--", "x.py")
    assert_user_error(result, "no interpreter after '@'")


def test_model_sides_are_spelled_as_for_run(tmp_path):
    (tmp_path / "opbench.toml").write_text(
        '[environments]\nms29 = {framework = "mindspore", python = "envs/ms29/bin/python"}\n')
    assert model_sides("torch", "mindspore", tmp_path) == (Side("torch"), Side("mindspore"))
    assert model_sides("mindspore@envs/ms29/bin/python", "mindspore", tmp_path) == (
        Side("mindspore", "envs/ms29/bin/python", "mindspore@ms29"), Side("mindspore"))
    assert model_sides("ms29", "mindspore", tmp_path)[0] == Side(
        "mindspore", str(tmp_path / "envs/ms29/bin/python"), "ms29")
    # a side against itself is allowed (A/A): the names tell them apart
    reference, target = model_sides("torch", "torch", tmp_path)
    assert side_labels(reference, target) == ("torch", "torch#2")


def test_the_sides_reach_the_pipeline(tmp_path, monkeypatch):
    import opbench.cli.model as model_cli
    from opbench.model.impact.pipeline import ModelError

    seen = {}

    def measure(command, options, workdir, on_progress):
        seen["sides"] = (options.reference, options.target)
        raise ModelError("stop here")

    monkeypatch.setattr(model_cli, "measure_model", measure)
    result = invoke("--reference", "mindspore@/e/ms29/bin/python", "--target", "mindspore",
                    "-o", str(tmp_path / "out"), "--", "x.py")
    assert_user_error(result, "stop here")
    assert seen["sides"] == (Side("mindspore", "/e/ms29/bin/python"), Side("mindspore"))


def test_an_interpreter_path_that_does_not_exist_is_named(tmp_path):
    missing = str(tmp_path / "venv" / "bin" / "python")
    result = invoke("-o", str(tmp_path / "out"), "--", missing, "train.py")
    assert_user_error(result, f"no Python interpreter '{missing}' at that path",
                      sys.executable)


def test_an_interpreter_name_not_on_path_is_named(tmp_path):
    result = invoke("-o", str(tmp_path / "out"), "--", "python9.99", "train.py")
    assert_user_error(result, "no Python interpreter 'python9.99' on PATH")


def test_an_interpreter_that_cannot_import_opbench_gets_the_install_hint(tmp_path):
    """`python` here is this Python started isolated (-I: PYTHONPATH ignored, which opbench
    sets for its children) and without site-packages (-S: not even an editable install of
    opbench is found), as a fresh virtual environment without opbench would be."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python = bin_dir / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" -I -S "$@"\n', encoding="utf-8")
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    result = invoke("-o", str(tmp_path / "out"), "--", str(python), "train.py")
    assert_user_error(result, f"the interpreter {python} (for torch and mindspore) cannot import "
                              f"opbench; "
                              f"install it there: {python} -m pip install")
    assert not (tmp_path / "out").exists()        # nothing ran


def test_a_script_that_imports_no_framework_is_refused(tmp_path):
    script = _script(tmp_path, "print('hello from a script without a framework')\n")
    result = invoke("-q", "-o", str(tmp_path / "out"), "--", script)
    assert_user_error(result, "imported neither torch nor MindSpore")
    assert "exited with status" not in result.stderr
    assert (tmp_path / "out" / "program.json").exists()     # the capture's file is kept


def test_a_script_that_fails_before_any_call_says_its_status_and_error(tmp_path):
    script = _script(tmp_path, "raise RuntimeError('broken before any call')\n")
    result = invoke("-q", "-o", str(tmp_path / "out"), "--", script)
    assert_user_error(result, "the script exited with status 1 (RuntimeError: broken before "
                              "any call) after 0 recorded framework calls; nothing was "
                              "replayed", "--keep-going")


def test_a_script_that_exits_with_a_status_before_any_call_says_it(tmp_path):
    script = _script(tmp_path, "import sys\nsys.exit(4)\n")
    result = invoke("-q", "-o", str(tmp_path / "out"), "--", script)
    assert_user_error(result, "the script exited with status 4 after 0 recorded")
    assert "None" not in result.stderr


def test_with_keep_going_a_failed_script_without_calls_says_what_it_lacked(tmp_path):
    script = _script(tmp_path, "import sys\nsys.exit(4)\n")
    result = invoke("-q", "--keep-going", "-o", str(tmp_path / "out"), "--", script)
    assert_user_error(result, "imported neither torch nor MindSpore",
                      "(it exited with status 4)")


def test_an_unknown_option_before_the_command_is_refused_as_opbenchs(tmp_path):
    """`opbench model --jsno x -- python t.py` answered "python option '--jsno' is not
    supported" (the option went to the script's words)."""
    result = invoke("--jsno", "x", "--", "python", "t.py")
    assert result.exit_code == 2
    assert "No such option '--jsno'. Did you mean '--json'?" in result.output
    assert "python option" not in result.output


def test_the_scripts_own_options_after_its_interpreter_stay_its_own(tmp_path):
    """Without `--`, options after the command's first word belong to the command."""
    seen = tmp_path / "argv.txt"
    script = _script(tmp_path, f"""
        import sys
        open({str(seen)!r}, "w").write(" ".join(sys.argv[1:]))
    """)
    result = invoke("-q", "-o", str(tmp_path / "out"), sys.executable, script, "--epochs",
                    "2", "--json")
    assert_user_error(result, "imported neither torch nor MindSpore")
    assert seen.read_text() == "--epochs 2 --json"


def test_a_script_that_does_not_exist_leaves_no_program(tmp_path):
    result = invoke("-q", "-o", str(tmp_path / "out"), "--",
                    str(tmp_path / "no_such_script.py"))
    assert_user_error(result, "the capture wrote no program", "status 2")


def test_the_script_runs_in_the_named_interpreter_with_its_arguments(tmp_path):
    """An interpreter named by path runs the script (argv kept); it still imports no
    framework here, which is the error the run ends with."""
    seen = tmp_path / "argv.txt"
    script = _script(tmp_path, f"""
        import sys
        open({str(seen)!r}, "w").write(" ".join(sys.argv[1:]) + "|" + sys.executable)
    """)
    result = invoke("-q", "-o", str(tmp_path / "out"), "--", sys.executable, script,
                    "--epochs", "2")
    assert_user_error(result, "imported neither torch nor MindSpore")
    args, executable = seen.read_text().split("|")
    assert args == "--epochs 2"
    assert os.path.realpath(executable) == os.path.realpath(sys.executable)


# -- the record and its views ---------------------------------------------------------------------

def _api(api, mapped, calls, ref, tgt, lost, share, low=None, high=None):
    return {"api": api, "mapped_api": mapped, "calls": calls, "reference_s": ref,
            "target_s": tgt, "ratio": ref / tgt if ref and tgt else None,
            "ratio_ci": [None, None] if ref is None else [ref / tgt * 0.9, ref / tgt * 1.1],
            "lost_s": lost, "lost_ci": [low, high], "share": share, "signatures": 1}


API_ROWS = [
    {**_api("torch.nn.Linear", "mindspore.mint.nn.functional.linear", 30, 2e-5, 5e-5, 9e-4,
            0.75, 7e-4, 1.1e-3),
     "isolated_ratio": 0.45, "isolated_ratio_ci": [0.41, 0.49], "verdict": "SLOW",
     "cause": "kernel", "cause_detail": "slower alone by as much as in the model",
     "context_factor": {"torch": 1.1, "mindspore": 1.3},
     "isolated_signature": "f32[4x16], f32[8x16], f32[8]"},
    _api("torch.nn.functional.gelu", "mindspore.ops.gelu", 30, 1e-5, 2e-5, 3e-4, 0.25,
         2e-4, 4e-4),
    _api("torch.Tensor.__add__", "mindspore.Tensor.__add__", 60, 4e-6, 3e-6, -6e-5, 0.0,
         -9e-5, -3e-5),
    _api("torch.Tensor.view", "mindspore.Tensor.view", 10, None, None, None, 0.0),
]


def _record() -> dict:
    model = {
        "format": MODEL_FORMAT,
        "command": ["python", "train.py", "--steps", "4"],
        "interpreter": "/venv/bin/python",
        "reference": "torch", "target": "mindspore", "traced_framework": "torch",
        "traced_version": "2.5.1", "threads": 2,
        "traced_s": 4.2e-3, "covered_traced_s": 3.9e-3,
        "projected_s": {
            "torch": {"estimate": 3.6e-3, "ci_low": 3.4e-3, "ci_high": 3.9e-3, "processes": 3,
                      "method": "mean of 3 process means, t interval over processes (95%)",
                      "launch": "blocking", "scale": 0.97,
                      "process_medians": [3.4e-3, 3.6e-3, 3.9e-3]},
            "mindspore": {"estimate": 4.8e-3, "ci_low": 4.5e-3, "ci_high": 14.4e-3,
                          "processes": 3, "method": "mean of 3 process means, t interval "
                                                    "over processes (95%)",
                          "launch": "queued", "scale": None,
                          "process_medians": [4.5e-3, 4.8e-3, 14.4e-3]}},
        "ratio": {"ratio": 0.75, "ci_low": 0.7, "ci_high": 0.8,
                  "method": "per-process medians", "too_few_rounds": False},
        "self_check": -0.077, "coverage": 3.9 / 4.2,
        "replayed_calls_s": {"torch": 3.6e-3, "mindspore": 4.8e-3},
        "isolated": {"share": 0.6, "seconds": 95.0},
        "training": {"backward_calls": 3, "backward_traced_s": 1.5e-3, "backward_share": 0.36,
                     "covered": True,
                     "how": {"torch": "loss.backward() on the replayed forward",
                             "mindspore": "value_and_grad over the replayed forward, less "
                                          "the forward's in-context time"}},
        "region": {"rule": "automatic", "steps": 3, "calls_per_step": 44,
                   "excluded_calls": 120, "excluded_s": 0.8, "note": ""},
        "script": {"status": 0, "error": None, "captured_calls": 252, "dropped_calls": 0},
        "apis": API_ROWS,
        "signatures": [{**{k: v for k, v in API_ROWS[0].items()
                           if k not in ("share", "signatures")},
                        "signature": "f32[4x16], f32[8x16], f32[8]", "traced_s": 1.2e-3}],
        "not_covered": [{"api": "torch.nn.Bilinear", "reason": "no function form", "calls": 3,
                         "traced_s": 3e-4, "share": 3 / 42}],
        "mismatches": [{"call": 7, "api": "torch.flip", "mapped_api": "mindspore.mint.flip",
                        "detail": "values differ by up to 2 (relative)"}],
        "errors": [],
        "measuring_s": 12.5,
    }
    return {"model": model}


def test_the_synthetic_record_is_valid_against_the_model_schema():
    jsonschema.Draft202012Validator(model_schema()).validate(_record())


def test_the_schema_refuses_a_record_of_another_format():
    record = _record()
    record["model"]["format"] = MODEL_FORMAT + 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(model_schema()).validate(record)


def test_the_terminal_view_has_the_header_lines_and_a_row_per_api():
    buffer = io.StringIO()
    render_model_terminal(ModelRecord.from_json(_record()), Console(file=buffer, width=220), top=15)
    text = buffer.getvalue()
    assert "script: python train.py --steps 4 (in /venv/bin/python), torch 2.5.1, 2 threads" \
        in text
    assert "steady state (automatic): 3 steps of 44 calls" in text
    assert "torch 3.6 ms [3.4 ms, 3.9 ms] (blocking launch)" in text
    assert "mindspore 4.8 ms [4.5 ms, 14.4 ms] (queued launch)" in text
    assert "ratio torch/mindspore 0.75 [0.7, 0.8]" in text
    assert "self-check: torch's replayed calls take -8% against their traced time" in text
    assert "training step: backward 1.5 ms traced (36% of the region), projected: " \
        "torch: loss.backward() on the replayed forward; mindspore: value_and_grad" in text
    assert "measured alone: signatures holding 60% of the region's traced time (95 s" in text
    assert "torch.nn.Linear: kernel: slower alone by as much as in the model" in text
    assert "coverage: 93% of the region's traced time" in text
    assert "not covered: torch.nn.Bilinear x3 (7.1%): no function form" in text
    assert "MISMATCH: call 7 torch.flip -> mindspore.mint.flip" in text
    assert "time mindspore loses where it is slower: 1.2 ms over the region" in text
    for row in API_ROWS:
        assert row["api"] in text
    assert "900 us [700 us, 1.1 ms]" in text and "-60 us [-90 us, -30 us]" in text


def test_the_terminal_view_lists_the_process_medians_of_a_framework_whose_processes_differ():
    """MindSpore's processes come in modes here (62 or ~190 ms a step): the interval alone
    hides it. torch's 3.4-3.9 ms (1.15x) is not listed."""
    buffer = io.StringIO()
    render_model_terminal(ModelRecord.from_json(_record()), Console(file=buffer, width=220))
    text = buffer.getvalue()
    assert ("mindspore's replay processes differ up to 3.2x (each process's median: 4.5 ms, "
            "4.8 ms, 14.4 ms): it runs in modes here; the projection is the mean step over "
            "its 3 processes") in text
    assert "torch's replay processes" not in text


def test_the_terminal_view_shows_the_top_apis_and_counts_the_rest():
    buffer = io.StringIO()
    render_model_terminal(ModelRecord.from_json(_record()), Console(file=buffer, width=220), top=2)
    text = buffer.getvalue()
    assert "torch.nn.functional.gelu" in text and "torch.Tensor.view" not in text
    assert "2 more APIs in the JSON (--top to show more)" in text


def test_the_markdown_view_is_a_table_with_a_row_per_api():
    text = render_model_markdown(ModelRecord.from_json(_record()))
    assert text.startswith("### opbench model: mindspore against torch")
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(rows) == len(API_ROWS)
    assert rows[0].startswith("| `torch.nn.Linear` | `mindspore.mint.nn.functional.linear` | "
                              "30 | 20 us | 50 us | 0.4 [0.36, 0.44] | 900 us")
    # share, the ratio measured alone with its verdict, the target's context factor, cause
    assert rows[0].endswith("| 75.0% | 0.45 SLOW | 1.3x | kernel |")
    assert rows[3] == ("| `torch.Tensor.view` | `mindspore.Tensor.view` | 10 | - | - | "
                       "- [-, -] | - [-, -] | 0.0% | - | - | - |")
    assert "- coverage: 93%" in text


def test_the_html_view_has_the_svg_bar_chart_and_a_row_per_api():
    page = render_model_html(ModelRecord.from_json(_record()))
    assert page.startswith("<!doctype html>")
    figure = page[page.index('<figure id="lost">'):page.index("</figure>")]
    assert "<svg" in figure and "</svg>" in figure
    table = page[page.index('<table id="apis">'):page.index("</table>")]
    body = table[table.index("<tbody>"):]
    assert body.count("<tr>") == len(API_ROWS)
    for row in API_ROWS:
        assert f"<td>{row['api']}</td>" in body
    # the bars name the APIs that lost or gained time (the one without times has no bar)
    for label in ("torch.nn.Linear", "torch.nn.functional.gelu", "torch.Tensor.__add__"):
        assert label in figure
    assert "<li>self-check: torch&#x27;s replayed calls take -8%" in page
    assert re.search(r"<li>\s*MISMATCH: call 7 torch.flip", page)


@pytest.mark.parametrize("error,expected", [
    ("RuntimeError: out of memory",
     "the script exited with status 1: RuntimeError: out of memory (what it ran before"),
    (None, "the script exited with status 1 (what it ran before is measured)"),
])
def test_a_script_that_failed_after_its_steps_is_said_in_every_view(error, expected):
    """sys.exit(N) leaves no error text: the line says the status without a 'None'."""
    record = _record()
    record["model"]["script"].update(status=1, error=error)
    jsonschema.Draft202012Validator(model_schema()).validate(record)
    buffer = io.StringIO()
    render_model_terminal(ModelRecord.from_json(record), Console(file=buffer, width=220))
    for text in (buffer.getvalue(), render_model_markdown(ModelRecord.from_json(record))):
        assert expected in text and "None" not in text


def test_a_self_check_far_from_zero_says_why():
    """A replay reading 55% below its trace: in a queued launch (a MindSpore capture in a
    slow mode) the processes' speed, the view says to judge by the projection; in torch's
    blocking launch the script's context (tools/context_effect.py)."""
    record = _record()
    record["model"]["self_check"] = -0.55
    record["model"]["projected_s"]["torch"]["launch"] = "queued"
    text = "\n".join(model_lines(ModelRecord.from_json(record)))
    assert "self-check: torch's replayed calls take -55%" in text
    assert ("the traced time is one process's and its replay's 3 processes ran at another "
            "speed") in text
    record["model"]["projected_s"]["torch"]["launch"] = "blocking"
    text = "\n".join(model_lines(ModelRecord.from_json(record)))
    assert "torch's calls cost more inside the script" in text and "one process's" not in text
    record["model"]["self_check"] = -0.077
    assert "one process's" not in "\n".join(model_lines(ModelRecord.from_json(record)))


def test_the_self_check_names_its_base_and_each_framework_s_stand_in_share():
    """The self-check's base is the traced time of the calls the traced framework replayed as
    themselves (own_traced_s), not the covered time; stand-ins are a share of each step."""
    record = _record()
    record["model"].update(own_traced_s=4.1e-3,
                           stand_in_share={"torch": 0.0, "mindspore": 0.125})
    text = "\n".join(model_lines(ModelRecord.from_json(record)))
    assert ("self-check: torch's replayed calls take -8% against their traced time (4.1 ms, "
            "every call it replayed as itself;") in text
    assert "stand-ins: 12.5% of mindspore's replayed step" in text
    assert "of torch's replayed step" not in text          # no stand-ins: no line
    del record["model"]["own_traced_s"]                    # a record written before it
    text = "\n".join(model_lines(ModelRecord.from_json(record)))
    assert "against their traced time (every call it replayed as itself;" in text


def test_the_terminal_table_keeps_api_names_whole_in_120_columns():
    """Each API and what it replays as on a line of their own, whole, and the figures under
    them within 120 columns (in one eleven-column table they were folded to a few
    characters a line)."""
    record = _record()
    long_api = _api("torch.nn.functional.scaled_dot_product_attention",
                    "softmax(q @ k^T * scale + mask) @ v (mindspore.mint)", 22, 3.63e-4,
                    1.1e-2, 2.35e-1, 0.165, 2.1e-1, 2.6e-1)
    record["model"]["apis"] = [long_api, *API_ROWS]
    buffer = io.StringIO()
    render_model_terminal(ModelRecord.from_json(record), Console(file=buffer, width=120))
    lines = buffer.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 120
    for row in record["model"]["apis"]:
        assert f"{row['api']} -> {row['mapped_api']}" in lines
    figures = lines[lines.index(f"{long_api['api']} -> {long_api['mapped_api']}") + 1]
    assert figures.split()[:3] == ["22", "363", "us"]
    assert "235 ms [210 ms, 260 ms]" in figures


# -- opbench report MODEL.json (issue 32, item 7) ------------------------------------------------

def test_report_renders_a_saved_model_record_in_every_view(tmp_path):
    """`opbench report` answered "not an opbench results file" for what `opbench model
    --json` wrote."""
    import json
    path = tmp_path / "model.json"
    path.write_text(json.dumps(_record()), encoding="utf-8")
    md, page = tmp_path / "model.md", tmp_path / "model.html"
    result = CliRunner().invoke(cli, ["report", str(path), "--markdown", str(md),
                                      "--html", str(page)])
    assert result.exit_code == 0, result.output
    assert "steady state (automatic): 3 steps of 44 calls" in result.output
    assert "torch.nn.Linear -> mindspore.mint.nn.functional.linear" in result.output
    assert md.read_text().startswith("### opbench model: mindspore against torch")
    assert "<svg" in page.read_text() and "torch.nn.functional.gelu" in page.read_text()


def test_report_refuses_an_invalid_model_record_naming_the_key(tmp_path):
    import json
    record = _record()
    record["model"]["coverage"] = "most"
    path = tmp_path / "model.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    result = CliRunner().invoke(cli, ["report", str(path)])
    assert result.exit_code == 2
    assert f"{path}: invalid model record at model/coverage" in result.stderr
    assert "Traceback" not in result.output


def test_report_still_refuses_a_file_that_is_neither(tmp_path):
    path = tmp_path / "other.json"
    path.write_text('{"something": 1}', encoding="utf-8")
    result = CliRunner().invoke(cli, ["report", str(path)])
    assert result.exit_code == 2 and "not an opbench results file" in result.stderr


@pytest.mark.parametrize("text", ["-3", "abc", "5 minutes"])
def test_a_bad_budget_is_refused_by_the_one_duration_parser(text):
    result = invoke("--budget", text, "--", "python", "t.py")
    assert result.exit_code == 2
    assert f"--budget must be a positive duration such as 90s, 10m or 1h, not {text!r} " \
           f"(or 0: none)" in result.output

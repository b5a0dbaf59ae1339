"""Reports of a record from a fake run: terminal (rich), Markdown and HTML show every id,
ratio, verdict and note, and ids with brackets survive rich's markup."""
from __future__ import annotations

import io
import re

import pytest
from rich.console import Console
from runner_fakes import binary_case, case_file, fake_config, fake_session, load_instances

from opbench.report.html import render_html
from opbench.report.markdown import render_markdown
from opbench.report.terminal import render_terminal
from opbench.report.text import fmt_time, summary_line
from opbench.results.records import load_results, write_results
from opbench.runloop.recorded_run import run
from opbench.verdicts.explain import explain_measurement, explain_modes

UNARY = """
  - name: {name}
{extra}
    inputs:
      x: {{shape: [2, 3]}}
    torch: {{api: torch.{api}, args: [$x]}}
    mindspore: {{api: mindspore.{target_api}, args: [$x]}}
"""


def unary(name: str, api: str, extra: str = "", target_api: str | None = None) -> str:
    return UNARY.format(name=name, api=api, extra=extra, target_api=target_api or api)


def bad_input_error(*args, **kwargs):
    raise RuntimeError("bad <input> & more")


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    """One run with every verdict: PASS (twice, one dispatch-bound), SLOW, MISMATCH,
    ERROR, and an expected mismatch."""
    directory = tmp_path_factory.mktemp("cases")
    path = case_file(
        directory,
        # a sweep gives an id with brackets; the value 'bold' would be rich markup
        binary_case("add", extra="params:\n  style: [bold]", shape="[4, 8]"),
        unary("sine", "sin"),
        unary("negate", "neg"),
        unary("broken", "sin", target_api="boom"),
        unary("known", "neg", extra="    expect_mismatch: known offset"),
    )
    config = fake_config()
    session = fake_session(
        config,
        costs={"mindspore.add": 3e-5, "mindspore.sin": 4e-4},
        functions={"mindspore.neg": lambda x: -x + 1.0, "mindspore.boom": bad_input_error})
    return run(load_instances(path), config, session=session)


def terminal_text(record, **options) -> str:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    render_terminal(record, console, **options)
    return console.file.getvalue()


def test_the_fake_run_has_every_verdict(record):
    verdicts = {inst.id: inst.verdict for inst in record.instances}
    assert verdicts == {"add[style=bold]": "PASS", "sine": "SLOW", "negate": "MISMATCH",
                        "broken": "ERROR", "known": "PASS"}


def test_terminal_shows_ids_ratios_verdicts_and_notes(record):
    text = terminal_text(record)
    assert "add[bold]" in text          # the short id, not eaten as a [bold] markup tag
    for verdict in ("PASS", "SLOW", "MISMATCH", "ERROR"):
        assert verdict in text
    assert "0.25 [0.25, 0.25]" in text          # sine: 4x slower
    assert "3.33 [3.33, 3.33]" in text          # add: target faster
    assert "x:4x8 float32" not in text       # the id says it; the JSON has the inputs
    assert "negate: outputs differ: max abs err 1.0" in text
    assert "bad <input> & more" in text
    assert "What explains these ratios:" in text
    # stated once for the run, not once per row
    assert "1 measurements: a side ran within 3x of its trivial-op floor" in text
    assert "add[bold]: [serial] mindspore is dispatch-bound" not in text
    assert "1 of 1 SLOW measurements: " in text
    assert "known: expected mismatch: known offset" in text
    assert "Per-call overhead" in text
    assert "5 instances: 1 SLOW, 1 MISMATCH, 1 ERROR, 2 PASS" in text


def test_terminal_worst_first_puts_findings_on_top(record):
    text = terminal_text(record, worst_first=True, show_notes=False)
    verdict_cell = re.compile(r"^\S.* (PASS|SLOW|MISMATCH|ERROR)\s*$")
    table = [line for line in text.splitlines() if " instances: " not in line]
    order = [m.group(1) for m in map(verdict_cell.match, table) if m]
    assert order == ["SLOW", "MISMATCH", "ERROR", "PASS", "PASS"]
    assert "What explains" not in text


def test_terminal_table_fits_100_columns_with_whole_short_ids(tmp_path):
    """Issue #16: at 100 columns no row folds; the JSON keeps the full id."""
    path = case_file(tmp_path, binary_case(
        "layer_norm.affine", extra="params:\n  shape: [[1, 128, 768], [32, 1024]]\n"
                                  "  dtype: [float16, float32]\n  eps: [0.00001]",
        shape="[4, 8]"))
    config = fake_config()
    record = run(load_instances(path), config, session=fake_session(config))
    console = Console(file=io.StringIO(), width=100, color_system=None)
    render_terminal(record, console, show_notes=False)
    lines = console.file.getvalue().splitlines()
    assert max(map(len, lines)) <= 100
    for short in ("layer_norm.affine[1x128x768,float16,1e-05]",
                  "layer_norm.affine[32x1024,float32,1e-05]"):
        (row,) = [line for line in lines if line.startswith(short)]
        assert "PASS" in row                    # one line per row: nothing folded
    assert record.instances[0].id == (
        "layer_norm.affine[shape=1x128x768,dtype=float16,eps=1e-05]")
    assert "mode serial; threshold 0.8" in "\n".join(lines)


def test_a_correctness_run_says_agree_not_pass(tmp_path):
    path = case_file(tmp_path, unary("sine", "sin"))
    config = fake_config(timing=False)
    record = run(load_instances(path), config, session=fake_session(config))
    text = terminal_text(record)
    assert "AGREE" in text and "PASS" not in text
    assert "1 instances: 1 AGREE" in text


def test_markdown_has_a_row_per_measurement_and_the_summary(record):
    md = render_markdown(record)
    assert "| `add[style=bold]` | x:4x8 float32, y:4x8 float32 | serial |" in md
    assert "0.25 [0.25, 0.25] | 0.8 | **SLOW** |" in md
    assert "**MISMATCH** outputs differ" in md
    assert "**ERROR** mindspore failed calling mindspore.boom: RuntimeError: bad <input>" in md
    assert md.strip().endswith("5 instances: 1 SLOW, 1 MISMATCH, 1 ERROR, 2 PASS")
    table = [line for line in md.splitlines() if line.startswith("| `")]
    assert len(table) == 5
    assert all(line.count(" | ") == 7 for line in table)


def test_markdown_limit_says_how_many_rows_were_left_out(record):
    md = render_markdown(record, limit=2)
    assert len([line for line in md.splitlines() if line.startswith("| `")]) == 2
    assert "| ... | 3 more rows |" in md


def test_html_escapes_text_and_keeps_ids_and_notes(record):
    page = render_html(record)
    assert page.startswith("<!doctype html>")
    assert "<td>add[style=bold]</td>" in page
    assert "bad &lt;input&gt; &amp; more" in page
    assert "bad <input>" not in page
    assert "0.25 [0.25, 0.25]" in page
    assert "class='SLOW'>SLOW</td>" in page
    assert "<li>known: expected mismatch: known offset</li>" in page
    # stated once for the run, not once per row
    assert "<li>1 measurements: a side ran within 3x of its trivial-op floor" in page
    assert "<li>add[style=bold]: [serial] mindspore is dispatch-bound" not in page


def test_a_saved_record_renders_like_the_live_one(record, tmp_path):
    path = tmp_path / "run.json"
    write_results(path, record)
    saved = load_results(path)
    assert render_markdown(saved) == render_markdown(record)
    assert terminal_text(saved) == terminal_text(record)


def test_an_interrupted_record_says_so(record):
    partial = record.replace(complete=False, interrupted=True, instances=record.instances[:2])
    assert summary_line(partial) == "2 instances: 1 SLOW, 1 PASS (INTERRUPTED: partial results)"
    assert "INTERRUPTED" in terminal_text(partial)


def test_a_check_only_record_has_no_overhead_table(tmp_path):
    config = fake_config(timing=False)
    record = run(load_instances(case_file(tmp_path, binary_case("add"))), config,
                 session=fake_session(config))
    text = terminal_text(record)
    assert "Per-call overhead" not in text
    assert "1 instances: 1 AGREE" in text     # outputs agree; PASS is the speed verdict


@pytest.mark.parametrize("seconds, text", [
    (None, "-"), (5e-8, "50 ns"), (2.5e-5, "25 us"), (1.234e-3, "1.23 ms"), (2.0, "2 s")])
def test_fmt_time_picks_a_readable_unit(seconds, text):
    assert fmt_time(seconds) == text


# --------------------------------------------------------------------------- explain

OVERHEAD = {"torch": {"dispatch_floor_serial_s": 5e-6, "dispatch_floor_async_s": 2e-6},
            "mindspore": {"dispatch_floor_serial_s": 1e-3, "dispatch_floor_async_s": 5e-5}}


def test_explain_names_the_dispatch_bound_side_per_mode():
    serial = explain_measurement("serial", {"torch": 1e-4, "mindspore": 1.5e-3}, OVERHEAD)
    assert len(serial) == 1 and serial[0].startswith("mindspore is dispatch-bound")
    assert "1e+03 us" in serial[0] and "(serial)" in serial[0]
    # the async floor is far lower: the same mindspore time is kernel time there
    assert explain_measurement("async+backward", {"mindspore": 1.5e-3}, OVERHEAD) == []
    assert explain_measurement("serial", {"numpy": 1e-6}, OVERHEAD) == []


def test_explain_modes_flags_a_large_serial_async_gap():
    notes = explain_modes({"serial": {"torch": 1e-5, "mindspore": 1e-3},
                           "async": {"torch": 9e-6, "mindspore": 1e-4},
                           "serial+backward": {"torch": 1e-5, "mindspore": 1e-5}})
    assert len(notes) == 1
    assert notes[0].startswith("mindspore: serial 1e+03 us is 10x async 100 us")
    assert explain_modes({"serial": {"torch": 1e-5}}) == []



def test_markdown_leads_with_the_top_causes_before_the_table(record):
    md = render_markdown(record)
    causes = md.index("**Top causes of the SLOW verdicts**")
    assert causes < md.index("| instance |")
    assert "- 1 of 1 SLOW measurements: " in md

"""Tables readable at 100 columns (issue #16, point 3): short ids in tables and the full id
in the JSON, $COLUMNS honoured for piped output, `opbench history` never cuts an id."""
from __future__ import annotations

import io
import json

from rich.console import Console
from test_gate_evaluate import pair_of_runs

from opbench.cases.ids import short_id, short_ids
from opbench.cli.gate import _trend_table
from opbench.report.console import PIPED_WIDTH, console_width
from opbench.results.history import HistoryStore
from opbench.results.records import RunRecord

LONG_IDS = ("layer_norm.affine[shape=1x128x768,dtype=float16]",
            "layer_norm.affine[shape=1x128x768,dtype=float32]")


class _Stream(io.StringIO):
    def __init__(self, tty: bool):
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def test_short_ids_keep_the_values_in_order():
    assert short_id("reshape[shape=1x128x768,dtype=float16]") == "reshape[1x128x768,float16]"
    assert short_id("cat[shapes=[2x3]x[4x3],dim=0]") == "cat[[2x3]x[4x3],0]"
    assert short_id("pad[mode={a=1_b=2}]") == "pad[{a=1_b=2}]"
    assert short_id("sum_all") == "sum_all"
    assert short_id("odd[no equals]") == "odd[no equals]"


def test_ids_that_would_collide_keep_their_full_form():
    names = short_ids(["f[a=1,b=2]", "f[b=1,a=2]", "g[n=3]"])
    assert names == {"f[a=1,b=2]": "f[a=1,b=2]", "f[b=1,a=2]": "f[b=1,a=2]", "g[n=3]": "g[3]"}


def test_columns_is_honoured_also_when_piped():
    assert console_width(_Stream(tty=False), {"COLUMNS": "100"}) == 100
    assert console_width(_Stream(tty=True), {"COLUMNS": "100"}) == 100
    assert console_width(_Stream(tty=False), {}) == PIPED_WIDTH
    assert console_width(_Stream(tty=True), {}) is None      # rich asks the terminal


def test_history_table_at_100_columns_keeps_float16_and_float32_apart(tmp_path):
    base, cur = pair_of_runs(7, ids=LONG_IDS)
    cur["environment"]["git_commit"] = "def"
    db = tmp_path / "h.db"
    with HistoryStore(db) as store:
        store.record_run(RunRecord.from_dict(base))
        store.record_run(RunRecord.from_dict(cur))
        points = store.trend("layer_norm")
    console = Console(file=io.StringIO(), width=100, color_system=None)
    console.print(_trend_table(points, "layer_norm"))
    lines = [line.rstrip() for line in console.file.getvalue().splitlines()]
    assert max(map(len, lines)) <= 100
    for dtype in ("float16", "float32"):
        heading = f"layer_norm.affine[1x128x768,{dtype}]  serial"
        at = lines.index(heading)                           # whole, on a line of its own
        assert [line.split()[0] for line in lines[at + 3:at + 5]] == ["#1", "#2"]
    assert "machine: m1" in lines[0]


def test_the_json_keeps_the_full_id(tmp_path):
    base, _ = pair_of_runs(7, ids=LONG_IDS)
    assert [i["id"] for i in json.loads(json.dumps(base))["instances"]] == list(LONG_IDS)


def test_times_round_into_the_next_unit():
    from opbench.report.text import fmt_time

    assert fmt_time(999.6e-6) == "1 ms"           # not "1e+03 us"
    assert fmt_time(999.4e-6) == "999 us"
    assert fmt_time(0.9996) == "1 s"

"""tools/corpus_suggestions.py: the docs table of `opbench suggest` over the corpus, from saved
runs (no run here)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import corpus_suggestions  # noqa: E402  (tools/ is not a package)


def _row(verdict, estimate, line, low=None, high=None):
    return {"file": "/x/script.py", "start_line": line, "api": "torch.sigmoid + mul",
            "affinity_api": "torch.nn.functional.silu", "verdict": verdict, "share": 0.25,
            "saving_s": {"estimate": estimate, "ci_low": low if low is not None else estimate,
                         "ci_high": high if high is not None else estimate}}


def test_the_row_counts_suggestions_faster_and_differing_and_names_the_largest(tmp_path):
    entry = corpus_suggestions.load_manifest()[0]
    stem = entry.path.stem
    (tmp_path / f"{stem}.suggest.exit.json").write_text(
        json.dumps({"returncode": 0, "wall_s": 1.0, "stderr": ""}))
    rows = [_row("faster", 0.002, 7, 0.001, 0.003), _row("faster", 0.004, 9, 0.003, 0.005),
            _row("no measurable gain here", 0.010, 11, -0.01, 0.03),
            {**_row("outputs differ", 0.0, 12), "saving_s": None}]
    (tmp_path / f"{stem}.suggest.json").write_text(json.dumps({"suggestions": rows}))
    line = corpus_suggestions.table_row(entry, tmp_path)
    # the largest saving is the largest FASTER one, not a larger estimate with no evidence
    assert f"| `{entry.script}` | {entry.framework} | 4 | 2 | 1 | 4.000 ms [3.000, 5.000] " \
           f"(25.0%): script.py:9 " in line


def test_a_run_without_a_record_is_shown_failed_with_its_last_line(tmp_path):
    entry = corpus_suggestions.load_manifest()[0]
    (tmp_path / f"{entry.path.stem}.suggest.exit.json").write_text(json.dumps(
        {"returncode": 2, "wall_s": 1.0, "stderr": "Traceback\nValueError: boom\n"}))
    assert "failed: ValueError: boom" in corpus_suggestions.table_row(entry, tmp_path)
    assert corpus_suggestions.table_row(corpus_suggestions.load_manifest()[1],
                                        tmp_path) is None

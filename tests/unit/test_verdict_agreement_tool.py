"""tools/verdict_agreement.py: the cross-table and agreement figures of two results files."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "unit" / "fixtures" / "golden" / "run_in_workers.json"


def _with_verdicts(tmp_path: Path, name: str, verdicts: dict[str, str]) -> Path:
    data = json.loads(GOLDEN.read_text(encoding="utf-8"))
    for inst in data["instances"]:
        inst["verdict"] = verdicts.get(inst["id"], inst["verdict"])
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_two_runs_cross_table_agreement_and_flips(tmp_path):
    # golden: add PASS, slow_add SLOW, neg_pair PASS
    first = _with_verdicts(tmp_path, "a.json", {"neg_pair": "INCONCLUSIVE"})
    second = _with_verdicts(tmp_path, "b.json", {"add": "SLOW"})
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "verdict_agreement.py"),
                          str(first), str(second)], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert "| PASS | 0 | 0 | 1 |" in out           # neg_pair: INCONCLUSIVE -> PASS
    assert "| SLOW | 1 | 1 | 0 |" in out           # add flipped, slow_add kept
    assert "decided in either: 3; the same verdict in both: 1 (33.3%); PASS<->SLOW flips: 1" \
        in out
    assert "  add: PASS -> SLOW" in out
    # the golden run's timestamps are fixed, so its wall is 0: no ratio rather than a crash
    assert "second / first: wall n/a, measuring 1.00x" in out

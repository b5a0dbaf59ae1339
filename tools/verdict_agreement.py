"""How two runs of one selection agree on their verdicts, and what each cost.

    python tools/verdict_agreement.py first.json second.json [--merge a2.json --merge b2.json]

Prints each run's wall time (created to finished), its measuring (the instances' durations
summed) and set-up, the cross-table of the two runs' verdicts per instance, how many of the
instances decided (PASS or SLOW) in either run got the same verdict in both, and any
PASS<->SLOW flip: the figures issue 26 asks of sequential stopping against the fixed
protocol and of two runs against each other. A run measured in shards is given as several
files, `--merge` naming the further shards of the second run (`--first-part` of the first).
"""
from __future__ import annotations

import argparse
import datetime as dt
from collections import Counter
from pathlib import Path

from opbench.results.records import RunRecord, load_results

DECIDED = ("PASS", "SLOW")
ORDER = ("PASS", "SLOW", "INCONCLUSIVE", "MISMATCH", "ERROR")


def _wall_s(record: RunRecord) -> float:
    if record.finished_utc is None:
        return float("nan")
    started = dt.datetime.fromisoformat(record.created_utc)
    return (dt.datetime.fromisoformat(record.finished_utc) - started).total_seconds()


def _run(paths: list[Path]) -> tuple[dict[str, str], float, float, float]:
    """Verdict per instance id, and wall, measuring and set-up seconds summed over parts."""
    verdicts: dict[str, str] = {}
    wall = measuring = setup = 0.0
    for path in paths:
        record = load_results(path)
        wall += _wall_s(record)
        measuring += record.measuring_s
        setup += record.setup_s or 0.0
        for inst in record.instances:
            verdicts[inst.id] = inst.verdict.value if inst.verdict else "ERROR"
    return verdicts, wall, measuring, setup


def _times(value: float, base: float) -> str:
    return f"{value / base:.2f}x" if base > 0 else "n/a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    parser.add_argument("--first-part", type=Path, action="append", default=[],
                        help="a further shard of the first run")
    parser.add_argument("--merge", type=Path, action="append", default=[],
                        help="a further shard of the second run")
    args = parser.parse_args()
    runs = [_run([args.first, *args.first_part]), _run([args.second, *args.merge])]
    for name, (verdicts, wall, measuring, setup) in zip(("first", "second"), runs):
        counts = Counter(verdicts.values())
        print(f"{name}: wall {wall:.0f} s, measuring {measuring:.1f} s, set-up {setup:.1f} s; "
              + ", ".join(f"{counts[v]} {v}" for v in ORDER if counts[v]))
    (a, wall_a, meas_a, _), (b, wall_b, meas_b, _) = runs
    print(f"second / first: wall {_times(wall_b, wall_a)}, measuring {_times(meas_b, meas_a)}")
    common = sorted(set(a) & set(b))
    table = Counter((b[i], a[i]) for i in common)
    shown = [v for v in ORDER if any(v in key for key in table)]
    print("\n| second \\ first | " + " | ".join(shown) + " |")
    print("| --- " * (len(shown) + 1) + "|")
    for row in shown:
        print(f"| {row} | " + " | ".join(str(table[(row, col)]) for col in shown) + " |")
    decided = [i for i in common if a[i] in DECIDED or b[i] in DECIDED]
    same = sum(a[i] == b[i] for i in decided)
    flips = [i for i in decided if {a[i], b[i]} == set(DECIDED)]
    print(f"\ndecided in either: {len(decided)}; the same verdict in both: {same} "
          f"({100 * same / max(1, len(decided)):.1f}%); PASS<->SLOW flips: {len(flips)}")
    for i in flips + [i for i in decided if a[i] != b[i] and i not in flips]:
        print(f"  {i}: {a[i]} -> {b[i]}")
    if set(a) ^ set(b):
        print(f"in one run only: {len(set(a) ^ set(b))} instances")


if __name__ == "__main__":
    main()

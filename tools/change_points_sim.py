"""Prints the change-point method's detection rate and false alarms per 100 series
(opbench/results/change_sim.py). Usage: python tools/change_points_sim.py [SERIES]"""
from __future__ import annotations

import sys

from opbench.results.change_sim import DRIFT_SD, SE_LOG, simulate


def main() -> None:
    series = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    print(f"noise: per-run se {SE_LOG:.0%} (log), run-to-run drift {DRIFT_SD:.0%}; "
          f"{series} series per row")
    print("runs  step  at  detected/100  false alarms/100 (A/A)")
    for runs, at in ((6, 3), (12, 6), (30, 20)):
        for step in (0.10, 0.15, 0.25):
            r = simulate(series, runs, step, at)
            print(f"{runs:4d}  {step:4.0%}  {at:2d}  {r.detected_per_100:12.1f}  "
                  f"{r.false_alarms_per_100:8.1f}")


if __name__ == "__main__":
    main()

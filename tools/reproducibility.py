"""Run one selection N times from scratch and print how well the runs agree.

    python tools/reproducibility.py --runs 5 --out out/repro -- \
        cases/ --op add --op matmul --op softmax --op sum -k float32 --no-backward
    python tools/reproducibility.py --analyze out/repro/run-*.json     # no measuring

Each run is a fresh `opbench run` process with the arguments after `--` (default settings
unless they say otherwise), so everything a process carries (thread pools, allocator,
kernel choice) is drawn anew. Per instance it prints the ratio spread (max/min over the
runs), each side's median spread, how often one run's ratio lies inside another run's 95%
interval, the verdicts, and the seconds of measuring per run (opbench/reproducibility.py).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path


def _run(args: list[str], out_dir: Path, runs: int) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(1, runs + 1):
        path = out_dir / f"run-{i}.json"
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "opbench.cli.main", "run", *args, "--json",
                               str(path)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        print(f"run {i}/{runs}: exit {done.returncode}, {time.perf_counter() - started:.0f} s "
              f"wall -> {path}", file=sys.stderr)
        if done.returncode not in (0, 1, 3):
            sys.stderr.write(done.stderr[-3000:])
            raise SystemExit(f"run {i} failed")
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", default="out/repro")
    parser.add_argument("--analyze", nargs="+", default=None, metavar="RUN.json")
    parser.add_argument("--min-time-us", type=float, default=10.0,
                        help="size filter for the second summary line (both sides >= this)")
    parser.add_argument("opbench_args", nargs=argparse.REMAINDER)
    args = parser.parse_args()

    from opbench.results.records import load_results
    from opbench.results.reproducibility import agreement, summary

    if args.analyze:
        paths = [Path(p) for p in args.analyze]
    else:
        rest = [a for a in args.opbench_args if a != "--"]
        paths = _run(rest, Path(args.out), args.runs)
    records = [load_results(p) for p in paths]
    rows = agreement(records)
    print(f"{'instance':48s} {'key':7s} {'spread':>7s} {'torch':>6s} {'ms':>6s} {'cover':>6s} "
          f"{'s/run':>6s}  verdicts")
    for r in rows:
        med = r.median_spread
        sides = list(med)
        print(f"{r.id[:48]:48s} {r.key[:7]:7s} {r.ratio_spread:7.3f} {med[sides[0]]:6.3f} "
              f"{med[sides[-1]]:6.3f} {r.cross_coverage:6.2f} {r.seconds_per_run:6.2f}  "
              f"{' '.join(v[:4] for v in r.verdicts)}")
    print(json.dumps(summary(rows, args.min_time_us * 1e-6), indent=1))
    if records:
        config = records[0].config
        print(f"config: threads {config.threads}, launch {config.launch}, processes "
              f"{config.processes}, quiesce {config.quiesce}, cores {os.cpu_count()}")


if __name__ == "__main__":
    main()

"""The accuracy of `opbench model` on the example pairs (examples/transformer, examples/cnn):
a benchmark, not a test (run it on a quiet machine, one job at a time).

For each pair it runs `opbench model --json` on the script of each framework named by
--traced (default: the torch script), then each script of the pair on its own, untraced, in
N fresh processes (same threads, each framework's default launch mode), and compares per
step:
  - the traced framework: its projection against its traced time, and against its own
    untraced median step;
  - the other framework: its projection against what the pair's script in that framework
    takes (median of the N processes' median steps), with each replay process's median.

    python tools/model_accuracy.py --runs 5 --steps 10 --out /tmp/accuracy
    python tools/model_accuracy.py --traced torch mindspore transformer
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAIRS = {"transformer": ("run_torch.py", "run_mindspore.py"),
         "cnn": ("run_torch.py", "run_mindspore.py")}
MEDIAN = re.compile(r"median step ([0-9.]+) ms")


def _env() -> dict[str, str]:
    return {**os.environ, "GLOG_v": "3",
            "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH"))
                                          if p)}


def step_ms(script: Path, steps: int) -> float:
    done = subprocess.run([sys.executable, str(script), "--steps", str(steps)],
                          capture_output=True, text=True, env=_env(), cwd=script.parent,
                          timeout=1800, check=True)
    found = MEDIAN.search(done.stdout)
    if not found:
        raise RuntimeError(f"{script} printed no median step:\n{done.stdout}")
    return float(found.group(1))


def project(script: Path, name: str, traced: str, args: argparse.Namespace,
            out: Path) -> dict:
    """`opbench model --json` on one script of a pair: its record's model object."""
    record_path = out / f"{name}-{traced}.json"
    done = subprocess.run([sys.executable, "-m", "opbench.cli", "model", "-q", "--budget",
                           "0", "--processes", str(args.processes), "--json",
                           str(record_path), "-o", str(out / f"work-{name}-{traced}"), "--",
                           sys.executable, str(script), "--steps", str(args.steps)],
                          env=_env(), cwd=script.parent, timeout=3600,
                          stdout=subprocess.DEVNULL)
    if done.returncode not in (0, 3):      # 3: projected, but something is in doubt
        raise RuntimeError(f"opbench model exited {done.returncode} on {script}")
    return json.loads(record_path.read_text())["model"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--traced", nargs="+", default=["torch"],
                        choices=["torch", "mindspore"],
                        help="which script of each pair opbench model traces (the other "
                             "framework is projected)")
    parser.add_argument("--out", default="out/model-accuracy")
    parser.add_argument("pairs", nargs="*", default=list(PAIRS))
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.pairs:
        scripts = dict(zip(("torch", "mindspore"),
                           (REPO / "examples" / name / s for s in PAIRS[name])))
        models = {traced: project(scripts[traced], name, traced, args, out)
                  for traced in args.traced}
        runs = {fw: [step_ms(script, args.steps) for _ in range(args.runs)]
                for fw, script in scripts.items()}
        for traced, model in models.items():
            other = "mindspore" if traced == "torch" else "torch"
            steps = model["region"]["steps"]
            per_step = {fw: p["estimate"] / steps * 1e3 for fw, p in model["projected_s"].items()}
            processes = {fw: [v / steps * 1e3 for v in p.get("process_medians", ())]
                         for fw, p in model["projected_s"].items()}
            traced_ms = model["covered_traced_s"] / steps * 1e3
            row = {"pair": name, "traced": traced, "other": other, "steps": steps,
                   "traced_projected_ms": per_step[traced], "traced_traced_ms": traced_ms,
                   "traced_untraced_ms": statistics.median(runs[traced]),
                   "traced_untraced_runs_ms": runs[traced],
                   "other_projected_ms": per_step[other],
                   "other_process_medians_ms": processes[other],
                   "other_untraced_ms": statistics.median(runs[other]),
                   "other_untraced_runs_ms": runs[other],
                   "self_check": model["self_check"], "coverage": model["coverage"],
                   "mismatches": len(model["mismatches"]), "errors": model["errors"]}
            row["traced_vs_traced"] = row["traced_projected_ms"] / traced_ms - 1
            row["traced_vs_untraced"] = (row["traced_projected_ms"]
                                         / row["traced_untraced_ms"] - 1)
            row["other_vs_its_script"] = (row["other_projected_ms"]
                                          / row["other_untraced_ms"] - 1)
            rows.append(row)
            print(json.dumps(row), flush=True)
    (out / "accuracy.json").write_text(json.dumps(rows, indent=1))
    print("\n| pair (traced) | traced: projected / traced / untraced (ms per step) | "
          "error vs traced / vs untraced | other: projected / its script (ms per step) | "
          "error | other's replay processes (ms per step) | its script's runs |")
    print("|---|---|---:|---|---:|---|---|")
    for r in rows:
        print(f"| {r['pair']} ({r['traced']}) | {r['traced_projected_ms']:.3g} / "
              f"{r['traced_traced_ms']:.3g} / {r['traced_untraced_ms']:.3g} | "
              f"{r['traced_vs_traced']:+.0%} / {r['traced_vs_untraced']:+.0%} | "
              f"{r['other']} {r['other_projected_ms']:.3g} / {r['other_untraced_ms']:.3g} | "
              f"{r['other_vs_its_script']:+.0%} | "
              f"{', '.join(f'{v:.3g}' for v in r['other_process_medians_ms'])} | "
              f"{', '.join(f'{v:.3g}' for v in r['other_untraced_runs_ms'])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

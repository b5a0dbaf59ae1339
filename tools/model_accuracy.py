"""The accuracy of `opbench model` on the example pairs (examples/transformer, examples/cnn):
a benchmark, not a test (run it on a quiet machine, one job at a time).

For each pair it runs `opbench model --json` on the script of each framework named by
--traced (default: the torch script), then each script of the pair on its own, untraced, in
fresh processes (--runs for torch scripts; --mindspore-runs for MindSpore's, whose speed here
comes in modes), same threads, each framework's default launch mode, and compares per step:
  - the traced framework: its projection against its traced time, and against its own
    untraced mean step (mean of the runs' mean steps);
  - the other framework: its projection against what the pair's script in that framework
    takes: the mean of its runs' mean steps (what opbench projects: steps add up), with a
    t interval, and the median of the runs' median steps (the issue's "median of 5 runs");
    with each replay process's median.

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
MEAN = re.compile(r"mean step ([0-9.]+) ms")


def _env() -> dict[str, str]:
    return {**os.environ, "GLOG_v": "3",
            "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH"))
                                          if p)}


def step_ms(script: Path, steps: int) -> tuple[float, float]:
    """One fresh run of a script: its median and mean step, ms."""
    done = subprocess.run([sys.executable, str(script), "--steps", str(steps)],
                          capture_output=True, text=True, env=_env(), cwd=script.parent,
                          timeout=1800, check=True)
    median, mean = MEDIAN.search(done.stdout), MEAN.search(done.stdout)
    if not median or not mean:
        raise RuntimeError(f"{script} printed no median and mean step:\n{done.stdout}")
    return float(median.group(1)), float(mean.group(1))


def mean_interval(values: list[float]) -> tuple[float, float, float]:
    """Mean with a 95% t interval: opbench's own step estimate, each run a process."""
    from opbench.model.impact.project import step_time

    found = step_time([[v] for v in values])
    return found.value, found.low, found.high


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
    parser.add_argument("--runs", type=int, default=5,
                        help="fresh runs of each torch script")
    parser.add_argument("--mindspore-runs", type=int, default=16,
                        help="fresh runs of each MindSpore script (its speed comes in modes)")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--traced", nargs="+", default=["torch"],
                        choices=["torch", "mindspore"],
                        help="which script of each pair opbench model traces (the other "
                             "framework is projected)")
    parser.add_argument("--out", default="out/model-accuracy")
    parser.add_argument("pairs", nargs="*", default=list(PAIRS))
    args = parser.parse_args(argv)
    # absolute: each opbench model run works in its script's directory, where a relative --out
    # would put the record out of this tool's reach (FileNotFoundError after the first run)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.pairs:
        scripts = dict(zip(("torch", "mindspore"),
                           (REPO / "examples" / name / s for s in PAIRS[name])))
        models = {traced: project(scripts[traced], name, traced, args, out)
                  for traced in args.traced}
        count = {fw: args.mindspore_runs if fw == "mindspore" else args.runs
                 for fw in scripts}
        runs = {fw: [step_ms(script, args.steps) for _ in range(count[fw])]
                for fw, script in scripts.items()}
        for traced, model in models.items():
            other = "mindspore" if traced == "torch" else "torch"
            steps = model["region"]["steps"]
            per_step = {fw: p["estimate"] / steps * 1e3 for fw, p in model["projected_s"].items()}
            processes = {fw: [v / steps * 1e3 for v in p.get("process_medians", ())]
                         for fw, p in model["projected_s"].items()}
            traced_ms = model["covered_traced_s"] / steps * 1e3
            other_mean = mean_interval([mean for _, mean in runs[other]])
            row = {"pair": name, "traced": traced, "other": other, "steps": steps,
                   "traced_projected_ms": per_step[traced], "traced_traced_ms": traced_ms,
                   "traced_untraced_ms": mean_interval([m for _, m in runs[traced]])[0],
                   "traced_untraced_runs_ms": runs[traced],
                   "other_projected_ms": per_step[other],
                   "other_projected_ci_ms": [p / steps * 1e3 for p in (
                       model["projected_s"][other]["ci_low"],
                       model["projected_s"][other]["ci_high"])],
                   "other_process_medians_ms": processes[other],
                   "other_untraced_ms": other_mean[0],
                   "other_untraced_ci_ms": other_mean[1:],
                   "other_untraced_median_ms": statistics.median(m for m, _ in runs[other]),
                   "other_untraced_runs_ms": runs[other],
                   "self_check": model["self_check"], "coverage": model["coverage"],
                   "mismatches": len(model["mismatches"]), "errors": model["errors"]}
            row["traced_vs_traced"] = row["traced_projected_ms"] / traced_ms - 1
            row["traced_vs_untraced"] = (row["traced_projected_ms"]
                                         / row["traced_untraced_ms"] - 1)
            row["other_vs_its_script"] = (row["other_projected_ms"]
                                          / row["other_untraced_ms"] - 1)
            row["other_vs_its_median_run"] = (row["other_projected_ms"]
                                              / row["other_untraced_median_ms"] - 1)
            rows.append(row)
            print(json.dumps(row), flush=True)
    (out / "accuracy.json").write_text(json.dumps(rows, indent=1))
    print("\n| pair (traced) | traced: projected / traced / untraced mean (ms per step) | "
          "error vs traced / vs untraced | other: projected [95%] / its script's mean [95%] "
          "(ms per step) | error | vs its median run | other's replay processes (medians) | "
          "its script's runs (median/mean) |")
    print("|---|---|---:|---|---:|---:|---|---|")
    for r in rows:
        lo, hi = r["other_projected_ci_ms"]
        slo, shi = r["other_untraced_ci_ms"]
        print(f"| {r['pair']} ({r['traced']}) | {r['traced_projected_ms']:.3g} / "
              f"{r['traced_traced_ms']:.3g} / {r['traced_untraced_ms']:.3g} | "
              f"{r['traced_vs_traced']:+.0%} / {r['traced_vs_untraced']:+.0%} | "
              f"{r['other']} {r['other_projected_ms']:.3g} [{lo:.3g}, {hi:.3g}] / "
              f"{r['other_untraced_ms']:.3g} [{slo:.3g}, {shi:.3g}] | "
              f"{r['other_vs_its_script']:+.0%} | {r['other_vs_its_median_run']:+.0%} | "
              f"{', '.join(f'{v:.3g}' for v in r['other_process_medians_ms'])} | "
              f"{', '.join(f'{a:.3g}/{b:.3g}' for a, b in r['other_untraced_runs_ms'])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The accuracy of `opbench model` on the example pairs (examples/transformer, examples/cnn):
a benchmark, not a test (run it on a quiet machine, one job at a time).

For each pair it runs `opbench model --json` on the torch script, then each script of the
pair on its own, untraced, in N fresh processes (same threads, each framework's default
launch mode), and compares per step:
  - the traced framework: its projection against its traced time, and against its own
    untraced median step;
  - the other framework: its projection against what its port takes (median of the N
    processes' median steps).

    python tools/model_accuracy.py --runs 5 --steps 10 --out /tmp/accuracy
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--out", default="out/model-accuracy")
    parser.add_argument("pairs", nargs="*", default=list(PAIRS))
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.pairs:
        torch_script, port_script = (REPO / "examples" / name / s for s in PAIRS[name])
        record_path = out / f"{name}.json"
        done = subprocess.run([sys.executable, "-m", "opbench.cli", "model", "-q", "--budget",
                               "0", "--processes", str(args.processes), "--json",
                               str(record_path), "-o", str(out / f"work-{name}"), "--",
                               sys.executable, str(torch_script), "--steps", str(args.steps)],
                              env=_env(), cwd=torch_script.parent, timeout=3600,
                              stdout=subprocess.DEVNULL)
        if done.returncode not in (0, 3):      # 3: projected, but something is in doubt
            raise RuntimeError(f"opbench model exited {done.returncode} on {name}")
        model = json.loads(record_path.read_text())["model"]
        steps = model["region"]["steps"]
        projected = {fw: p["estimate"] / steps * 1e3 for fw, p in model["projected_s"].items()}
        traced_ms = model["covered_traced_s"] / steps * 1e3
        torch_runs = [step_ms(torch_script, args.steps) for _ in range(args.runs)]
        port_runs = [step_ms(port_script, args.steps) for _ in range(args.runs)]
        row = {"pair": name, "steps": steps,
               "torch_projected_ms": projected["torch"], "torch_traced_ms": traced_ms,
               "torch_untraced_ms": statistics.median(torch_runs),
               "torch_untraced_runs_ms": torch_runs,
               "mindspore_projected_ms": projected["mindspore"],
               "mindspore_port_ms": statistics.median(port_runs),
               "mindspore_port_runs_ms": port_runs,
               "self_check": model["self_check"], "coverage": model["coverage"],
               "mismatches": len(model["mismatches"]), "errors": model["errors"]}
        row["torch_vs_traced"] = row["torch_projected_ms"] / traced_ms - 1
        row["torch_vs_untraced"] = row["torch_projected_ms"] / row["torch_untraced_ms"] - 1
        row["mindspore_vs_port"] = row["mindspore_projected_ms"] / row["mindspore_port_ms"] - 1
        rows.append(row)
        print(json.dumps(row), flush=True)
    (out / "accuracy.json").write_text(json.dumps(rows, indent=1))
    print("\n| pair | torch projected / traced / untraced (ms per step) | error vs traced | "
          "error vs untraced | MindSpore projected / port (ms per step) | error vs port |")
    print("|---|---|---:|---:|---|---:|")
    for r in rows:
        print(f"| {r['pair']} | {r['torch_projected_ms']:.3g} / {r['torch_traced_ms']:.3g} / "
              f"{r['torch_untraced_ms']:.3g} | {r['torch_vs_traced']:+.0%} | "
              f"{r['torch_vs_untraced']:+.0%} | {r['mindspore_projected_ms']:.3g} / "
              f"{r['mindspore_port_ms']:.3g} | {r['mindspore_vs_port']:+.0%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

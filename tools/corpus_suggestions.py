"""`opbench suggest` over the conformance corpus (tests/conformance/) and docs/model.md's table
of it: per script, the suggestions found, how many are measurably faster, and the largest
saving per step (with its interval and share of the step). A benchmark, not a test.

    python tools/corpus_suggestions.py --lock /tmp/opbench-cpu.lock --out /tmp/corpus_suggest
    python tools/corpus_suggestions.py --out DIR hf_bert_inference.py ms_cell_mlp_sgd.py
    python tools/corpus_suggestions.py --table-only --out DIR     # the table of saved runs

Each script runs as tools/conformance.py runs it (its manifest entry's interpreter, from the
repository root), as `opbench suggest --processes N --json` (N replay processes per
suggestion, 2 by default: the corpus is 33 scripts on a shared machine; a saving is called
faster only when its interval over those processes excludes zero). --lock holds a flock
around each script's run, not between them.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
from conformance import Entry, held, load_manifest  # noqa: E402

DEFAULT_PROCESSES = 2
# A script's suggest run past this is a hang: the corpus' `opbench model` runs took 11-27 s
# each (docs/model.md); a suggest run times each candidate in fresh processes on top.
TIMEOUT_S = 900


def run_entry(entry: Entry, out_dir: Path, processes: int, lock: Path | None) -> None:
    stem = entry.path.stem
    json_path = out_dir / f"{stem}.suggest.json"
    json_path.unlink(missing_ok=True)
    command = [sys.executable, "-m", "opbench.cli", "suggest", "--processes", str(processes),
               "-q", "--json", str(json_path), "-o", str(out_dir / stem),
               "--", entry.python(), str(entry.path)]
    start = time.perf_counter()
    with held(lock):
        try:
            done = subprocess.run(command, cwd=REPO, env={**os.environ, "GLOG_v": "3"},
                                  capture_output=True, text=True, timeout=TIMEOUT_S,
                                  check=False)
            code, stderr = done.returncode, done.stderr
        except subprocess.TimeoutExpired:
            code, stderr = -1, f"timed out after {TIMEOUT_S} s"
    (out_dir / f"{stem}.suggest.exit.json").write_text(json.dumps(
        {"returncode": code, "wall_s": time.perf_counter() - start, "stderr": stderr[-2000:]}))


def table_row(entry: Entry, out_dir: Path) -> str | None:
    stem = entry.path.stem
    exit_path = out_dir / f"{stem}.suggest.exit.json"
    if not exit_path.exists():
        return None
    done = json.loads(exit_path.read_text())
    json_path = out_dir / f"{stem}.suggest.json"
    if not json_path.exists():
        last = (done["stderr"].strip().splitlines() or ["no output"])[-1][:120]
        return f"| `{entry.script}` | {entry.framework} | - | - | - | failed: {last} |"
    rows = json.loads(json_path.read_text())["suggestions"]
    faster = [r for r in rows if r["verdict"] == "faster"]
    differ = sum(1 for r in rows if r["verdict"] == "outputs differ")
    best = max(faster, key=lambda r: r["saving_s"]["estimate"], default=None)
    if best is None:
        largest = "-"
    else:
        s = best["saving_s"]
        largest = (f"{s['estimate'] * 1e3:.3f} ms [{s['ci_low'] * 1e3:.3f}, "
                   f"{s['ci_high'] * 1e3:.3f}] ({best['share'] * 100:.1f}%): "
                   f"{Path(best['file']).name}:{best['start_line']} {best['api']} -> "
                   f"{best['affinity_api']}")
    return (f"| `{entry.script}` | {entry.framework} | {len(rows)} | {len(faster)} | "
            f"{differ} | {largest} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scripts", nargs="*", help="corpus scripts (default: all)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/opbench-corpus-suggest"))
    parser.add_argument("--processes", type=int, default=DEFAULT_PROCESSES)
    parser.add_argument("--lock", type=Path, metavar="FILE")
    parser.add_argument("--table-only", action="store_true")
    args = parser.parse_args()
    entries = load_manifest()
    known = {e.script for e in entries}
    unknown = [s for s in args.scripts if s not in known]
    if unknown:
        parser.error(f"not in tests/conformance/manifest.yaml: {', '.join(unknown)}")
    chosen = [e for e in entries if not args.scripts or e.script in args.scripts]
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.table_only:
        for entry in chosen:
            why = entry.missing()
            if why:
                print(f"{entry.script}: skipped ({why})", file=sys.stderr)
                continue
            run_entry(entry, args.out, args.processes, args.lock)
            print(f"{entry.script}: done", file=sys.stderr)
    print("| script | framework | suggestions | faster | outputs differ | largest saving per "
          "step [95% CI] (share) |")
    print("|---|---|---:|---:|---:|---|")
    for entry in chosen:
        row = table_row(entry, args.out)
        if row:
            print(row)


if __name__ == "__main__":
    main()

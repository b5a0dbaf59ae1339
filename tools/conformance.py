"""Run `opbench model` on the conformance corpus (tests/conformance/) and print the docs table:
script, calls per step, coverage, self-check error, mismatches, what is not covered and why,
and `opbench model`'s own wall time. A benchmark, not a test: run it on a quiet machine, one
job at a time (tests/integration/test_conformance.py asserts on the same runs).

    python tools/conformance.py                          # the whole corpus, small settings
    python tools/conformance.py --out /tmp/corpus hf_bert_inference.py ms_cell_mlp_sgd.py
    python tools/conformance.py --lock /tmp/opbench-cpu.lock   # a machine shared with others
    python tools/conformance.py --table-only --out /tmp/corpus # the table of runs made there

Each script runs as its users run it, `python SCRIPT` in the interpreter its manifest entry
names (the one running this tool by default), with `--processes 1 --budget 0`: one replay
process per framework and nothing measured alone, so the whole corpus fits in minutes. The
manifest (tests/conformance/manifest.yaml) says per script what it exercises, the floors
today's code reaches and the known bugs it trips on.
"""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "conformance"
MANIFEST = CORPUS / "manifest.yaml"
# The small settings: one replay process per framework, no alone measurements. Measured
# 2026-11-27: 522 s of `opbench model` over the 33 scripts, 11-27 s each (docs/model.md,
# "Conformance corpus").
SMALL_SETTINGS = ("--processes", "1", "--budget", "0", "--quiet")
# A script whose `opbench model` run takes longer than this is a hang (the slowest of the
# corpus took 27 s on 2026-11-27: 20x that is room for a loaded machine, not a slow run).
TIMEOUT_S = 600
# A traceback that passes through opbench's own package is a crash; a script's own noise at
# exit (MindSpore's Cell.__del__ "Exception ignored") is not.
OPBENCH_FRAME = re.compile(r'File "[^"]*/opbench/[^"]*", line \d+')


@dataclass(frozen=True)
class Entry:
    """One script of the corpus, as the manifest describes it."""
    script: str
    framework: str
    exercises: str
    coverage_floor: float
    self_check_bound: float
    measured: str
    interpreter: str = ""
    needs: tuple[str, ...] = ()
    xfail: str = ""

    @property
    def path(self) -> Path:
        return CORPUS / self.script

    def python(self) -> str:
        return self.interpreter or sys.executable

    def missing(self) -> str:
        """Why this script cannot run here ('' when it can): its interpreter is absent or
        lacks a module it needs (checked in this interpreter when it is the script's)."""
        if self.interpreter and not Path(self.interpreter).exists():
            return f"its interpreter {self.interpreter} is absent (a pinned venv: see the manifest)"
        if self.interpreter:
            # the check `opbench model` makes first, called as it calls it: a venv left on a
            # machine without this opbench in it (a CI run on a developer's machine) is
            # skipped with the pip command, not failed
            from opbench.config.vocabulary import FRAMEWORKS
            from opbench.model.impact.processes import (Interpreter, ModelError,
                                                        interpreter_version)
            try:
                interpreter_version(Interpreter(self.interpreter, True), FRAMEWORKS)
            except ModelError as exc:
                return f"its interpreter cannot hold the run: {exc}"
        if not self.interpreter:
            for module in self.needs:
                if importlib.util.find_spec(module) is None:
                    return f"{module} is not installed"
        return ""


@dataclass(frozen=True)
class Run:
    """One `opbench model` run of a corpus script: its exit, its record and its wall time."""
    entry: Entry
    returncode: int
    wall_s: float
    stderr: str
    record: dict | None
    stdout: str = ""

    @property
    def crashed(self) -> bool:
        return self.returncode not in (0, 3) or OPBENCH_FRAME.search(self.stderr) is not None

    def figure(self, key: str):
        return None if self.record is None else self.record.get(key)

    def judged_self_check(self) -> "JudgedSelfCheck":
        """The self-check a bound is held to. A MindSpore-traced record carries a speed probe
        (opbench/model/impact/mode_match.py): over the replay rounds in the capture's speed
        mode the self-check is like for like; where no round ran in it, the figure reads the
        modes' ratio (the tool says so) and no bound applies. Otherwise: over every round."""
        overall = self.figure("self_check")
        modes = self.figure("speed_modes")
        if not modes:
            return JudgedSelfCheck(overall, "every replay round", overall, judged=True)
        in_mode = modes.get("self_check_in_capture_mode")
        probes = ", ".join(f"{p * 1e3:.2f}" for p in modes.get("replay_probe_s", ()))
        where = (f"speed probe: capture {modes['capture_probe_s'] * 1e3:.2f} ms a call, "
                 f"replay rounds {probes}")
        if modes.get("rounds_in_capture_mode") and in_mode is not None:
            return JudgedSelfCheck(in_mode, f"the {modes['rounds_in_capture_mode']} of "
                                   f"{modes['rounds']} rounds in the capture's speed mode "
                                   f"({where})", overall, judged=True)
        return JudgedSelfCheck(None, f"no round in the capture's speed mode ({where})", overall,
                               judged=False)


@dataclass(frozen=True)
class JudgedSelfCheck:
    value: float | None      # the figure held to the bound (None: no self-check at all)
    basis: str               # the rounds it is over, for a failure's message
    overall: float | None    # the record's self-check over every round
    judged: bool             # False: not comparable (no replay round in the capture's mode)

    def within(self, bound: float) -> bool:
        if not self.judged:
            return True
        return self.value is not None and abs(self.value) <= bound

    def text(self) -> str:
        value = (f"{self.value:+.3f}" if self.value is not None
                 else "none" if self.judged else "not judged")
        return f"{value} over {self.basis}; over every round {self.overall}"


def load_manifest(path: Path = MANIFEST) -> list[Entry]:
    data = yaml.safe_load(path.read_text())
    entries = []
    for item in data["scripts"]:
        item = dict(item)
        item["needs"] = tuple(item.get("needs", ()))
        entries.append(Entry(**item))
    return entries


@contextlib.contextmanager
def held(lock: Path | None):
    """Hold an exclusive flock on `lock` (none: nothing), so a shared machine's other timing
    jobs wait for one script's run and no longer: its wall time is then its own."""
    if lock is None:
        yield
        return
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def run_entry(entry: Entry, out_dir: Path) -> Run:
    """`opbench model --json` on one script, from the repository root (so this checkout's
    opbench runs), timed from outside: `opbench model`'s whole wall time, capture included."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = entry.path.stem
    json_path = out_dir / f"{stem}.json"
    json_path.unlink(missing_ok=True)
    command = [sys.executable, "-m", "opbench.cli", "model", *SMALL_SETTINGS,
               "--json", str(json_path), "-o", str(out_dir / stem),
               "--", entry.python(), str(entry.path)]
    env = {**os.environ, "GLOG_v": "3"}
    start = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False)
    wall = time.perf_counter() - start
    (out_dir / f"{stem}.stdout").write_text(done.stdout)
    (out_dir / f"{stem}.stderr").write_text(done.stderr)
    (out_dir / f"{stem}.exit.json").write_text(
        json.dumps({"returncode": done.returncode, "wall_s": wall}))
    return saved_run(entry, out_dir)


def saved_run(entry: Entry, out_dir: Path) -> Run | None:
    """A run written to `out_dir` earlier (none if that script was not run there)."""
    stem = entry.path.stem
    exit_path = out_dir / f"{stem}.exit.json"
    if not exit_path.exists():
        return None
    exit_record = json.loads(exit_path.read_text())
    json_path = out_dir / f"{stem}.json"
    record = json.loads(json_path.read_text())["model"] if json_path.exists() else None
    stdout_path = out_dir / f"{stem}.stdout"
    return Run(entry, exit_record["returncode"], exit_record["wall_s"],
               (out_dir / f"{stem}.stderr").read_text(), record,
               stdout_path.read_text() if stdout_path.exists() else "")


def _percent(value) -> str:
    return "-" if value is None else f"{value * 100:+.0f}%"


def _last_error(run: Run) -> str:
    lines = [line.strip() for line in run.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if "Error" in line or line.startswith("error")]
    return (errors or lines or ["(no output)"])[-1][:160]


def not_covered_text(run: Run, limit: int = 3) -> str:
    """The calls left out, heaviest first: `api` xcalls (share): reason."""
    rows = sorted(run.figure("not_covered") or (), key=lambda r: -r["share"])
    parts = [f"`{r['api']}` x{r['calls']} ({r['share'] * 100:.1f}%): {r['reason'][:120]}"
             for r in rows[:limit]]
    if len(rows) > limit:
        parts.append(f"and {len(rows) - limit} more")
    return "; ".join(parts) or "-"


def table_row(run: Run) -> str:
    entry = run.entry
    if run.record is None:
        why = f"exit {run.returncode}: {_last_error(run)}"
        return (f"| `{entry.script}` | {entry.framework} | - | - | - | - | {why} "
                f"| {run.wall_s:.0f} s |")
    region = run.figure("region") or {}
    coverage = run.figure("coverage")
    mismatches = run.figure("mismatches") or ()
    return (f"| `{entry.script}` | {entry.framework} | {region.get('calls_per_step', '-')} "
            f"| {'-' if coverage is None else f'{coverage * 100:.1f}%'} "
            f"| {_percent(run.figure('self_check'))} | {len(mismatches)} "
            f"| {not_covered_text(run)} | {run.wall_s:.0f} s (exit {run.returncode}) |")


TABLE_HEAD = ("| script | traced | calls/step | coverage | self-check | mismatches "
              "| not covered (share of the region): why | `opbench model` wall |\n"
              "|---|---|---:|---:|---:|---:|---|---:|")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scripts", nargs="*", help="corpus scripts to run (default: all)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/opbench-conformance"),
                        help="directory for the records and outputs")
    parser.add_argument("--lock", type=Path, metavar="FILE",
                        help="hold this flock around each script's run (not between them)")
    parser.add_argument("--table-only", action="store_true",
                        help="run nothing: print the table of the runs saved in --out")
    args = parser.parse_args()
    entries = load_manifest()
    unknown = set(args.scripts) - {e.script for e in entries}
    if unknown:
        parser.error(f"not in {MANIFEST.relative_to(REPO)}: {', '.join(sorted(unknown))}")
    chosen = [e for e in entries if not args.scripts or e.script in args.scripts]
    rows, total = [], 0.0
    for entry in chosen:
        if args.table_only:
            run = saved_run(entry, args.out)
            if run is None:
                print(f"not run in {args.out}: {entry.script}", file=sys.stderr)
                continue
        else:
            why = entry.missing()
            if why:
                print(f"skipped {entry.script}: {why}", file=sys.stderr)
                continue
            with held(args.lock):
                run = run_entry(entry, args.out)
            print(f"{entry.script}: exit {run.returncode}, {run.wall_s:.0f} s", file=sys.stderr)
        total += run.wall_s
        rows.append(table_row(run))
    print(TABLE_HEAD)
    print("\n".join(rows))
    print(f"\n{len(rows)} scripts, `opbench model` wall time {total:.0f} s in all")


if __name__ == "__main__":
    main()

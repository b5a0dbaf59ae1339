"""Ground truth for the affinity pairs (examples/affinity/): what each fix saves per step, and
(--suggest) whether `opbench suggest` (the rows of `opbench model --suggest`) finds and prices it.

    python tools/affinity_pairs.py --lock /tmp/opbench-cpu.lock --framework torch
    python tools/affinity_pairs.py --lock /tmp/opbench-cpu.lock --processes 6 --out DIR
    python tools/affinity_pairs.py --suggest --out DIR        # + opbench suggest on each naive.py
    python tools/affinity_pairs.py --table-only --out DIR     # the tables of a saved run

For each pair of examples/affinity/manifest.yaml, one fresh process imports naive.py and
fixed.py as modules and:
1. checks their outputs equal: two steps of fresh states, each step's result compared
   elementwise (runner/check.py's rule; rtol 1e-4, atol 1e-4: RTOL below says why), then
   the checksums (trained weights included) after them;
2. times their step() alternated, A B B A ..., after a warm-up: each sample one step ending
   with its result read back to the host (where MindSpore's queued operators are waited
   for), the order flipping every round so drift hits both alike.
That is repeated in --processes fresh processes per framework (6 by default): MindSpore's
speed modes move separate processes more than most differences here (docs/model.md), so the
process is the unit of the interval. Per pair: the difference naive - fixed per step, the mean
over processes of each process's median paired difference with a t interval over the
processes, and the ratio naive/fixed with opbench's paired-ratio interval (verdicts/stats.py,
the process as the group). A fix whose interval lies above zero is "faster"; below, "slower";
otherwise "no measurable difference". Written as JSON and Markdown into --out.

With --suggest, each pair's processes run around its `opbench suggest` run instead (half
before, half after: bracketed()), so both see the machine in the same state.

--lock holds a flock around each process (and each `opbench model` run), not between them.
"""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Sequence

import yaml

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:        # run as `python tools/affinity_pairs.py`: this checkout's
    sys.path.insert(0, str(REPO))    # opbench, not an installed one

from opbench.runner.check import compare_outputs  # noqa: E402
from opbench.verdicts.stats import ratio_estimate, student_t_quantile  # noqa: E402

PAIRS_ROOT = REPO / "examples" / "affinity"
MANIFEST = PAIRS_ROOT / "manifest.yaml"
FRAMEWORKS = ("torch", "mindspore")
# Results file format: 1 (2026-11-27) the first.
FORMAT = 1

# Float32 results of one computation by different kernels: runner/inputs.py's float32 rule
# (rtol 1e-4), with its atol for reductions of a thousand terms (1e-4): the feed-forward pairs
# sum 1024 activations in their second linear, and MindSpore's tanh formula is itself 1.9e-4
# off a float64 GELU where ops.gelu is 4e-7 off (measured on 1e5 N(0, 9) values), which left
# 2.3e-5 between naive and fixed outputs. A real difference (a wrong mask, a missing bias) is
# orders of magnitude above it.
RTOL, ATOL = 1e-4, 1e-4
SEED = 0
WARMUP_STEPS = 3
# Per pair and process. A step here takes ~0.5-30 ms, so 1.5 s is 25-1500 rounds; 6 processes
# x 10 pairs x 1.5 s x 2 variants is ~3 min a framework, a share of a machine used by others.
SECONDS_PER_PAIR = 1.5
MIN_ROUNDS, MAX_ROUNDS = 10, 1000
DEFAULT_PROCESSES = 6
# The bar: the savings opbench claims add up to within 30% of the measured difference.
CLAIM_TOLERANCE = 0.30
CHILD_MARK = "AFFINITY_PAIR "
CHILD_TIMEOUT_S = 900
SUGGEST_TIMEOUT_S = 900
# `opbench suggest` on a naive script (the rows of `opbench model --suggest`, without the
# cross-framework projection that takes most of that command's time): 6 replay processes
# per candidate, as many as the ground truth's processes.
SUGGEST_SETTINGS = ("--processes", "6")


class ManifestError(ValueError):
    """The manifest is not what this tool reads: the message names the file, pair and key."""


@dataclass(frozen=True)
class LineRange:
    file: str
    start: int
    end: int

    def text(self) -> str:
        return f"{self.file}:{self.start}" + (f"-{self.end}" if self.end != self.start else "")


@dataclass(frozen=True)
class Pair:
    family: str
    framework: str
    path: str                              # under examples/affinity/
    planted: tuple[LineRange, ...]         # in naive.py
    replacement: tuple[LineRange, ...]     # in fixed.py
    fixed_setup: tuple[LineRange, ...]     # in fixed.py
    affinity_api: str
    training: bool

    @property
    def name(self) -> str:
        return f"{self.framework}/{self.family}"

    @property
    def directory(self) -> Path:
        return PAIRS_ROOT / self.path

    def script(self, variant: str) -> Path:
        return self.directory / f"{variant}.py"


_PAIR_KEYS = {"family", "framework", "path", "planted", "replacement", "fixed_setup",
              "affinity_api", "training"}


def _ranges(raw: Any, where: str) -> tuple[LineRange, ...]:
    if not isinstance(raw, list):
        raise ManifestError(f"{where}: expected a list of {{file, start, end}}")
    found = []
    for item in raw:
        if not isinstance(item, dict) or set(item) != {"file", "start", "end"}:
            raise ManifestError(f"{where}: each range is {{file, start, end}}, got {item!r}")
        start, end = item["start"], item["end"]
        if not (isinstance(start, int) and isinstance(end, int) and 1 <= start <= end):
            raise ManifestError(f"{where}: start and end are line numbers, start <= end, "
                                f"got {start!r}..{end!r}")
        found.append(LineRange(str(item["file"]), start, end))
    return tuple(found)


def load_manifest(path: Path = MANIFEST) -> tuple[Pair, ...]:
    """The pairs of the manifest, or ManifestError naming the file, the pair and the key."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise ManifestError(f"{path}: cannot read it as YAML: {error}") from None
    if not isinstance(data, dict) or not isinstance(data.get("pairs"), list):
        raise ManifestError(f"{path}: expected a top-level key `pairs` holding a list")
    pairs = []
    for index, item in enumerate(data["pairs"]):
        where = f"{path}: pairs[{index}]"
        if not isinstance(item, dict) or set(item) != _PAIR_KEYS:
            keys = sorted(item) if isinstance(item, dict) else item
            raise ManifestError(f"{where}: expected the keys {sorted(_PAIR_KEYS)}, got {keys}")
        if item["framework"] not in FRAMEWORKS:
            raise ManifestError(f"{where}.framework: one of {FRAMEWORKS}, "
                                f"got {item['framework']!r}")
        if not isinstance(item["training"], bool):
            raise ManifestError(f"{where}.training: true or false")
        pairs.append(Pair(
            family=str(item["family"]), framework=item["framework"], path=str(item["path"]),
            planted=_ranges(item["planted"], f"{where}.planted"),
            replacement=_ranges(item["replacement"], f"{where}.replacement"),
            fixed_setup=_ranges(item["fixed_setup"], f"{where}.fixed_setup"),
            affinity_api=str(item["affinity_api"]), training=item["training"]))
    names = [p.name for p in pairs]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise ManifestError(f"{path}: pairs listed twice: {', '.join(duplicated)}")
    return tuple(pairs)


# --------------------------------------------------------------------------- one process

@dataclass(frozen=True)
class PairSamples:
    """One process's measurement of one pair: the step times in the order they ran."""
    pair: str
    naive_s: tuple[float, ...]
    fixed_s: tuple[float, ...]
    outputs_equal: bool
    max_abs_err: float
    max_rel_err: float
    checksum_naive: tuple[float, float]
    checksum_fixed: tuple[float, float]


def import_script(path: Path, name: str) -> ModuleType:
    """A pair's script as a module (its `if __name__ == "__main__"` does not run)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def checksums_close(a: Sequence[float], b: Sequence[float], rtol: float = RTOL) -> bool:
    """(sum, sum of magnitudes) pairs equal within rtol of the magnitude: a sum alone can
    cancel to near zero (a normalised output sums to ~0), its magnitude cannot."""
    scale = max(abs(a[1]), abs(b[1]), 1e-30)
    return abs(a[0] - b[0]) <= rtol * scale and abs(a[1] - b[1]) <= rtol * scale


def measure_pair(name: str, naive: ModuleType, fixed: ModuleType,
                 seconds: float = SECONDS_PER_PAIR, warmup: int = WARMUP_STEPS,
                 clock: Callable[[], float] = time.perf_counter) -> PairSamples:
    """Check the outputs equal, then alternate the two steps (module doc). Each module has
    make_state(seed), step(state), finish(result) -> numpy and checksum(state, result)."""
    states = {"naive": naive.make_state(SEED), "fixed": fixed.make_state(SEED)}
    modules = {"naive": naive, "fixed": fixed}
    results: dict[str, list] = {"naive": [], "fixed": []}
    for variant, module in modules.items():
        for _ in range(2):
            results[variant].append(module.finish(module.step(states[variant])))
    check = compare_outputs(results["naive"], results["fixed"], RTOL, ATOL)
    sums = {v: tuple(modules[v].checksum(states[v], modules[v].step(states[v])))
            for v in ("naive", "fixed")}
    equal = check.ok and checksums_close(sums["naive"], sums["fixed"])

    def one_step(variant: str) -> float:
        module, state = modules[variant], states[variant]
        start = clock()
        module.finish(module.step(state))
        return clock() - start

    for _ in range(warmup):
        one_step("naive")
        one_step("fixed")
    times: dict[str, list[float]] = {"naive": [], "fixed": []}
    began = clock()
    rounds = 0
    while rounds < MAX_ROUNDS and (rounds < MIN_ROUNDS or clock() - began < seconds):
        order = ("naive", "fixed") if rounds % 2 == 0 else ("fixed", "naive")
        for variant in order:
            times[variant].append(one_step(variant))
        rounds += 1
    return PairSamples(name, tuple(times["naive"]), tuple(times["fixed"]), bool(equal),
                       float(check.max_abs_err), float(check.max_rel_err),
                       sums["naive"], sums["fixed"])


def child_main(framework: str, names: Sequence[str], seconds: float, threads: int) -> None:
    """One fresh process: every named pair of one framework, one JSON line each on stdout."""
    pairs = {p.name: p for p in load_manifest()}
    set_up = True
    for name in names:
        pair = pairs[name]
        stem = f"affinity_{pair.framework}_{pair.family}"
        naive = import_script(pair.script("naive"), f"{stem}_naive")
        fixed = import_script(pair.script("fixed"), f"{stem}_fixed")
        if set_up:     # MindSpore's thread count and device are fixed once its runtime starts
            naive.set_up(threads)
            set_up = False
        samples = measure_pair(name, naive, fixed, seconds)
        print(CHILD_MARK + json.dumps(asdict(samples)), flush=True)


# --------------------------------------------------------------------------- statistics

@dataclass(frozen=True)
class Difference:
    """What the fix saves per step (naive - fixed; positive: the fix is faster)."""
    estimate_s: float
    ci_low_s: float
    ci_high_s: float
    processes: int
    process_differences_s: tuple[float, ...]
    naive_median_s: float
    fixed_median_s: float
    ratio: float                 # naive / fixed: above 1 the fix is faster
    ratio_low: float
    ratio_high: float
    verdict: str
    method: str

    @property
    def share(self) -> float:
        """The saving as a share of the naive step."""
        return self.estimate_s / self.naive_median_s if self.naive_median_s > 0 else 0.0


FASTER, SLOWER, NO_DIFFERENCE = "faster", "slower", "no measurable difference"
DIFFERENCE_METHOD = ("mean over processes of each process's median paired difference "
                     "(naive - fixed, same round); t interval over processes")


def difference(per_process: Sequence[tuple[Sequence[float], Sequence[float]]],
               confidence: float = 0.95) -> Difference:
    """The per-step saving from each process's (naive, fixed) samples in round order (pairs
    of the same round differenced, so a process's drift and mode cancel), with its interval
    over processes (module doc); one process: the sign-test-free min..max of its rounds."""
    per_round = [[a - b for a, b in zip(naive, fixed)] for naive, fixed in per_process]
    per_round = [d for d in per_round if d]
    if not per_round:
        raise ValueError("difference needs at least one process with one round")
    medians = [statistics.median(d) for d in per_round]
    n = len(medians)
    center = statistics.fmean(medians)
    if n > 1:
        half = (student_t_quantile(1.0 - (1.0 - confidence) / 2.0, n - 1)
                * statistics.stdev(medians) / math.sqrt(n))
        low, high, method = center - half, center + half, DIFFERENCE_METHOD
    else:
        low, high = min(per_round[0]), max(per_round[0])
        method = "one process: the median paired difference, min..max of its rounds"
    naive_all = [v for naive, fixed in per_process for v in naive[:len(fixed)]]
    fixed_all = [v for naive, fixed in per_process for v in fixed[:len(naive)]]
    groups = [g for g, (naive, fixed) in enumerate(per_process)
              for _ in range(min(len(naive), len(fixed)))]
    ratio = ratio_estimate(naive_all, fixed_all, confidence,
                           groups=groups if n > 1 else None)
    verdict = FASTER if low > 0 else SLOWER if high < 0 else NO_DIFFERENCE
    naive_medians = [statistics.median(naive) for naive, _ in per_process if naive]
    fixed_medians = [statistics.median(fixed) for _, fixed in per_process if fixed]
    return Difference(center, low, high, n, tuple(medians), statistics.median(naive_medians),
                      statistics.median(fixed_medians), ratio.ratio, ratio.ci_low,
                      ratio.ci_high, verdict, method)


# --------------------------------------------------------------------------- opbench --suggest

@dataclass(frozen=True)
class SuggestCheck:
    """`opbench model --suggest` on a naive script against the pair's ground truth."""
    ran: bool
    note: str
    found_lines: bool = False          # every planted range hit by a suggestion on its lines
    right_api: bool = False            # ... naming the pair's affinity API (or its short name)
    outputs_equal: bool = False        # no suggestion changed the outputs
    claimed_saving_s: float = 0.0      # the savings per step of the suggestions on the
                                       # planted lines (what the fix changes), summed
    within_tolerance: bool = False     # ... within CLAIM_TOLERANCE of the measured difference
    # the call matches the ground truth: a fix measured faster is suggested on its lines with
    # its API; one measured no faster (or slower) is not called faster on them
    agrees: bool = False
    # the suggestions on other lines (a MindSpore route swap of a call both scripts make):
    # not in the naive - fixed difference, so not summed; listed with their sum
    elsewhere: int = 0
    claimed_elsewhere_s: float = 0.0


def _on_naive(row: dict) -> bool:
    return Path(str(row.get("file", ""))).name == "naive.py"


def compare_suggestions(pair: Pair, rows: Sequence[dict], measured: Difference) -> SuggestCheck:
    """Planted ranges found with the right lines and API, outputs equal, claims summed.
    A suggestion 'finds' a planted range when its lines lie inside it and cover its
    first line (a pattern spread over lines may be reported from its first call on)."""
    on_script = [r for r in rows if _on_naive(r)]
    short_api = pair.affinity_api.rsplit(".", 1)[-1]
    found = right_api = True
    called_faster = False
    on_planted: list[dict] = []
    for planted in pair.planted:
        hits = [r for r in on_script
                if planted.start <= int(r.get("start_line", 0)) <= planted.end
                and int(r.get("start_line", 0)) <= int(r.get("end_line", 0)) <= planted.end]
        on_planted += [r for r in hits if not any(r is seen for seen in on_planted)]
        found = found and bool(hits)
        called_faster = called_faster or any(
            float((r.get("saving_s") or {}).get("ci_low", 0.0)) > 0 for r in hits)
        right_api = right_api and any(
            str(r.get("affinity_api", "")) in (pair.affinity_api, short_api)
            or str(r.get("affinity_api", "")).endswith("." + short_api) for r in hits)
    def estimate(row: dict) -> float:
        return float((row.get("saving_s") or {}).get("estimate", 0.0))

    # The fixed script differs from the naive one in the planted lines alone: a suggestion
    # elsewhere is in both steps, so its saving is not in the measured difference (the
    # MindSpore pairs' relu -> ops.relu route swaps claimed -3.7 to +7.7 ms, 2026-11-27).
    claimed = sum(estimate(r) for r in on_planted)
    elsewhere = [r for r in rows if not any(r is p for p in on_planted)]
    # a row not timed because its replacement did not run (None) changes no output
    equal = not any(r.get("outputs_equal") is False for r in rows)
    scale = max(abs(measured.estimate_s), 1e-12)
    within = abs(claimed - measured.estimate_s) <= CLAIM_TOLERANCE * scale
    agrees = (found and right_api) if measured.verdict == FASTER else not called_faster
    return SuggestCheck(True, f"{len(rows)} suggestion(s)", found, found and right_api, equal,
                        claimed, within_tolerance=within, agrees=agrees,
                        elsewhere=len(elsewhere),
                        claimed_elsewhere_s=sum(estimate(r) for r in elsewhere))


def run_suggest(pair: Pair, out_dir: Path, lock: Path | None) -> tuple[list[dict] | None, str]:
    """`opbench suggest --json` on the pair's naive script: its rows, or None and why."""
    done = subprocess.run([sys.executable, "-m", "opbench.cli", "suggest", "--help"],
                          cwd=REPO, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None, "`opbench suggest --help` failed here: not compared"
    stem = pair.name.replace("/", "_")
    json_path = out_dir / f"{stem}.suggest.json"
    command = [sys.executable, "-m", "opbench.cli", "suggest", *SUGGEST_SETTINGS,
               "--json", str(json_path), "-o", str(out_dir / f"{stem}.model"), "-q",
               "--", sys.executable, str(pair.script("naive")), "--steps", "30"]
    # The script's interpreter (this one) must import this checkout's opbench too: a venv
    # with another build installed stops the replay ("has opbench 0.1.0 with other worker
    # messages than this one", seen here when /work/main moved ahead of a worktree).
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    with held(lock):
        done = subprocess.run(command, cwd=REPO,
                              env={**os.environ, "GLOG_v": "3", "PYTHONPATH": path},
                              capture_output=True, text=True, timeout=SUGGEST_TIMEOUT_S,
                              check=False)
    (out_dir / f"{stem}.suggest.stderr").write_text(done.stderr)
    if not json_path.exists():
        return None, f"opbench model exited {done.returncode} without a record (stderr saved)"
    record = json.loads(json_path.read_text())
    rows = record.get("suggestions")            # beside the model record, or inside it
    if rows is None and isinstance(record.get("model"), dict):
        rows = record["model"].get("suggestions")
    if rows is None:
        return None, "the record holds no `suggestions`"
    return list(rows), f"exit {done.returncode}"


# --------------------------------------------------------------------------- the parent

@contextlib.contextmanager
def held(lock: Path | None):
    """An exclusive flock on `lock` for one process's run (none: nothing)."""
    if lock is None:
        yield
        return
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def run_process(framework: str, names: Sequence[str], seconds: float, threads: int,
                lock: Path | None) -> list[PairSamples]:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", framework,
               "--seconds", str(seconds), "--threads", str(threads), *names]
    with held(lock):
        done = subprocess.run(command, cwd=REPO, env={**os.environ, "GLOG_v": "3"},
                              capture_output=True, text=True, timeout=CHILD_TIMEOUT_S,
                              check=False)
    if done.returncode != 0:
        raise SystemExit(f"a {framework} measuring process exited {done.returncode}:\n"
                         f"{done.stderr[-3000:]}")
    found = []
    for line in done.stdout.splitlines():
        if line.startswith(CHILD_MARK):
            item = json.loads(line[len(CHILD_MARK):])
            item["naive_s"], item["fixed_s"] = tuple(item["naive_s"]), tuple(item["fixed_s"])
            item["checksum_naive"] = tuple(item["checksum_naive"])
            item["checksum_fixed"] = tuple(item["checksum_fixed"])
            found.append(PairSamples(**item))
    return found


def rotated(names: Sequence[str], k: int) -> list[str]:
    """The pairs in the k-th rotation: each pair runs early in some processes, late in others."""
    k %= max(len(names), 1)
    return list(names[k:]) + list(names[:k])


def bracketed(pair: Pair, args: argparse.Namespace
              ) -> tuple[list[PairSamples], tuple[list[dict] | None, str]]:
    """A pair's ground truth measured around its `opbench suggest` run: half its processes
    just before, the rest just after, so the machine's drift between them hits the claim and
    the truth alike. Measured all first, the truth read 0.090 ms [0.089, 0.092] a step for
    torch/tensor_creation_in_loop where the claim minutes later read 0.148 [0.066, 0.230];
    three brackets of 3 + 3 processes on 2026-12-02 read 0.116/0.121, 0.098/0.125 and
    0.108/0.131 (truth/claim), where one truth run alone read 0.115."""
    got: list[PairSamples] = []
    before = (args.processes + 1) // 2
    suggestion: tuple[list[dict] | None, str] | None = None
    for k in range(args.processes):
        if k == before:
            suggestion = run_suggest(pair, args.out, args.lock)
        start = time.perf_counter()
        got.extend(run_process(pair.framework, [pair.name], args.seconds, args.threads,
                               args.lock))
        print(f"{pair.name} process {k + 1}/{args.processes}: "
              f"{time.perf_counter() - start:.0f} s", file=sys.stderr)
    if suggestion is None:          # one process: the suggestion after it
        suggestion = run_suggest(pair, args.out, args.lock)
    return got, suggestion


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f}"


def markdown(rows: Sequence[dict], command: str) -> str:
    lines = [f"Measured with `{command}`:", "",
             "| pair | planted (naive.py) | naive step ms | fixed step ms | saving ms/step "
             "(95% CI) | share | naive/fixed (95% CI) | outputs equal | processes | "
             "the fix here |",
             "|---|---|---:|---:|---:|---:|---:|---|---:|---|"]
    for row in rows:
        d = row["difference"]
        lines.append(
            f"| `{row['pair']}` | {', '.join(row['planted'])} | {_ms(d['naive_median_s'])} | "
            f"{_ms(d['fixed_median_s'])} | {_ms(d['estimate_s'])} "
            f"[{_ms(d['ci_low_s'])}, {_ms(d['ci_high_s'])}] | "
            f"{d['estimate_s'] / d['naive_median_s']:+.1%} | {d['ratio']:.3f} "
            f"[{d['ratio_low']:.3f}, {d['ratio_high']:.3f}] | "
            f"{'yes' if row['outputs_equal'] else 'NO'} | {d['processes']} | {d['verdict']} |")
    suggest = [r for r in rows if r.get("suggest")]
    if suggest:
        lines += ["", "| pair | `opbench suggest` | planted lines found | right API | "
                  "outputs equal | claimed ms/step (planted lines) | within 30% of measured "
                  "| agrees with the ground truth | elsewhere: rows, ms/step (not summed) |",
                  "|---|---|---|---|---|---:|---|---|---|"]
        for row in suggest:
            s = row["suggest"]
            if not s["ran"]:
                lines.append(f"| `{row['pair']}` | {s['note']} | - | - | - | - | - | - | - |")
                continue
            yes = {True: "yes", False: "no"}
            lines.append(f"| `{row['pair']}` | {s['note']} | {yes[s['found_lines']]} | "
                         f"{yes[s['right_api']]} | {yes[s['outputs_equal']]} | "
                         f"{_ms(s['claimed_saving_s'])} | {yes[s['within_tolerance']]} | "
                         f"{yes[s['agrees']]} | {s.get('elsewhere', 0)}, "
                         f"{_ms(s.get('claimed_elsewhere_s', 0.0))} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pairs", nargs="*",
                        help="pairs to measure, FRAMEWORK/FAMILY (default: all)")
    parser.add_argument("--framework", choices=(*FRAMEWORKS, "all"), default="all")
    parser.add_argument("--processes", type=int, default=DEFAULT_PROCESSES,
                        help=f"fresh processes per framework (default {DEFAULT_PROCESSES})")
    parser.add_argument("--seconds", type=float, default=SECONDS_PER_PAIR,
                        help=f"alternated rounds per pair and process (default "
                             f"{SECONDS_PER_PAIR} s)")
    parser.add_argument("--threads", type=int, default=1, help="kernel threads (default 1)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/opbench-affinity-pairs"))
    parser.add_argument("--lock", type=Path, metavar="FILE",
                        help="hold this flock around each process's run (not between them)")
    parser.add_argument("--suggest", action="store_true",
                        help="also run `opbench suggest --json` on each naive script "
                             "(when this opbench has it) and compare")
    parser.add_argument("--table-only", action="store_true",
                        help="measure nothing: the Markdown of the JSON saved in --out")
    parser.add_argument("--child", choices=FRAMEWORKS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child_main(args.child, args.pairs, args.seconds, args.threads)
        return
    results_path = args.out / "affinity_pairs.json"
    if args.table_only:
        saved = json.loads(results_path.read_text())
        print(markdown(saved["pairs"], saved["command"]), end="")
        return
    if args.processes < 1 or args.seconds <= 0 or args.threads < 1:
        parser.error("--processes and --threads take a whole number >= 1, --seconds a "
                     "positive number")
    try:
        pairs = load_manifest()
    except ManifestError as error:
        raise SystemExit(f"affinity_pairs: {error}") from None
    known = {p.name for p in pairs}
    unknown = sorted(set(args.pairs) - known)
    if unknown:
        parser.error(f"not in {MANIFEST.relative_to(REPO)}: {', '.join(unknown)} "
                     f"(known: {', '.join(sorted(known))})")
    chosen = [p for p in pairs if (not args.pairs or p.name in args.pairs)
              and args.framework in ("all", p.framework)]
    args.out.mkdir(parents=True, exist_ok=True)
    command = "python tools/affinity_pairs.py " + " ".join(argv if argv is not None
                                                           else sys.argv[1:])
    samples: dict[str, list[PairSamples]] = {p.name: [] for p in chosen}
    suggested: dict[str, tuple[list[dict] | None, str]] = {}
    if args.suggest:
        for pair in chosen:
            samples[pair.name], suggested[pair.name] = bracketed(pair, args)
    else:
        for k in range(args.processes):
            for framework in FRAMEWORKS:
                names = [p.name for p in chosen if p.framework == framework]
                if not names:
                    continue
                start = time.perf_counter()
                for found in run_process(framework, rotated(names, k), args.seconds,
                                         args.threads, args.lock):
                    samples[found.pair].append(found)
                print(f"{framework} process {k + 1}/{args.processes}: "
                      f"{time.perf_counter() - start:.0f} s", file=sys.stderr)
    rows = []
    for pair in chosen:
        got = samples[pair.name]
        measured = difference([(s.naive_s, s.fixed_s) for s in got])
        row = {"pair": pair.name, "family": pair.family, "framework": pair.framework,
               "affinity_api": pair.affinity_api,
               "planted": [r.text() for r in pair.planted],
               "outputs_equal": all(s.outputs_equal for s in got),
               "max_abs_err": max(s.max_abs_err for s in got),
               "max_rel_err": max(s.max_rel_err for s in got),
               "rounds_per_process": [len(s.naive_s) for s in got],
               "difference": {**asdict(measured), "share": measured.share}}
        if args.suggest:
            rows_found, note = suggested[pair.name]
            check = (SuggestCheck(False, note) if rows_found is None
                     else compare_suggestions(pair, rows_found, measured))
            row["suggest"] = asdict(check)
            print(f"{pair.name}: --suggest {check.note}", file=sys.stderr)
        rows.append(row)
    record = {"format": FORMAT, "command": command, "rtol": RTOL, "atol": ATOL,
              "pairs": rows}
    results_path.write_text(json.dumps(record, indent=1) + "\n")
    table = markdown(rows, command)
    (args.out / "affinity_pairs.md").write_text(table)
    print(table, end="")


if __name__ == "__main__":
    main()

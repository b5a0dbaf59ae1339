"""Where a replayed torch step spends its time beyond its calls' windows: the replay's own
per-call cost, for the loop (Replayer._run over the plan's getters) and the step written
out as Python (opbench/model/replay/compiled_step.py), alternated in one process.

    python tools/replay_overhead.py PROGRAM.json [--rounds 30] [--samples 20] [--source]

PROGRAM.json is a captured program (`opbench model ... --out DIR` leaves DIR/program.json).
Each round times `--samples` steps with the loop, the same with the written-out step, and
one per-call pass (each call synced alone, its window timed); per path it prints the median
step, the median sum of the windows and (step - windows) / calls run: what a call costs
outside its window. The per-call pass is the same for both paths (time_calls), so the
difference between the two figures is what the written-out step saves a call. One thread,
torch's CPU: run it under the machine's CPU lock, alone."""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:        # run as `python tools/replay_overhead.py`: this
    sys.path.insert(0, str(REPO))    # checkout's opbench, not an installed one


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("program", type=Path)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--samples", type=int, default=20, help="steps per round and path")
    parser.add_argument("--source", action="store_true",
                        help="print the written-out step's Python first")
    args = parser.parse_args(argv)

    from opbench.frameworks import get_adapter
    from opbench.frameworks.apimap import load_mapping
    from opbench.model.program import Program
    from opbench.model.replay.executor import Replayer
    from opbench.model.steady import find_region, step_program

    program = Program.from_json(json.loads(args.program.read_text()))
    if program.framework != "torch":
        print(f"{args.program}: a {program.framework} program; this measures torch's replay",
              file=sys.stderr)
        return 2
    step = step_program(program, find_region(program))
    adapter = get_adapter("torch")
    adapter.setup("cpu", 1)
    adapter.block_launches()
    replayer = Replayer(step, "torch", adapter, load_mapping())
    replayer.probe(fingerprints=False)
    compiled = replayer._compiled
    if compiled is None:
        print("this step is not written out (the loop replays it)", file=sys.stderr)
        return 2
    if args.source:
        print(compiled.source)
    replayer.warm_up(20, 0.5)
    steps: dict[str, list[float]] = {"loop": [], "written out": []}
    windows = []
    for _ in range(args.rounds):
        for name in ("loop", "written out", "written out", "loop"):
            replayer._compiled = compiled if name == "written out" else None
            steps[name].append(statistics.median(replayer.time_step(args.samples)))
        replayer._compiled = compiled
        per_call = replayer.time_calls(args.samples)
        windows.append(sum(statistics.median(c) for c in per_call))
    calls = sum(1 for e in replayer._plan if e is not None)
    window = statistics.median(windows)
    print(f"{args.program}: {calls} calls run a step, {args.rounds} rounds of "
          f"{args.samples} steps, medians; sum of the calls' windows {window * 1e6:.1f} us")
    for name, times in steps.items():
        step_s = statistics.median(times)
        print(f"  {name:12s} step {step_s * 1e6:8.1f} us, outside the windows "
              f"{(step_s - window) * 1e6 / calls:5.2f} us a call")
    return 0


if __name__ == "__main__":
    sys.exit(main())

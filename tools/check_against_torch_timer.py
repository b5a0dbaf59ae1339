"""Cross-check opbench's torch medians against torch.utils.benchmark.Timer.blocked_autorange
on the same inputs and thread count (a sanity check of the measurement protocol).

    python tools/check_against_torch_timer.py --results out/run.json     # a run's medians
    python tools/check_against_torch_timer.py cases/ -k reshape           # torch alone here

With --results, the medians are those an `opbench run` measured with MindSpore in the same
processes (isolation is what is being checked); this process imports only torch, so the
Timer's figure is torch undisturbed. Without it, opbench's protocol times torch alone here.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics

os.environ.setdefault("GLOG_v", "3")

# Below this the comparison is not quoted: both tools are at the mercy of per-call
# dispatch noise of a few hundred nanoseconds.
MIN_QUOTED_S = 10e-6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("paths", nargs="*", default=["cases"])
    parser.add_argument("-k", dest="keyword", default=None)
    parser.add_argument("--op", action="append", default=None)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--results", default=None, help="an opbench results JSON")
    parser.add_argument("--min-run-time", type=float, default=0.5)
    args = parser.parse_args()

    import torch
    import torch.utils.benchmark as tb

    from opbench.cases import expand, load_cases, select
    from opbench.frameworks import get_adapter
    from opbench.inputs import generate_inputs
    from opbench.measure import SERIAL, MeasureSettings, Side, measure
    from opbench.runner import default_threads, substitute_refs

    medians: dict[str, float] = {}
    threads = args.threads
    paths = args.paths
    if args.results:
        record = json.loads(open(args.results, encoding="utf-8").read())
        threads = threads or record["config"]["threads"]
        for inst in record["instances"]:
            m = (inst.get("measurements") or {}).get("serial")
            if m:
                medians[inst["id"]] = m["summary"]["torch"]["median_s"]
        paths = sorted({inst["file"] for inst in record["instances"]})
    threads = threads or default_threads()
    adapter = get_adapter("torch")
    adapter.setup("cpu", threads)
    instances = select([i for c in load_cases(paths) for i in expand(c)],
                       ops=args.op, keyword=args.keyword)
    if medians:
        instances = [i for i in instances if i.id in medians]
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}")
    print(f"{'instance':50s} {'opbench':>11s} {'Timer':>11s} {'opbench/Timer':>14s}")
    quoted = []
    for inst in instances:
        call = inst.calls.get("torch")
        if call is None:
            continue
        arrays = generate_inputs(inst)
        specs = {s.name: s for s in inst.inputs}
        tensors = {n: adapter.from_numpy(a, specs[n].dtype) for n, a in arrays.items()}
        fn = adapter.resolve(call.api)
        a = substitute_refs(tuple(call.args), tensors)
        kw = substitute_refs(dict(call.kwargs), tensors)
        if inst.id in medians:
            ours = medians[inst.id]
        else:
            m = measure([Side("torch", lambda: fn(*a, **kw), adapter.sync)],
                        MeasureSettings(mode=SERIAL))
            ours = statistics.median(m.per_call_s["torch"])
        timer = tb.Timer("fn(*a, **kw)", globals={"fn": fn, "a": a, "kw": kw},
                         num_threads=threads)
        theirs = timer.blocked_autorange(min_run_time=args.min_run_time).median
        print(f"{inst.id[:50]:50s} {ours * 1e6:8.2f} us {theirs * 1e6:8.2f} us "
              f"{ours / theirs:14.3f}")
        if theirs >= MIN_QUOTED_S:
            quoted.append(ours / theirs)
    if quoted:
        dev = sorted(abs(q - 1) for q in quoted)
        print(f"{len(quoted)} instances of >= {MIN_QUOTED_S * 1e6:g} us: opbench/Timer median "
              f"{statistics.median(quoted):.3f}, |deviation| median {statistics.median(dev):.3f},"
              f" max {dev[-1]:.3f}; within 5%: {sum(d <= 0.05 for d in dev)} of {len(dev)}")


if __name__ == "__main__":
    main()

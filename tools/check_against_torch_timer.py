"""Cross-check opbench's torch medians against torch.utils.benchmark.Timer.blocked_autorange
on the same inputs and thread count (a sanity check of the measurement protocol, quoted in
the closing note of the core issue).

    python tools/check_against_torch_timer.py cases/ -k reshape
"""
from __future__ import annotations

import argparse
import os

os.environ.setdefault("GLOG_v", "3")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("paths", nargs="+")
    parser.add_argument("-k", dest="keyword", default=None)
    parser.add_argument("--op", action="append", default=None)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()

    import torch
    import torch.utils.benchmark as tb

    from opbench.cases import expand, load_cases, select
    from opbench.inputs import generate_inputs
    from opbench.measure import SERIAL, MeasureSettings, Side, measure
    from opbench.frameworks import get_adapter
    from opbench.runner import substitute_refs

    adapter = get_adapter("torch")
    adapter.setup("cpu", args.threads)
    instances = select([i for c in load_cases(args.paths) for i in expand(c)],
                       ops=args.op, keyword=args.keyword)
    print(f"threads {torch.get_num_threads()}")
    print(f"{'instance':45s} {'opbench median':>15s} {'Timer median':>13s} {'opbench/Timer':>14s}")
    for inst in instances:
        call = inst.calls.get("torch")
        if call is None:
            continue
        arrays = generate_inputs(inst)
        specs = {s.name: s for s in inst.inputs}
        tensors = {n: adapter.from_numpy(a, specs[n].dtype) for n, a in arrays.items()}
        fn = adapter.resolve(call.api)
        a, kw = substitute_refs(tuple(call.args), tensors), substitute_refs(dict(call.kwargs), tensors)
        m = measure([Side("torch", lambda: fn(*a, **kw), adapter.sync)],
                    MeasureSettings(mode=SERIAL))
        samples = sorted(m.per_call_s["torch"])
        ours = samples[len(samples) // 2]
        timer = tb.Timer("fn(*a, **kw)", globals={"fn": fn, "a": a, "kw": kw},
                         num_threads=args.threads)
        theirs = timer.blocked_autorange(min_run_time=0.5).median
        print(f"{inst.id:45s} {ours * 1e6:12.2f} us {theirs * 1e6:10.2f} us {ours / theirs:14.3f}")


if __name__ == "__main__":
    main()

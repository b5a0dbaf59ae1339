"""Cross-check opbench's torch medians against torch.utils.benchmark.Timer.blocked_autorange
on the same inputs and thread count (a sanity check of the measurement protocol).

    python tools/check_against_torch_timer.py cases/ --op add -k float32          # interleaved
    python tools/check_against_torch_timer.py --results out/run.json              # a run's medians
    python tools/check_against_torch_timer.py cases/ -k reshape --alone           # torch alone
    python tools/check_against_torch_timer.py cases/ --op add -k float32 --sides  # side path

Default (interleaved): one process set up as an opbench worker is (both frameworks, the
run's default threads and launches). For each instance, ROUNDS times: opbench measures the
instance (torch against MindSpore, quiesce and all), then - after the same idle-wait - the
Timer times the same torch call on the same inputs. opbench/Timer is taken per round and
the median over rounds is quoted, so the host's speed, which moves 1.7x within seconds
here, hits both figures of a round alike instead of landing between them.

--results: the medians an `opbench run` measured, against the Timer in this torch-only
process minutes later (exposed to the host's drift: a first look, not a verdict).
--alone: opbench's protocol and the Timer on torch alone, in this process.
--sides: interleaved, through the side-process path (runner/workers.py RemoteSession): this
process imports only torch and serves the torch side (side_server.SideServer, answered
here instead of over a socket), MindSpore runs in a side worker process of its own; the
protocol is the parent's, each sample timed whole in its side's process, and the Timer
times torch in the same process as opbench's torch samples.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

os.environ.setdefault("GLOG_v", "3")

# Below this the comparison is not quoted: both tools are at the mercy of per-call
# dispatch noise of a few hundred nanoseconds.
MIN_QUOTED_S = 10e-6


def _torch_call(adapter, inst):
    """The instance's torch function and arguments on fresh tensors of its inputs."""
    from opbench.runner.inputs import generate_inputs
    from opbench.runner.session import substitute_refs

    call = inst.calls["torch"]
    arrays = generate_inputs(inst)
    specs = {s.name: s for s in inst.inputs}
    tensors = {n: adapter.from_numpy(a, specs[n].dtype) for n, a in arrays.items()}
    return (adapter.resolve(call.api), substitute_refs(tuple(call.args), tensors),
            substitute_refs(dict(call.kwargs), tensors))


def _timer_median(tb, fn, a, kw, threads: int, min_run_time: float) -> float:
    timer = tb.Timer("fn(*a, **kw)", globals={"fn": fn, "a": a, "kw": kw},
                     num_threads=threads)
    return timer.blocked_autorange(min_run_time=min_run_time).median


def _summary(quoted: list[float]) -> str:
    dev = sorted(abs(q - 1) for q in quoted)
    return (f"{len(quoted)} instances of >= {MIN_QUOTED_S * 1e6:g} us: opbench/Timer median "
            f"{statistics.median(quoted):.3f}, |deviation| median {statistics.median(dev):.3f}, "
            f"max {dev[-1]:.3f}; within 5%: {sum(d <= 0.05 for d in dev)} of {len(dev)}")


class _ThisProcess:
    """A side served in this process: the requests a side worker answers over its socket
    (worker_main.serve), answered by a SideServer here."""

    def __init__(self, server, side: str):
        self.server, self.side, self.index = server, side, 1
        self.pid = os.getpid()

    def call(self, request):
        return self.server.answer(request)

    def close(self) -> None:
        self.server.session.close()


def _both_frameworks_session(config):
    """This process set up like an opbench worker: both frameworks in one Session."""
    from opbench.runner.session import Session

    session = Session(config)
    session.open()
    return session, session.adapters["torch"], [session.close]


def _side_process_session(config):
    """The side path: torch alone in this process, MindSpore in a worker process of its own,
    a RemoteSession running the protocol through both."""
    from opbench.runner import ipc
    from opbench.runner.session import Session
    from opbench.runner.side_server import SideServer
    from opbench.runner.workers import RemoteSession, spawn_worker

    other = spawn_worker(1, "mindspore")
    other.send(ipc.OpenSide(config, "mindspore", 1))      # its import runs while torch's does
    torch_session = Session(config, sides=("torch",))
    torch_session.open()
    here = _ThisProcess(SideServer(torch_session, "torch"), "torch")
    other.receive()
    session = RemoteSession(config, {"torch": here, "mindspore": other}, 1,
                            watch_pids=[other.pid])
    session.open()
    if "mindspore" in sys.modules:      # the comparison would be no comparison
        raise RuntimeError("the torch side's process has imported MindSpore")
    return session, torch_session.adapters["torch"], [other.close, here.close]


def interleaved(instances, args) -> list[float]:
    """opbench and the Timer in turn, in one process set up like an opbench worker (or, with
    --sides, the torch side's process of the side path)."""
    import torch.utils.benchmark as tb

    from opbench.cli.common import build_config

    config = build_config(timing=True, processes=1, threads=args.threads, no_backward=True)
    opened = (_side_process_session if args.sides else _both_frameworks_session)(config)
    session, torch_adapter, closers = opened
    try:
        return _interleaved_rounds(instances, args, config, session, torch_adapter, tb)
    finally:
        for close in closers:
            close()


def _interleaved_rounds(instances, args, config, session, torch_adapter, tb) -> list[float]:
    where = ("torch alone in this process, MindSpore in a side process" if args.sides
             else "one process, both frameworks")
    print(f"{where}: threads {config.threads}, launch {config.launch}, quiesce "
          f"{config.quiesce}; {args.rounds} rounds of (opbench, Timer) per instance")
    print(f"{'instance':50s} {'opbench':>11s} {'Timer':>11s} {'opbench/Timer':>14s} "
          f"{'per-round range':>17s}")
    quoted = []
    for inst in instances:
        fn, a, kw = _torch_call(torch_adapter, inst)
        ours, theirs, ratios = [], [], []
        for _ in range(args.rounds):
            record = session.run_instance(inst)
            m = (record.get("measurements") or {}).get("serial")
            if m is None:
                break
            if session.quiescer is not None:   # the Timer gets the wait opbench's sample had
                session.quiescer.settle()
            t = _timer_median(tb, fn, a, kw, config.threads, args.min_run_time)
            # the raw record (the runner judges nothing): the median of torch's per-call
            # samples, what the judged record's summary.torch.median_s says
            ours.append(statistics.median(m["samples_s"]["torch"]))
            theirs.append(t)
            ratios.append(ours[-1] / t)
        if not ratios:
            print(f"{inst.id[:50]:50s} not measured ({record.get('verdict')}: "
                  f"{record.get('error')})")
            continue
        q = statistics.median(ratios)
        print(f"{inst.id[:50]:50s} {statistics.median(ours) * 1e6:8.2f} us "
              f"{statistics.median(theirs) * 1e6:8.2f} us {q:14.3f} "
              f"{min(ratios):8.3f}-{max(ratios):.3f}")
        if statistics.median(theirs) >= MIN_QUOTED_S:
            quoted.append(q)
    return quoted


def separate(instances, medians: dict[str, float], args) -> list[float]:
    """--results or --alone: the Timer in this torch-only process."""
    import torch
    import torch.utils.benchmark as tb

    from opbench.config import SERIAL, MeasureSettings, default_threads
    from opbench.frameworks import get_adapter
    from opbench.runner.measure import Side, measure

    threads = args.threads or default_threads()
    adapter = get_adapter("torch")
    adapter.setup("cpu", threads)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}")
    print(f"{'instance':50s} {'opbench':>11s} {'Timer':>11s} {'opbench/Timer':>14s}")
    quoted = []
    for inst in instances:
        fn, a, kw = _torch_call(adapter, inst)
        if inst.id in medians:
            ours = medians[inst.id]
        else:
            m = measure([Side("torch", lambda: fn(*a, **kw), adapter.sync)],
                        MeasureSettings(mode=SERIAL))
            ours = statistics.median(m.per_call_s["torch"])
        theirs = _timer_median(tb, fn, a, kw, threads, args.min_run_time)
        print(f"{inst.id[:50]:50s} {ours * 1e6:8.2f} us {theirs * 1e6:8.2f} us "
              f"{ours / theirs:14.3f}")
        if theirs >= MIN_QUOTED_S:
            quoted.append(ours / theirs)
    return quoted


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("paths", nargs="*", default=["cases"])
    parser.add_argument("-k", dest="keyword", default=None)
    parser.add_argument("--op", action="append", default=None)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--results", default=None, help="an opbench results JSON")
    parser.add_argument("--alone", action="store_true",
                        help="opbench's protocol on torch alone, in this process")
    parser.add_argument("--sides", action="store_true",
                        help="interleaved through the side path: torch alone in this "
                             "process, MindSpore in a side process")
    parser.add_argument("--rounds", type=int, default=5,
                        help="interleaved (opbench, Timer) rounds per instance")
    parser.add_argument("--min-run-time", type=float, default=0.5)
    args = parser.parse_args()

    from opbench.cases.case_files import expand, load_cases, select

    medians: dict[str, float] = {}
    paths = args.paths
    if args.results:
        record = json.loads(open(args.results, encoding="utf-8").read())
        args.threads = args.threads or record["config"]["threads"]
        for inst in record["instances"]:
            m = (inst.get("measurements") or {}).get("serial")
            if m:
                medians[inst["id"]] = m["summary"]["torch"]["median_s"]
        paths = sorted({inst["file"] for inst in record["instances"]})
    instances = select([i for c in load_cases(paths) for i in expand(c)],
                       ops=args.op, keyword=args.keyword)
    instances = [i for i in instances if "torch" in i.calls]
    if medians:
        instances = [i for i in instances if i.id in medians]
    quoted = (separate(instances, medians, args) if args.results or args.alone
              else interleaved(instances, args))
    if quoted:
        print(_summary(quoted))


if __name__ == "__main__":
    main()

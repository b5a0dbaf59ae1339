"""What one framework function costs inside a script against back to back, with no opbench
tracer: the measurement behind the torch self-check's residual (docs/model.md, "The
self-check's base"). A benchmark, not a test: run it alone on a quiet machine.

    python tools/context_effect.py --api torch.nn.functional.linear tests/conformance/hf_bert_inference.py
    python tools/context_effect.py --api torch.nn.functional.gelu --api torch.nn.functional.layer_norm SCRIPT

Each named function is replaced, for the script's run, by a wrapper that only reads the clock
around the call (two `perf_counter_ns` reads and a list append) and keeps the arguments of its
last call with each distinct argument shape. After the script ends, each kept call is run
`--repeats` times back to back with those arguments, timed the same way. Printed per function
and shape: calls in the script, the median in the script (its first `--skip` calls left out as
warm-up), the median back to back, and their ratio. `opbench model` replays a step's calls back
to back, so a ratio above 1 here is what its torch self-check reads below 0 without any fault
of the tracer or the replay.
"""
from __future__ import annotations

import argparse
import importlib
import runpy
import statistics
import sys
import time
from collections import defaultdict
from typing import Any, Callable


def _resolve(dotted: str) -> tuple[Any, str, Callable]:
    module_name, _, attr = dotted.rpartition(".")
    owner = importlib.import_module(module_name)
    return owner, attr, getattr(owner, attr)


def _shape_key(args: tuple, kwargs: dict) -> str:
    def one(value: Any) -> str:
        shape = getattr(value, "shape", None)
        if shape is not None:
            return f"{str(getattr(value, 'dtype', '')).replace('torch.', '')}{list(shape)}"
        return type(value).__name__
    return ", ".join([one(a) for a in args] + [f"{k}={one(v)}" for k, v in kwargs.items()])


def _instrument(dotted: str, samples: dict, last_args: dict) -> Callable[[], None]:
    owner, attr, original = _resolve(dotted)
    clock = time.perf_counter_ns

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = clock()
        result = original(*args, **kwargs)
        elapsed = clock() - start
        key = (dotted, _shape_key(args, kwargs))
        samples[key].append(elapsed)
        last_args[key] = (original, args, kwargs)
        return result

    setattr(owner, attr, timed)
    return lambda: setattr(owner, attr, original)


def _back_to_back(original: Callable, args: tuple, kwargs: dict, repeats: int) -> list[int]:
    clock = time.perf_counter_ns
    out = []
    for _ in range(repeats):
        start = clock()
        original(*args, **kwargs)
        out.append(clock() - start)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("script")
    parser.add_argument("--api", action="append", required=True,
                        help="a function as module.attr (torch.nn.functional.linear)")
    parser.add_argument("--skip", type=int, default=10, help="warm-up calls left out")
    parser.add_argument("--repeats", type=int, default=300)
    options = parser.parse_args(argv)
    samples: dict = defaultdict(list)
    last_args: dict = {}
    restores = [_instrument(api, samples, last_args) for api in options.api]
    sys.argv = [options.script]
    try:
        runpy.run_path(options.script, run_name="__main__")
    finally:
        for restore in restores:
            restore()
    import torch
    print(f"{'function':36s} {'arguments':44s} {'calls':>5s} {'in script us':>12s} "
          f"{'back to back us':>15s} {'ratio':>6s}")
    with torch.no_grad():
        for key, times in sorted(samples.items()):
            kept = times[options.skip:]
            if not kept:
                print(f"{key[0].rsplit('.', 1)[-1]:36s} {key[1][:44]:44s} {len(times):5d} "
                      f"  (all within the first {options.skip} calls: --skip fewer)")
                continue
            original, args, kwargs = last_args[key]
            alone = _back_to_back(original, args, kwargs, options.repeats)[options.skip:]
            in_script = statistics.median(kept) / 1e3
            b2b = statistics.median(alone) / 1e3
            print(f"{key[0].rsplit('.', 1)[-1]:36s} {key[1][:44]:44s} {len(times):5d} "
                  f"{in_script:12.2f} {b2b:15.2f} {in_script / b2b:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

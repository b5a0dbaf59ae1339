"""Synthetic results records with a known fixed cost and throughput per side, for the gap
map's tests: times are drawn like a real run's (rounds in several processes, each process
with its own speed offset, 5% SD as measured between fresh processes here) so the fit
meets the noise it was built for. The records are the results file's dicts, complete enough
to read as a RunRecord (results/records.py): a test may edit them first."""
from __future__ import annotations

import numpy as np

# The sizes of a typical library sweep (add at 16x64, 1x128x768, 8x128x4096, float32):
# inputs + output, in bytes.
SWEEP_BYTES = (3 * 16 * 64 * 4, 3 * 128 * 768 * 4, 3 * 8 * 128 * 4096 * 4)


def side_rounds(rng, fixed_s, throughput, work, processes=3, per_process=5,
                process_sd=0.05, round_sd=0.05):
    """Per-round times per call: the model's time, a per-process offset, round noise."""
    true = fixed_s + work / throughput
    offsets = rng.normal(0.0, process_sd, processes)
    return [true * np.exp(offsets[p] + rng.normal(0.0, round_sd))
            for p in range(processes) for _ in range(per_process)]


def summary(samples):
    a = np.asarray(samples)
    med = float(np.median(a))
    return {"n": len(a), "median_s": med, "mean_s": float(a.mean()), "min_s": float(a.min()),
            "max_s": float(a.max()), "mad_s": float(np.median(np.abs(a - med))),
            "iqr_s": float(np.subtract(*np.percentile(a, [75, 25]))), "cv": 0.0}


def instance(case, shape_elems, times, ratio=None, verdict="SLOW", op=None, dtype="float32",
             key="serial", notes=()):
    """One instance of an elementwise binary op x + y on `shape_elems` elements."""
    ref, tgt = times
    r = ratio if ratio is not None else ref["median_s"] / tgt["median_s"]
    rounds = ref["n"]
    return {
        "id": f"{case}[n={shape_elems},dtype={dtype}]", "case": case, "op": op or case,
        "file": "cases/sweep.yaml", "apis": {"torch": f"torch.{op or case}",
                                             "mindspore": f"mindspore.{op or case}"},
        "params": {"n": shape_elems, "dtype": dtype},
        "inputs": [{"name": "x", "shape": [shape_elems], "dtype": dtype, "dist": "normal"},
                   {"name": "y", "shape": [shape_elems], "dtype": dtype, "dist": "normal"}],
        "output_shapes": [shape_elems], "verdict": verdict,
        "measurements": {key: {"mode": key.split("+")[0], "loops": 1, "rounds": rounds,
                               "samples_s": {"torch": [ref["median_s"]] * rounds,
                                             "mindspore": [tgt["median_s"]] * rounds},
                               "summary": {"torch": ref, "mindspore": tgt},
                               "ratio": r, "ci_low": r * 0.9, "ci_high": r * 1.1,
                               "threshold": 0.8, "verdict": verdict, "notes": list(notes)}},
    }


def record(instances, overhead=None, launch="blocking", device="cpu", modes=("serial",)):
    return {"schema_version": 1, "created_utc": "2026-01-01T00:00:00+00:00",
            "complete": True, "environment": {"cpu_model": "test cpu", "cpu_count": 2,
                                               "opbench": "0.1.0", "python": "3.11",
                                               "numpy": "1.26", "machine_id": "m1"},
            "config": {"reference": "torch", "target": "mindspore", "device": device,
                       "threads": 1, "modes": list(modes), "threshold": 0.8,
                       "launch": launch, "processes": 3},
            "frameworks": {"torch": {"version": "2.13.0", "device": device, "threads": 1},
                           "mindspore": {"version": "2.10.0", "device": device,
                                         "threads": 1}},
            "overhead": overhead or {}, "instances": instances}


def sweep_record(rng, case="add", ref=(2e-6, 20e9), tgt=(30e-6, 5e9), dtype="float32",
                 elems=(1024, 98304, 4194304)):
    """A record of one 3-size sweep of x + y with known (fixed_s, bytes/s) per side."""
    insts = []
    for n in elems:
        work = 3 * n * 4
        times = (summary(side_rounds(rng, ref[0], ref[1], work)),
                 summary(side_rounds(rng, tgt[0], tgt[1], work)))
        insts.append(instance(case, n, times, dtype=dtype))
    return record(insts)

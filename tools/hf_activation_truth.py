"""Ground truth for a suggestion inside a `transformers` model: what swapping its activation
saves per training step, measured as tools/affinity_pairs.py measures its pairs (both steps
alternated in one process, A B B A ..., the process the unit of the interval).

    python tools/hf_activation_truth.py --processes 6            # ALBERT: gelu_new -> gelu_pytorch_tanh

`opbench suggest -- python tests/conformance/hf_albert_training.py` finds transformers'
`NewGELUActivation` (activations.py, the tanh formula in six calls) and prices
`F.gelu(approximate='tanh')` in its place; transformers' own `gelu_pytorch_tanh` activation is
that call. Here two copies of the corpus script's model (the same config and seed, weights
equal) differ only in `hidden_act`; each process checks their losses agree, then times their
training steps alternated. Printed: per process the median paired difference (naive - fixed)
and the steps' medians; then the mean difference over processes with its t interval.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:        # this checkout's opbench, not an installed one
    sys.path.insert(0, str(REPO))
from opbench.verdicts.stats import student_t_quantile  # noqa: E402


def one_process(naive_act: str, fixed_act: str, rounds: int) -> dict:
    import torch
    from transformers import AlbertConfig, AlbertForSequenceClassification

    torch.set_num_threads(1)

    def build(act: str):
        torch.manual_seed(0)
        config = AlbertConfig(vocab_size=500, embedding_size=32, hidden_size=64,
                              num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                              max_position_embeddings=64, num_labels=3, hidden_act=act)
        model = AlbertForSequenceClassification(config).train()
        return model, torch.optim.AdamW(model.parameters(), lr=5e-5)

    torch.manual_seed(1)
    input_ids = torch.randint(0, 500, (4, 24))
    mask = torch.ones_like(input_ids)
    mask[2:, 18:] = 0
    labels = torch.tensor([0, 2, 1, 0])
    runs = {"naive": build(naive_act), "fixed": build(fixed_act)}

    def step(name: str) -> float:
        model, optimizer = runs[name]
        start = time.perf_counter_ns()
        out = model(input_ids=input_ids, attention_mask=mask, labels=labels)
        out.loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        loss = out.loss.item()
        return (time.perf_counter_ns() - start) / 1e9, loss

    def seeded(name: str, seed: int) -> float:
        torch.manual_seed(seed)          # the classifier's dropout draws alike in both
        return step(name)[1]

    losses = [(seeded("naive", k), seeded("fixed", k)) for k in range(3)]
    differ = max(abs(a - b) / max(abs(a), 1e-12) for a, b in losses)
    samples = {"naive": [], "fixed": []}
    order = ["naive", "fixed"]
    for _ in range(rounds):
        for name in order:
            samples[name].append(step(name)[0])
        order.reverse()
    diffs = [a - b for a, b in zip(samples["naive"], samples["fixed"])]
    return {"median_diff_s": statistics.median(diffs),
            "naive_median_s": statistics.median(samples["naive"]),
            "fixed_median_s": statistics.median(samples["fixed"]),
            "loss_relative_difference": differ}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--naive", default="gelu_new")
    parser.add_argument("--fixed", default="gelu_pytorch_tanh")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.child:
        print(json.dumps(one_process(options.naive, options.fixed, options.rounds)))
        return 0
    results = []
    for _ in range(options.processes):
        done = subprocess.run([sys.executable, __file__, "--child", "--rounds",
                               str(options.rounds), "--naive", options.naive, "--fixed",
                               options.fixed], capture_output=True, text=True, check=True)
        result = json.loads(done.stdout.strip().splitlines()[-1])
        results.append(result)
        print(f"process: naive {result['naive_median_s'] * 1e3:.3f} ms, fixed "
              f"{result['fixed_median_s'] * 1e3:.3f} ms, paired difference "
              f"{result['median_diff_s'] * 1e6:.1f} us, losses differ by "
              f"{result['loss_relative_difference']:.1e} (relative)")
    diffs = [r["median_diff_s"] for r in results]
    mean = statistics.fmean(diffs)
    half = (student_t_quantile(0.975, len(diffs) - 1) * statistics.stdev(diffs)
            / len(diffs) ** 0.5 if len(diffs) > 1 else float("nan"))
    step_ms = statistics.fmean(r["naive_median_s"] for r in results) * 1e3
    print(f"{options.naive} -> {options.fixed}: saving {mean * 1e6:.1f} us a step "
          f"[{(mean - half) * 1e6:.1f}, {(mean + half) * 1e6:.1f}] over {len(diffs)} processes "
          f"({mean * 1e3 / step_ms:.1%} of the naive step, {step_ms:.2f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Check that the MindSpore ports compute what their torch originals compute.

    GLOG_v=3 python examples/check_ports.py [--seed 0] [--steps 2] [--rtol 1e-3]

Runs each script of the transformer and cnn pairs in its own process (each framework alone
in its interpreter, as a user runs them) with one seed, and compares what they saved:
- transformer: the encoder's output, torch (both attention variants) against MindSpore, as
  max |torch - mindspore| over max |torch|;
- cnn: the loss of every training step (the 2 warm-up steps and --steps more), each as
  |torch - mindspore| / |torch|; step 1 compares the two forward passes from the same
  weights, the later steps also the two backward passes and SGD updates.
Prints the scripts' output, every difference, and exits 1 when one exceeds --rtol.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

EXAMPLES = Path(__file__).resolve().parent


def run_script(script: Path, save: Path, seed: int, steps: int, *extra: str) -> None:
    command = [sys.executable, str(script), "--seed", str(seed), "--steps", str(steps),
               "--save", str(save), *extra]
    env = dict(os.environ)
    env.setdefault("GLOG_v", "3")   # MindSpore's log lines off unless the caller chose a level
    print(f"$ {' '.join([Path(command[0]).name, *command[1:]])}", flush=True)
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    print("".join(f"    {line}\n" for line in done.stdout.splitlines()), end="", flush=True)
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise SystemExit(f"{script.relative_to(EXAMPLES)} failed (exit {done.returncode})")


def check_transformer(workdir: Path, seed: int, steps: int, rtol: float) -> bool:
    folder = EXAMPLES / "transformer"
    ported = workdir / "transformer_mindspore.npy"
    run_script(folder / "run_mindspore.py", ported, seed, steps)
    mindspore_output = np.load(ported)
    agree = True
    for attention in ("matmul", "sdpa"):
        original = workdir / f"transformer_torch_{attention}.npy"
        run_script(folder / "run_torch.py", original, seed, steps, "--attention", attention)
        torch_output = np.load(original).astype(np.float64)
        difference = np.abs(torch_output - mindspore_output).max()
        relative = difference / np.abs(torch_output).max()
        ok = relative <= rtol
        agree &= bool(ok)
        print(f"transformer output, torch ({attention}) vs mindspore: max |diff| "
              f"{difference:.3e}, relative to max |torch| {relative:.3e} "
              f"{'<=' if ok else '>'} {rtol:g}: {'ok' if ok else 'DIFFER'}")
    return agree


def check_cnn(workdir: Path, seed: int, steps: int, rtol: float) -> bool:
    folder = EXAMPLES / "cnn"
    original, ported = workdir / "cnn_torch.npy", workdir / "cnn_mindspore.npy"
    run_script(folder / "run_torch.py", original, seed, steps)
    run_script(folder / "run_mindspore.py", ported, seed, steps)
    torch_losses, mindspore_losses = np.load(original), np.load(ported)
    relative = np.abs(torch_losses - mindspore_losses) / np.abs(torch_losses)
    for step, (ours, theirs, rel) in enumerate(zip(torch_losses, mindspore_losses, relative)):
        print(f"cnn loss step {step + 1}: torch {ours:.6f} mindspore {theirs:.6f} "
              f"relative {rel:.3e}")
    ok = bool(relative.max() <= rtol)
    print(f"cnn losses, {len(relative)} steps: max relative difference {relative.max():.3e} "
          f"{'<=' if ok else '>'} {rtol:g}: {'ok' if ok else 'DIFFER'}")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=2, help="steps after the 2 warm-up steps")
    parser.add_argument("--rtol", type=float, default=1e-3, help="largest relative difference")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="check_ports.") as workdir:
        results = [check(Path(workdir), args.seed, args.steps, args.rtol)
                   for check in (check_transformer, check_cnn)]
    if not all(results):
        raise SystemExit("check_ports: the ports disagree")
    print("check_ports: the ports agree")


if __name__ == "__main__":
    main()

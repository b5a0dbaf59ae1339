"""replay/paired.py: the original and the swapped program are probed one after the other in
one process and their outputs compared; each probe starts from one seed of the framework's
generator, so a dropout draws the same mask in both (a fake adapter and fake replayers
stand in for the framework: each probe draws from the fake generator)."""
from __future__ import annotations

import random

from opbench.model.replay import executor, paired
from opbench.runner import ipc


class FakeAdapter:
    def __init__(self):
        self.rng = random.Random(12345)
        self.resolved: list[str] = []

    def resolve(self, api):
        self.resolved.append(api)
        return self.rng.seed

    def launch(self):
        return "blocking"


class FakeReplayer:
    """A program whose one output is a 'dropout mask' drawn from the adapter's generator."""

    def __init__(self, step, framework, adapter, mapping):
        self.adapter = adapter
        self.status = ()

    def probe(self, fingerprints=True):
        return [[self.adapter.rng.random() for _ in range(4)]]


def test_each_program_s_probe_starts_from_the_same_seed(monkeypatch):
    monkeypatch.setattr(executor, "Replayer", FakeReplayer)
    adapter = FakeAdapter()
    request = ipc.ReplayPaired(framework="torch", programs=("original", "swapped"))
    result = paired.serve_paired(request, adapter, mapping=None)
    original, swapped = result.fingerprints
    assert original == swapped                    # unseeded, the second drew other numbers
    assert adapter.resolved == ["torch.manual_seed"]
    seeded = random.Random(paired.PROBE_SEED)
    assert original == [[seeded.random() for _ in range(4)]]

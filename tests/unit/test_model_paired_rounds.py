"""replay/paired.py: a paired replay process times its `rounds`, then goes on timing rounds
until they have taken `min_timed_s` (at most `max_rounds`), stopping on an even count so each
program came first as often as second. A fake clock advances by each sample's step time;
fake replayers stand in for the framework."""
from __future__ import annotations

from opbench.model.replay import executor, paired
from opbench.runner import ipc


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class FakeAdapter:
    def resolve(self, api):
        return lambda seed: None

    def launch(self):
        return "blocking"


def replayer_class(clock: Clock, step_s: dict[str, float], order: list[str]):
    class FakeReplayer:
        def __init__(self, step, framework, adapter, mapping):
            self.name = step
            self.status = ()

        def probe(self, fingerprints=True):
            return None

        def warm_up(self, runs, seconds):
            pass

        def time_script_steps(self, samples):
            order.append(self.name)
            clock.now += samples * step_s[self.name]
            return [step_s[self.name]] * samples
    return FakeReplayer


def serve(monkeypatch, step_s, **request):
    clock, order = Clock(), []
    monkeypatch.setattr(executor, "Replayer", replayer_class(clock, step_s, order))
    result = paired.serve_paired(
        ipc.ReplayPaired(framework="torch", programs=tuple(step_s), **request),
        FakeAdapter(), mapping=None, clock=clock)
    return result, order


def test_a_small_step_is_timed_until_the_time_is_used(monkeypatch):
    # 0.7 ms steps, 5 samples a round: 7 ms a round for both programs, 1 s needs 143 rounds,
    # rounded up to an even 144
    result, order = serve(monkeypatch, {"a": 0.7e-3, "b": 0.7e-3}, rounds=6, samples=5,
                          min_timed_s=1.0)
    rounds = len(result.samples_s[0])
    assert rounds == len(result.samples_s[1]) == 144
    assert rounds * 5 * 2 * 0.7e-3 >= 1.0
    assert order[:4] == ["a", "b", "b", "a"]       # A B, B A: each first as often


def test_a_large_step_keeps_its_rounds(monkeypatch):
    # 50 ms steps: six rounds already take 3 s
    result, _ = serve(monkeypatch, {"a": 0.05, "b": 0.05}, rounds=6, samples=5,
                      min_timed_s=1.0)
    assert len(result.samples_s[0]) == 6


def test_rounds_stop_at_max_rounds_on_an_even_count(monkeypatch):
    result, _ = serve(monkeypatch, {"a": 1e-6, "b": 1e-6}, rounds=6, samples=5,
                      min_timed_s=1.0, max_rounds=41)
    assert len(result.samples_s[0]) == 41            # the cap is hard
    result, _ = serve(monkeypatch, {"a": 1e-6, "b": 1e-6}, rounds=6, samples=5,
                      min_timed_s=1.0, max_rounds=40)
    assert len(result.samples_s[0]) == 40


def test_a_probe_only_request_times_nothing(monkeypatch):
    result, order = serve(monkeypatch, {"a": 1e-3, "b": 1e-3}, rounds=0, min_timed_s=1.0)
    assert result.samples_s == () and order == []


def test_without_a_time_budget_the_rounds_are_as_asked(monkeypatch):
    result, _ = serve(monkeypatch, {"a": 1e-3, "b": 1e-3}, rounds=4, samples=5)
    assert len(result.samples_s[0]) == 4

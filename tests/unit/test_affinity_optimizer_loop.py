"""The MindSpore optimizer loop (opbench/model/affinity/optimizer_loop.py, issue 34) on
synthetic training steps, no framework: per weight a write-back (ops.assign of p - lr * g,
ops.assign_sub / the AssignSub primitive of lr * g) fed by that weight and its own gradient
from the backward call is one update, the updates of one backward with one learning rate
are one loop swapped for one nn.SGD call; the swap plan (the checked program returns every
weight, the timed one the last write-back's) and its measurement (checked in a process of
its own, every weight compared)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from opbench.model.affinity.graph import StepGraph
from opbench.model.affinity.measure import (DID_NOT_RUN, OUTPUTS_DIFFER, SuggestSettings,
                                            measure_one)
from opbench.model.affinity.optimizer_loop import update_loop
from opbench.model.affinity.run import candidates_of
from opbench.model.affinity.saving import SLOWER
from opbench.model.affinity.swap import swapped_step
from opbench.model.program import Call, Ext, ExternalTensor, Lit, Ref, Seq, Site
from opbench.model.replay.executor import CallStatus
from opbench.model.steady import StepProgram
from opbench.runner import ipc

MS = "mindspore."
T = "mindspore.Tensor."
X, W, B, Y = Ext(0), Ext(1), Ext(2), Ext(3)
SHAPES = {W: (8, 6), B: (6,)}
LR = 0.01


def tensor(shape):
    return ("tensor", tuple(shape), "float32")


class TrainingStep:
    """A forward (linear, mean), value_and_grad's backward call over the weights (W, B),
    then what each test appends. Each call returns its Ref."""

    def __init__(self, framework="mindspore", weights=(W, B)):
        self.framework = framework
        self.weights = weights
        self.calls: list[Call] = []
        self.externals = (ExternalTensor(0, (4, 8), "float32", "input"),
                          ExternalTensor(1, (8, 6), "float32", "parameter"),
                          ExternalTensor(2, (6,), "float32", "parameter"),
                          ExternalTensor(3, (4, 6), "float32", "input"))
        h = self(MS + "mint.nn.functional.linear", X, W, B, out=tensor((4, 6)), line=40)
        loss = self(T + "mean", h, out=tensor(()), line=41)
        grads = ("seq", tuple(tensor(SHAPES[w]) for w in weights))
        self.backward = self(MS + "value_and_grad", loss, Seq("list", tuple(weights)),
                             kwargs=(("forward_out", loss),),
                             out=("seq", (tensor(()), grads)), line=50, backward=True)

    def grad(self, weight):
        return Ref(self.backward.call, (1, self.weights.index(weight)))

    def __call__(self, api, *args, kwargs=(), out=None, line=60, kind=None, backward=False):
        index = len(self.calls)
        self.calls.append(Call(
            index=index, framework=self.framework, api=api,
            kind=kind or ("tensor_method" if ".Tensor." in api else "function"),
            replay_api=api, args=tuple(args), kwargs=tuple(kwargs),
            outputs=out or tensor((8, 6)), duration_ns=1000, start_ns=0,
            backward=backward, site=Site("train.py", line, line)))
        return Ref(index)

    def assign_update(self, weight, grad=None, lr=LR, line=63, mul=T + "__rmul__"):
        """`ops.assign(p, p - lr * g)` as the capture records it."""
        out = tensor(SHAPES[weight])
        scaled = self(mul, grad or self.grad(weight), Lit(lr), out=out, line=line)
        new = self(T + "__sub__", weight, scaled, out=out, line=line)
        return self(MS + "ops.assign", weight, new, out=out, line=line)

    def step(self) -> StepProgram:
        n = len(self.calls)
        return StepProgram(self.framework, tuple(self.calls), self.externals, 3,
                           (1000,) * n, (1000 * n,) * 3, tuple(range(n)))


def loops(step):
    return [c for c in candidates_of(step) if c.family == "mindspore.optimizer_loop"]


def test_an_assign_loop_over_the_weights_is_one_nn_sgd_at_its_lines():
    s = TrainingStep()
    s.assign_update(W)
    s.assign_update(B)
    (found,) = loops(s.step())
    assert (found.affinity_api, found.api_type, found.calls) == ("mindspore.nn.SGD",
                                                                 "pattern", 6)
    assert found.api == T + "__rmul__ + " + T + "__sub__ + " + MS + "ops.assign"
    assert (found.site.file, found.site.first_line, found.site.last_line) == \
        ("train.py", 63, 63)
    assert "learning_rate=0.01" in found.replacement and "2 weights" in found.replacement
    (swap,) = found.swaps
    assert swap.root == 8 and swap.removed == tuple(range(3, 9))
    # each write-back stands for its weight's place in nn.SGD's result
    assert swap.stands_for == ((5, 0), (8, 1))


def test_the_other_spellings_of_one_update_are_the_same_loop():
    # `p - g * lr` (Tensor.__mul__), ops.assign_sub(p, lr * g), the AssignSub primitive
    s = TrainingStep()
    s.assign_update(W, mul=T + "__mul__")
    scaled = s(MS + "ops.mul", s.grad(B), Lit(LR), out=tensor((6,)), line=64)
    s(MS + "ops.AssignSub", B, scaled, kind="primitive", out=tensor((6,)), line=64)
    (found,) = loops(s.step())
    assert found.calls == 5 and (found.site.first_line, found.site.last_line) == (63, 64)
    s = TrainingStep()
    scaled = s(MS + "ops.mul", Lit(LR), s.grad(W), line=63)
    s(MS + "ops.assign_sub", W, scaled, line=63)
    (found,) = loops(s.step())
    assert found.calls == 2 and found.swaps[0].stands_for == ((4, 0),)


def test_an_update_is_matched_by_its_data_flow_not_its_spelling():
    # another weight's gradient, a value read elsewhere, lr * g taken from the weight the
    # other way round, a torch step: no loop
    s = TrainingStep()
    s.assign_update(W, grad=s.grad(B))
    assert loops(s.step()) == []
    s = TrainingStep()
    scaled = s(T + "__rmul__", s.grad(W), Lit(LR))
    new = s(T + "__sub__", W, scaled)
    s(MS + "ops.assign", W, new)
    s(MS + "ops.relu", scaled)                      # lr * g also read by another call
    assert loops(s.step()) == []
    s = TrainingStep()
    scaled = s(T + "__rmul__", s.grad(W), Lit(LR))
    s(MS + "ops.assign", W, s(T + "__sub__", scaled, W))       # lr * g - p
    assert loops(s.step()) == []
    s = TrainingStep()
    s(MS + "ops.assign", W, s(T + "__sub__", W, s(T + "__mul__", s.grad(W), s.grad(W))))
    assert loops(s.step()) == []                    # g * g: no learning rate
    s = TrainingStep(framework="torch")
    s.assign_update(W)
    assert loops(s.step()) == []


def test_updates_with_another_learning_rate_are_another_loop():
    s = TrainingStep()
    s.assign_update(W, lr=0.01)
    s.assign_update(B, lr=0.1)
    (found,) = loops(s.step())            # one site: one suggestion, one nn.SGD per rate
    assert [(sw.root, sw.new_calls[0].init[0]) for sw in found.swaps] == [
        (5, ("learning_rate", 0.01)), (8, ("learning_rate", 0.1))]


def test_a_weight_read_after_its_write_back_keeps_its_own_update():
    # the swapped nn.SGD runs where the last write-back was: a call reading W in between
    # would read it not yet updated, so W's update is not in B's loop; it is a loop of
    # its own, ending before that read
    s = TrainingStep()
    s.assign_update(W)
    s(MS + "ops.norm", W, out=tensor(()), line=70)
    s.assign_update(B)
    graph = StepGraph.of(s.step())
    assert [u.weight for u in update_loop(graph, 9).updates] == [B]
    (found,) = loops(s.step())
    assert [(sw.removed, sw.root) for sw in found.swaps] == [((3, 4, 5), 5),
                                                             ((7, 8, 9), 9)]
    assert swapped_step(s.step(), found).step.calls[4].args == (W,)   # ops.norm after W's


def test_the_swap_runs_nn_sgd_over_the_loop_s_weights_with_its_learning_rate():
    s = TrainingStep()
    s.assign_update(W)
    s.assign_update(B)
    after = s(MS + "ops.relu", Ref(8), out=tensor((6,)), line=70)   # reads the last update
    step = s.step()
    (found,) = loops(step)
    timed = swapped_step(step, found)
    assert [c.api for c in timed.step.calls] == [
        MS + "mint.nn.functional.linear", T + "mean", MS + "value_and_grad",
        MS + "nn.SGD", MS + "ops.relu"]
    sgd = timed.step.calls[3]
    assert sgd.kind == "module" and sgd.replay_api == MS + "nn.SGD"
    assert sgd.args == (Seq("list", (W, B)), Seq("tuple", (Ref(2, (1, 0)), Ref(2, (1, 1)))))
    assert dict(sgd.init) == {"learning_rate": LR, "momentum": 0.0, "dampening": 0.0,
                              "nesterov": False}
    # timed: the call returns B, the last write-back's weight, as that ops.assign did
    assert sgd.pick == 1 and sgd.outputs == tensor((6,))
    assert timed.step.calls[4].args == (Ref(3),)
    assert timed.roots == {8: 3} and timed.picks == {}
    # checked: the whole result, each write-back compared with its weight
    checked = swapped_step(step, found, whole_results=True)
    whole = checked.step.calls[3]
    assert whole.pick is None and whole.outputs == ("seq", (tensor((8, 6)), tensor((6,))))
    assert checked.roots == {5: 3, 8: 3} and checked.picks == {5: (0,), 8: (1,)}
    assert checked.step.calls[4].args == (Ref(3, (1,)),)
    assert after.call == 9 and checked.kept == timed.kept == {0: 0, 1: 1, 2: 2, 9: 4}


def _fp(value, n=4):
    """A fingerprint as replay/executor.fingerprint writes one."""
    return {"shape": [n], "n": n, "mean": value, "mean_abs": abs(value),
            "points": [value] * n}


class FakeReplay:
    """Paired replay processes on _loop_step: the original's call i fingerprints as 1 + i
    (its write-backs, calls 5 and 8, as the updated W and B: 6 and 9); the swapped nn.SGD
    as every weight (a list) or as the last, B's value offset by `b_differs`; step samples
    of `now` and `after` seconds."""

    def __init__(self, now, after, b_differs=0.0):
        self.now, self.after, self.b_differs = now, after, b_differs
        self.requests = []

    def _swapped(self, step):
        out = []
        for i, call in enumerate(step.calls):
            if call.api != MS + "nn.SGD":
                out.append(_fp(1.0 + i))
            elif call.pick is None:
                out.append([_fp(6.0), _fp(9.0 + self.b_differs)])
            else:
                out.append(_fp(9.0 + self.b_differs))
        return out

    def __call__(self, request):
        self.requests.append(request)
        original, swapped = request.programs
        prints = ([_fp(1.0 + i) for i in range(len(original.calls))], self._swapped(swapped))
        status = tuple(tuple(CallStatus(i, c.api, True) for i, c in enumerate(st.calls))
                       for st in request.programs)
        rounds = request.rounds
        return ipc.PairedResult(
            framework="mindspore", launch="queued", pid=1, status=status,
            fingerprints=prints,
            samples_s=(tuple((self.now,) * 5 for _ in range(rounds)),
                       tuple((self.after + 1e-4 * (r % 2),) * 5 for r in range(rounds))))


SETTINGS = SuggestSettings(framework="mindspore", launch="queued", processes=3, rounds=4)


def _loop_step():
    s = TrainingStep()
    s.assign_update(W)
    s.assign_update(B)
    return s.step()


def test_the_loop_is_checked_on_every_weight_then_timed_in_every_process():
    step = _loop_step()
    (found,) = loops(step)
    replay = FakeReplay(now=0.040, after=0.060)
    row = measure_one(step, found, SETTINGS, replay)
    check, *timing = replay.requests
    assert check.fingerprints and check.rounds == 0
    assert check.programs[1].calls[3].pick is None          # returns every weight
    assert len(timing) == 3 and all(not r.fingerprints and r.rounds == 4
                                    and r.programs[1].calls[3].pick == 1 for r in timing)
    assert row.outputs_equal is True and row.verdict == SLOWER
    assert row.saving_s["estimate"] == pytest.approx(-0.02, abs=2e-4)


def test_a_loop_whose_fused_update_differs_on_one_weight_is_dropped():
    step = _loop_step()
    (found,) = loops(step)
    # B (the second weight, not the one the timed call returns) differs by 50%
    replay = FakeReplay(now=0.040, after=0.030, b_differs=4.5)
    row = measure_one(step, found, SETTINGS, replay)
    assert row.verdict == OUTPUTS_DIFFER and row.outputs_equal is False
    assert len(replay.requests) == 1 and "differ" in row.detail


def test_a_loop_whose_timed_processes_all_fail_did_not_run():
    step = _loop_step()
    (found,) = loops(step)
    replay = FakeReplay(now=0.040, after=0.030)

    def failing(request):
        return replay(request) if request.fingerprints else "the process crashed"
    row = measure_one(step, found, SETTINGS, failing)
    assert row.verdict == DID_NOT_RUN and row.outputs_equal is True
    assert "crashed" in row.detail


def test_a_timed_process_whose_swap_stood_in_is_an_error_not_a_sample():
    step = _loop_step()
    (found,) = loops(step)
    replay = FakeReplay(now=0.040, after=0.030)

    def stood_in_once(request):
        result = replay(request)
        if len(replay.requests) != 2:
            return result
        status = list(result.status[1])
        status[3] = CallStatus(3, MS + "nn.SGD[1]", False, stand_in=True, problem="boom")
        return replace(result, status=(result.status[0], tuple(status)))
    row = measure_one(step, found, SETTINGS, stood_in_once)
    assert row.outputs_equal is True and row.saving_s is not None
    assert "nn.SGD[1]: boom" in row.detail       # timed in processes 2 and 3 only
    assert row.saving_s["estimate"] == pytest.approx(0.01, abs=2e-4)

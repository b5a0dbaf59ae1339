"""The torch optimizer loop (opbench/model/affinity/optimizer_loop.py, issue 34) on synthetic
training steps, no framework: per weight an in-place update with grad mode off (`p -= lr *
p.grad`, `p.sub_(lr * p.grad)`, `p.add_(p.grad, alpha=-lr)`) whose gradient is the external
the capture records for `p.grad` (of p's shape, read by that update alone, after a backward
whose loss reads p) is one update; the updates of one backward with one learning rate are
one loop swapped for `torch.optim.SGD(weights, lr=lr, foreach=True)` stepped then zeroed,
checked on the loop's own gradients and timed on the backward's `.grad`; its replay route
(replay/training_routes.py, torch faked) and the weights it trains (replay/trainable.py)."""
from __future__ import annotations

import dataclasses
import sys
import types

import pytest

from opbench.model.affinity.measure import SuggestSettings, measure_one
from opbench.model.affinity.run import candidates_of
from opbench.model.affinity.saving import SLOWER
from opbench.model.affinity.swap import swapped_step
from opbench.model.program import Call, Ext, ExternalTensor, Lit, Ref, Seq, Site
from opbench.model.replay.executor import CallStatus
from opbench.model.replay.route import Unmapped
from opbench.model.replay.trainable import trainable_externals
from opbench.model.replay.training_routes import torch_sgd_route
from opbench.model.steady import StepProgram
from opbench.runner import ipc

T = "torch.Tensor."
X, W, B, Y, GW, GB, BUFFER = Ext(0), Ext(1), Ext(2), Ext(3), Ext(4), Ext(5), Ext(6)
SHAPES = {W: (8, 6), B: (6,), GW: (8, 6), GB: (6,), X: (4, 8), Y: (4, 6), BUFFER: (8, 6)}
LR = 0.01


def tensor(shape):
    return ("tensor", tuple(shape), "float32")


class TorchStep:
    """A forward (linear, mse_loss) reading the weights W and B, `loss.backward()`, then
    what each test appends; GW and GB are the externals the capture records for W.grad and
    B.grad. Each call returns its Ref."""

    def __init__(self, backward=True):
        self.calls: list[Call] = []
        self.externals = tuple(ExternalTensor(e.id, SHAPES[e], "float32", "input")
                               for e in (X, W, B, Y, GW, GB, BUFFER))
        h = self("torch.nn.functional.linear", X, W, B, out=tensor((4, 6)), line=50)
        self.loss = self("torch.nn.functional.mse_loss", h, Y, out=tensor(()), line=51)
        if backward:
            self(T + "backward", self.loss, out=("none",), line=52, backward=True)

    def __call__(self, api, *args, kwargs=(), out=None, line=55, backward=False,
                 grad_enabled=True):
        index = len(self.calls)
        self.calls.append(Call(
            index=index, framework="torch", api=api,
            kind="tensor_method" if ".Tensor." in api else "function", replay_api=api,
            args=tuple(args), kwargs=tuple(kwargs), outputs=out or tensor((8, 6)),
            duration_ns=1000, start_ns=0, backward=backward, grad_enabled=grad_enabled,
            site=Site("train.py", line, line)))
        return Ref(index)

    def isub_update(self, weight, grad, lr=LR, line=55, write=T + "__isub__",
                    no_grad=False):
        """`p -= lr * p.grad` under torch.no_grad() as the capture records it."""
        out = tensor(SHAPES[weight])
        scaled = self(T + "__rmul__", grad, Lit(lr), out=out, line=line,
                      grad_enabled=no_grad)
        return self(write, weight, scaled, out=out, line=line, grad_enabled=no_grad)

    def step(self) -> StepProgram:
        n = len(self.calls)
        return StepProgram("torch", tuple(self.calls), self.externals, 3, (1000,) * n,
                           (1000 * n,) * 3, tuple(range(n)))


def loops(step):
    return [c for c in candidates_of(step) if c.family == "torch.optimizer_loop"]


def _loop_step():
    s = TorchStep()
    s.isub_update(W, GW)
    s.isub_update(B, GB)
    return s.step()


def test_a_hand_written_torch_sgd_loop_is_one_foreach_sgd_at_its_lines():
    (found,) = loops(_loop_step())
    assert (found.affinity_api, found.api_type, found.calls) == ("torch.optim.SGD",
                                                                 "pattern", 4)
    assert found.api == T + "__rmul__ + " + T + "__isub__"
    assert (found.site.file, found.site.first_line, found.site.last_line) == \
        ("train.py", 55, 55)
    assert "lr=0.01, foreach=True" in found.replacement and "2 weights" in found.replacement
    assert "optimizer.step(); optimizer.zero_grad()" in found.replacement
    (swap,) = found.swaps
    assert swap.root == 6 and swap.removed == (3, 4, 5, 6)
    assert swap.stands_for == ((4, 0), (6, 1))      # each write-back: its weight's place
    (sgd,) = swap.new_calls
    assert (sgd.api, sgd.kind, dict(sgd.init)) == ("torch.optim.SGD", "module",
                                                    {"lr": LR, "foreach": True})
    # timed on what the backward leaves in .grad; checked on the loop's own gradients
    assert sgd.args == (Seq("list", (W, B)),)
    assert sgd.checked_args == (Seq("list", (W, B)), Seq("tuple", (GW, GB)))


def test_the_other_torch_spellings_of_one_update_are_the_same_loop():
    s = TorchStep()
    s.isub_update(W, GW, write=T + "sub_")
    s(T + "add_", B, GB, kwargs=(("alpha", Lit(-LR)),), out=tensor((6,)), line=56,
      grad_enabled=False)
    (found,) = loops(s.step())
    assert found.calls == 3 and (found.site.first_line, found.site.last_line) == (55, 56)
    assert found.swaps[0].stands_for == ((4, 0), (5, 1))
    assert dict(found.swaps[0].new_calls[0].init)["lr"] == LR


def test_a_torch_update_is_matched_by_its_data_flow_not_its_spelling():
    # W updated with B's gradient (another shape): no update
    s = TorchStep()
    s.isub_update(B, GW)
    assert loops(s.step()) == []
    # the gradient read by another call too: not (only) p.grad as the loop reads it
    s = TorchStep()
    s.isub_update(W, GW)
    s(T + "norm", GW, out=tensor(()), line=57)
    assert loops(s.step()) == []
    # grad mode on (torch refuses `p -=` on a leaf that requires grad): not an update
    s = TorchStep()
    s.isub_update(W, GW, no_grad=True)
    assert loops(s.step()) == []
    # no backward before it: GW is data, not a gradient
    s = TorchStep(backward=False)
    s.isub_update(W, GW)
    assert loops(s.step()) == []
    # after torch.autograd.grad, which leaves no .grad: GW is not W.grad
    s = TorchStep(backward=False)
    s("torch.autograd.grad", s.loss, Seq("list", (W,)), out=("seq", (tensor((8, 6)),)))
    s.isub_update(W, GW)
    assert loops(s.step()) == []
    # the "gradient" is the weight itself (w -= lr * w): no update
    s = TorchStep()
    s.isub_update(Y, Y)
    assert loops(s.step()) == []


def test_an_external_not_read_by_the_loss_is_not_a_weight_of_the_loop():
    s = TorchStep()
    # X is read by the loss but the update reads GW for it: shape (8, 6) vs X's (4, 8)
    s.isub_update(X, GW)
    assert loops(s.step()) == []
    s = TorchStep()
    s.isub_update(BUFFER, GW)                      # a buffer no loss reads
    assert loops(s.step()) == []


def test_a_write_back_whose_result_is_read_keeps_its_own_update():
    # `p -= ...` returns p: a later call reading W's write-back would have no call left to
    # stand for it, so W's update is not in B's loop (it stays a loop of its own)
    s = TorchStep()
    w_new = s.isub_update(W, GW)
    s.isub_update(B, GB)
    s(T + "norm", w_new, out=tensor(()), line=60)
    (found,) = loops(s.step())
    assert [sw.stands_for for sw in found.swaps] == [((4, 0),), ((6, 0),)]
    checked = swapped_step(s.step(), found, whole_results=True)
    assert checked.step.calls[-1].args == (Ref(3, (0,)),)     # norm reads W's SGD result


def test_updates_with_another_learning_rate_are_another_torch_optimizer():
    s = TorchStep()
    s.isub_update(W, GW, lr=0.01)
    s.isub_update(B, GB, lr=0.1)
    (found,) = loops(s.step())
    assert [dict(sw.new_calls[0].init)["lr"] for sw in found.swaps] == [0.01, 0.1]


def test_the_checked_program_steps_on_the_loop_s_gradients_the_timed_one_on_grad():
    step = _loop_step()
    (found,) = loops(step)
    timed = swapped_step(step, found)
    sgd = timed.step.calls[3]
    assert [c.api for c in timed.step.calls] == [
        "torch.nn.functional.linear", "torch.nn.functional.mse_loss", T + "backward",
        "torch.optim.SGD"]
    assert sgd.args == (Seq("list", (W, B)),) and sgd.pick == 1
    assert sgd.init == (("lr", LR), ("foreach", True)) and not sgd.grad_enabled
    checked = swapped_step(step, found, whole_results=True).step.calls[3]
    assert checked.args == (Seq("list", (W, B)), Seq("tuple", (GW, GB)))
    assert checked.pick is None
    # the replay trains the weights the optimizer steps (the in-place updates are gone)
    assert trainable_externals(timed.step.calls, {0, 1, 2, 3, 4, 5}) == {W.id, B.id}


def test_a_weight_the_loss_does_not_read_is_not_trained_by_the_optimizer_call():
    s = TorchStep()
    s("torch.optim.SGD", Seq("list", (W, GW)), out=tensor((8, 6)), grad_enabled=False)
    assert trainable_externals(s.step().calls, {0, 1, 2, 3, 4, 5}) == {W.id}


def _fp(value, n=4):
    return {"shape": [n], "n": n, "mean": value, "mean_abs": abs(value),
            "points": [value] * n}


class FakeReplay:
    """Paired torch replay processes on _loop_step: the original's call i fingerprints as
    1 + i (its write-backs, calls 4 and 6, as W and B updated: 5 and 7); the swapped
    SGD as both weights or the last; step samples of `now` and `after` seconds."""

    def __init__(self, now, after):
        self.now, self.after = now, after
        self.requests = []

    def __call__(self, request):
        self.requests.append(request)
        original, swapped = request.programs
        after = [_fp(1.0 + i) if c.api != "torch.optim.SGD"
                 else [_fp(5.0), _fp(7.0)] if c.pick is None else _fp(7.0)
                 for i, c in enumerate(swapped.calls)]
        status = tuple(tuple(CallStatus(i, c.api, True) for i, c in enumerate(st.calls))
                       for st in request.programs)
        return ipc.PairedResult(
            framework="torch", launch="blocking", pid=1, status=status,
            fingerprints=([_fp(1.0 + i) for i in range(len(original.calls))], after),
            samples_s=(tuple((self.now,) * 5 for _ in range(request.rounds)),
                       tuple((self.after + 1e-6 * (r % 2),) * 5
                             for r in range(request.rounds))))


def test_the_torch_loop_is_checked_with_its_gradients_then_timed_on_grad():
    step = _loop_step()
    (found,) = loops(step)
    replay = FakeReplay(now=0.00130, after=0.00135)
    settings = SuggestSettings(framework="torch", launch="blocking", processes=3, rounds=4)
    row = measure_one(step, found, settings, replay)
    check, *timing = replay.requests
    assert len(check.programs[1].calls[3].args) == 2 and check.rounds == 0
    assert len(timing) == 3 and all(len(r.programs[1].calls[3].args) == 1 for r in timing)
    assert row.outputs_equal is True and row.verdict == SLOWER
    assert row.saving_s["estimate"] == pytest.approx(-0.00005, abs=2e-6)


class FakeTensor:
    def __init__(self, name):
        self.name, self.grad = name, f"d{name}"


@pytest.fixture
def fake_sgd(monkeypatch):
    log = []

    class FakeSGD:
        def __init__(self, weights, **settings):
            log.append(("built", len(weights), settings))
            self.weights = weights

        def step(self):
            log.append(("step", [w.grad for w in self.weights]))

        def zero_grad(self):
            log.append(("zero_grad",))
            for w in self.weights:
                w.grad = None

    fake_torch = types.ModuleType("torch")
    fake_torch.optim = types.SimpleNamespace(SGD=FakeSGD)
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    return log, (lambda name: FakeSGD if name == "torch.optim.SGD" else None)


def _sgd_call():
    (found,) = loops(_loop_step())
    return swapped_step(_loop_step(), found).step.calls[3]


def test_the_torch_sgd_route_builds_once_steps_then_zeroes_the_grads(fake_sgd):
    log, resolve = fake_sgd
    route = torch_sgd_route(_sgd_call(), "torch")
    assert route.api == "torch.optim.SGD.step + zero_grad"
    update = route.make(resolve)
    weights = [FakeTensor("w"), FakeTensor("b")]
    assert update(weights) == tuple(weights)           # on what the backward left in .grad
    for w in weights:
        w.grad = f"d{w.name}2"
    update(weights, ("gw", "gb"))                      # the check's: the loop's gradients
    assert log == [("built", 2, {"lr": LR, "foreach": True}), ("step", ["dw", "db"]),
                   ("zero_grad",), ("step", ["gw", "gb"]), ("zero_grad",)]
    assert [w.grad for w in weights] == [None, None]


def test_a_weight_without_a_gradient_is_an_error_not_a_weight_left_out(fake_sgd):
    log, resolve = fake_sgd
    update = torch_sgd_route(_sgd_call(), "torch").make(resolve)
    weights = [FakeTensor("w"), FakeTensor("b")]
    weights[1].grad = None
    with pytest.raises(ValueError, match="no gradient"):
        update(weights)
    assert not [entry for entry in log if entry[0] == "step"]


def test_the_torch_sgd_route_is_torch_only():
    assert isinstance(torch_sgd_route(_sgd_call(), "mindspore"), Unmapped)


def test_a_script_already_stepping_torch_optim_sgd_is_told_to_pass_foreach(tmp_path):
    # torch.optim.SGD without foreach on CPU steps each weight with `param.add_(grad,
    # alpha=-lr)`, the calls' site the script's `optimizer.step()` line: the suggestion is
    # the keyword, not an optimizer to make
    script = tmp_path / "train.py"
    script.write_text("import torch\n" * 59 + "    optimizer.step()\n")
    s = TorchStep()
    for weight, grad in ((W, GW), (B, GB)):
        index = len(s.calls)
        s(T + "add_", weight, grad, kwargs=(("alpha", Lit(-LR)),), out=tensor(SHAPES[weight]),
          line=60, grad_enabled=False)
        s.calls[index] = dataclasses.replace(s.calls[index], site=Site(str(script), 60, 60))
    (found,) = loops(s.step())
    assert found.replacement.startswith("pass foreach=True to the script's torch.optim.SGD")
    assert "torch.optim.SGD(params, lr=0.01, foreach=True)" in found.replacement
    assert "optimizer = " not in found.replacement
    # the same updates written as a loop in the script: an optimizer to make
    script.write_text("import torch\n" * 59 + "        p.add_(p.grad, alpha=-LR)\n")
    import linecache
    linecache.checkcache(str(script))
    (found,) = loops(s.step())
    assert found.replacement.startswith("optimizer = torch.optim.SGD(params, lr=0.01, "
                                        "foreach=True) (once, before the step")

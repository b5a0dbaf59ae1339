"""Which external tensors a training step trains (opbench/model/replay/trainable.py): weights held as
plain leaf tensors and updated by hand are found by what the step does to them (written in
place with grad mode off, read by the loss), or by `torch.autograd.grad` naming them; the
script's data and an optimizer's buffers are not trained."""
from __future__ import annotations

from opbench.model.program import Call, Ext, Lit, Ref, Seq
from opbench.model.replay.trainable import is_in_place, loss_calls, trainable_externals

IMAGES, WEIGHT, BIAS, GRAD_W, BUFFER = 0, 1, 2, 3, 4
FLOATS = {IMAGES, WEIGHT, BIAS, GRAD_W, BUFFER}


def _call(index: int, api: str, *args, grad_enabled: bool = True, backward: bool = False,
          outputs=("tensor", (2, 4), "float32")) -> Call:
    return Call(index=index, framework="torch", api=api, kind="function", replay_api=api,
                args=tuple(args), kwargs=(), outputs=outputs, duration_ns=1, start_ns=0,
                backward=backward, grad_enabled=grad_enabled)


def _hand_written_sgd_step() -> list[Call]:
    """loss = sum(linear(x, w, b)); loss.backward(); under no_grad: w -= lr * g_w,
    b.sub_(lr * g_w), buffer.mul_(0.9)."""
    return [_call(0, "torch.nn.functional.linear", Ext(IMAGES), Ext(WEIGHT), Ext(BIAS)),
            _call(1, "torch.Tensor.sum", Ref(0), outputs=("tensor", (), "float32")),
            _call(2, "torch.Tensor.backward", Ref(1), backward=True, outputs=("none",)),
            _call(3, "torch.Tensor.__rmul__", Ext(GRAD_W), Lit(0.1), grad_enabled=False),
            _call(4, "torch.Tensor.__isub__", Ext(WEIGHT), Ref(3), grad_enabled=False),
            _call(5, "torch.Tensor.sub_", Ext(BIAS), Ref(3), grad_enabled=False),
            _call(6, "torch.Tensor.mul_", Ext(BUFFER), Lit(0.9), grad_enabled=False)]


def test_weights_updated_by_hand_are_trained_and_the_data_is_not():
    assert trainable_externals(_hand_written_sgd_step(), FLOATS) == {WEIGHT, BIAS}


def test_a_buffer_written_in_place_that_no_loss_reads_is_not_trained():
    found = trainable_externals(_hand_written_sgd_step(), FLOATS)
    assert BUFFER not in found and GRAD_W not in found


def test_an_in_place_write_with_grad_mode_on_does_not_make_a_weight():
    calls = _hand_written_sgd_step()
    calls[4] = _call(4, "torch.Tensor.__isub__", Ext(WEIGHT), Ref(3), grad_enabled=True)
    assert trainable_externals(calls, FLOATS) == {BIAS}


def test_without_a_backward_nothing_is_trained_by_the_rule():
    calls = [c for c in _hand_written_sgd_step() if not c.backward]
    assert trainable_externals(calls, FLOATS) == frozenset()


def test_only_floating_tensors_are_trained():
    assert trainable_externals(_hand_written_sgd_step(), {IMAGES, BIAS}) == {BIAS}


def test_the_tensors_autograd_grad_differentiates_are_trained():
    calls = [_call(0, "torch.nn.functional.linear", Ext(IMAGES), Ext(WEIGHT), Ext(BIAS)),
             _call(1, "torch.Tensor.sum", Ref(0), outputs=("tensor", (), "float32")),
             _call(2, "torch.autograd.grad", Ref(1), Seq("list", (Ext(WEIGHT), Ext(BIAS))),
                   outputs=("seq", (("tensor", (4, 4), "float32"),
                                    ("tensor", (4,), "float32"))))]
    assert trainable_externals(calls, FLOATS) == {WEIGHT, BIAS}


def test_the_loss_depends_on_the_calls_it_reads_through_and_no_others():
    calls = _hand_written_sgd_step()
    assert loss_calls(calls, Ref(1)) == [0, 1]


def test_in_place_calls_are_trailing_underscore_methods_and_augmented_assignments():
    for api in ("torch.Tensor.add_", "torch.Tensor.__isub__", "torch.Tensor.__iadd__",
                "torch.Tensor.__imul__", "torch.Tensor.__itruediv__", "torch.Tensor.zero_",
                "mindspore.Tensor.add_"):
        assert is_in_place(api), api
    for api in ("torch.Tensor.__sub__", "torch.Tensor.add", "torch.Tensor.__init__",
                "torch.nn.functional.relu_", "torch.add"):
        assert not is_in_place(api), api


def test_the_calls_a_loss_depends_on_are_those_of_every_backward_and_autograd_grad():
    from opbench.model.replay.trainable import loss_dependencies
    calls = _hand_written_sgd_step()
    assert loss_dependencies(calls) == {0, 1}
    assert loss_dependencies([c for c in calls if not c.backward]) == set()

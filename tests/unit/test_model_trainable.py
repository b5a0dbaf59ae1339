"""Which external tensors a training step trains (opbench/model/replay/trainable.py): weights held as
plain leaf tensors and updated by hand are found by what the step does to them (written in
place with grad mode off, read by the loss), or by `torch.autograd.grad` naming them; the
script's data and an optimizer's buffers are not trained."""
from __future__ import annotations

from opbench.model.program import Call, Ext, Lit, Ref, Seq
from opbench.model.replay.trainable import (accumulated_onto, block_calls, is_in_place,
                                            loss_calls, trainable_externals)

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


def test_autograd_grad_that_changes_the_work_is_refused_with_the_keyword_named():
    """MindSpore replays torch.autograd.grad(loss, inputs) as value_and_grad over the
    forward; a second derivative or a vector-Jacobian product is another computation."""
    from dataclasses import replace
    from opbench.model.replay.executor import unreplayable_autograd_grad

    def grad_call(*args, **kwargs):
        written = tuple((k, Lit(v) if not isinstance(v, Ref) else v)
                        for k, v in kwargs.items())
        return replace(_call(3, "torch.autograd.grad", Ref(2), Seq("list", (Ext(0), Ext(1))), *args),
                       kwargs=written)
    assert unreplayable_autograd_grad(grad_call()) is None
    assert unreplayable_autograd_grad(grad_call(retain_graph=True)) is None
    assert unreplayable_autograd_grad(grad_call(create_graph=False)) is None
    assert "create_graph" in unreplayable_autograd_grad(grad_call(create_graph=True))
    assert "grad_outputs" in unreplayable_autograd_grad(grad_call(grad_outputs=Ref(1)))
    assert "grad_outputs" in unreplayable_autograd_grad(grad_call(Ref(1)))


def test_autograd_grad_s_loss_is_read_through_the_tuple_torch_passes_it_in():
    """torch.autograd.grad(loss, [w]) is captured as grad((loss,), (w,)): MindSpore's replay
    read its first argument as the loss and refused ("not made inside the step")."""
    from opbench.model.replay.trainable import loss_dependencies, loss_of
    calls = [_call(0, "torch.matmul", Ext(IMAGES), Ext(WEIGHT)),
             _call(1, "torch.sum", Ref(0)),
             _call(2, "torch.autograd.grad", Seq("tuple", (Ref(1),)),
                   Seq("tuple", (Ext(WEIGHT),)))]
    assert loss_of(calls[2]) == Ref(1)
    assert loss_dependencies(calls) == {0, 1}
    assert loss_of(calls[1]) is None                          # not a backward
    two = _call(3, "torch.autograd.grad", Seq("tuple", (Ref(0), Ref(1))), Ext(WEIGHT))
    assert loss_of(two) is None                               # several outputs


# -- gradient accumulation: one block per backward, summed until an update or a reset --------

def _accumulation_step(between: list[Call] = ()) -> list[Call]:
    """Two micro-batches: x0 = images[0] is sliced before the first backward, x1 = images[1]
    too; each loss = sum(linear(x_k, w, b)) / 2 is backwarded; `between` sits between the two
    backwards; the update `w.add_(g_w, alpha=-lr)` ends the step."""
    calls = [_call(0, "torch.Tensor.__getitem__", Ext(IMAGES), Lit(0)),
             _call(1, "torch.Tensor.__getitem__", Ext(IMAGES), Lit(1)),
             _call(2, "torch.nn.functional.linear", Ref(0), Ext(WEIGHT), Ext(BIAS)),
             _call(3, "torch.Tensor.sum", Ref(2), outputs=("tensor", (), "float32")),
             _call(4, "torch.Tensor.backward", Ref(3), backward=True, outputs=("none",))]
    calls += [_call(len(calls) + k, c.api, *c.args, grad_enabled=c.grad_enabled)
              for k, c in enumerate(between)]
    n = len(calls)
    calls += [_call(n, "torch.nn.functional.linear", Ref(1), Ext(WEIGHT), Ext(BIAS)),
              _call(n + 1, "torch.Tensor.sum", Ref(n), outputs=("tensor", (), "float32")),
              _call(n + 2, "torch.Tensor.backward", Ref(n + 1), backward=True,
                    outputs=("none",)),
              _call(n + 3, "torch.Tensor.add_", Ext(WEIGHT), Ext(GRAD_W), grad_enabled=False)]
    return calls


def test_a_second_backward_differentiates_the_calls_since_the_first():
    """The slice of the second micro-batch (1) was made before the first backward: it ran
    there already, and the second block reads its result (the first block's loss does not
    read it either)."""
    calls = _accumulation_step()
    assert block_calls(calls, calls[4]) == [0, 2, 3]
    assert block_calls(calls, calls[7]) == [5, 6]
    assert loss_calls(calls, Ref(6)) == [1, 5, 6]


def test_a_second_backward_accumulates_onto_the_first_until_an_update_or_a_reset():
    weights = frozenset({WEIGHT, BIAS})
    assert accumulated_onto(_accumulation_step(), weights) == {7: 4}
    # an optimizer's update between them (in place, grad mode off, on a weight): afresh
    update = _call(0, "torch.Tensor.add_", Ext(WEIGHT), Ext(GRAD_W), grad_enabled=False)
    assert accumulated_onto(_accumulation_step([update]), weights) == {}
    # zero_grad(set_to_none=False): the gradients zeroed in place
    reset = _call(0, "torch.Tensor.zero_", Ext(GRAD_W), grad_enabled=False)
    assert accumulated_onto(_accumulation_step([reset]), weights) == {}
    # an in-place write on a buffer (not a weight) or with grad mode on resets nothing
    buffer = _call(0, "torch.Tensor.mul_", Ext(BUFFER), Lit(0.9), grad_enabled=False)
    graded = _call(0, "torch.Tensor.add_", Ext(WEIGHT), Ext(GRAD_W))
    assert accumulated_onto(_accumulation_step([buffer, graded]), weights) == {9: 4}


def test_value_and_grad_and_autograd_grad_make_their_gradients_anew():
    calls = _accumulation_step()
    ms = [Call(index=c.index, framework="mindspore", api=c.api, kind=c.kind,
               replay_api=c.replay_api, args=c.args, kwargs=(), outputs=c.outputs,
               duration_ns=1, start_ns=0, backward=c.backward) for c in calls]
    assert accumulated_onto(ms, frozenset({WEIGHT})) == {}
    grads = [_call(c.index, "torch.autograd.grad", c.args[0], Seq("tuple", (Ext(WEIGHT),)))
             if c.backward else c for c in calls]
    assert accumulated_onto(grads, frozenset({WEIGHT})) == {}
    assert block_calls(grads, grads[7]) == [5, 6]

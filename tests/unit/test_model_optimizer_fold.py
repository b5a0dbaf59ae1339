"""torch SGD's and Adam's per-weight updates found in a step so the other framework
replays it as one fused kernel (opbench/model/replay/optimizer_fold.py); nothing else folds."""
from __future__ import annotations

from dataclasses import replace

from opbench.model.replay.optimizer_fold import adam_folds, adam_update_tolerances, sgd_momentum_folds
from opbench.model.program import Call, Ext, Lit, Ref

GRAD, PARAM, BUF = Ext(1), Ext(2), Ext(3)


def _call(index: int, api: str, args: tuple, kwargs: tuple = ()) -> Call:
    return Call(index=index, framework="torch", api=api, kind="tensor_method", replay_api=api,
                args=args, kwargs=kwargs, outputs=("tensor", (4,), "float32"), duration_ns=1,
                start_ns=0, grad_enabled=False)


def _update(start: int, buf=BUF, param=PARAM, grad=GRAD, momentum=0.9, alpha_b=None,
            lr=0.05) -> list[Call]:
    b_kwargs = () if alpha_b is None else (("alpha", Lit(alpha_b)),)
    return [_call(start, "torch.Tensor.mul_", (buf, Lit(momentum))),
            _call(start + 1, "torch.Tensor.add_", (Ref(start), grad), b_kwargs),
            _call(start + 2, "torch.Tensor.add_", (param, Ref(start + 1)),
                  (("alpha", Lit(-lr)),))]


def test_each_weights_three_calls_fold_with_its_rate_and_momentum():
    calls = [_call(0, "torch.relu", (Ext(0),)), *_update(1, alpha_b=1),
             *_update(4, buf=Ext(5), param=Ext(6), grad=Ext(7), momentum=0.8, lr=0.1)]
    folds = sgd_momentum_folds(calls)
    assert [(f.scale, f.accumulate, f.update) for f in folds] == [(1, 2, 3), (4, 5, 6)]
    first, second = folds
    assert (first.param, first.buf, first.grad) == (PARAM, BUF, GRAD)
    assert (first.learning_rate, first.momentum) == (0.05, 0.9)
    assert (second.param, second.buf, second.grad) == (Ext(6), Ext(5), Ext(7))
    assert (second.learning_rate, second.momentum) == (0.1, 0.8)


def test_dampening_changes_the_accumulation_and_does_not_fold():
    """MindSpore's ApplyMomentum adds the whole gradient: alpha = 1 - dampening must be 1."""
    assert sgd_momentum_folds(_update(0, alpha_b=0.5)) == []


def test_a_buffer_read_after_the_update_does_not_fold():
    """Nesterov reads the buffer again (grad.add(buf, alpha=momentum)): the calls' outputs
    are used elsewhere, so the fused kernel would change what that reads."""
    calls = _update(0) + [_call(3, "torch.Tensor.add", (GRAD, Ref(1)), (("alpha", Lit(0.9)),))]
    assert sgd_momentum_folds(calls) == []


def test_other_shapes_of_the_three_calls_do_not_fold():
    base = _update(0)
    not_a_rate = base[:2] + [replace(base[2], kwargs=(("alpha", Lit(0.05)),))]
    other_tensor = base[:2] + [replace(base[2], args=(PARAM, Ext(9)))]
    tensor_momentum = [replace(base[0], args=(BUF, Ext(8))), *base[1:]]
    for calls in (not_a_rate, other_tensor, tensor_momentum, base[:2]):
        assert sgd_momentum_folds(calls) == []


# -- Adam / AdamW -----------------------------------------------------------------------------

M, V = Ext(4), Ext(5)
TORCH_ADAMW = [  # one weight's update as torch 2.13's single-tensor AdamW records it
    ("torch.Tensor.__iadd__", (Ext(6), Lit(1)), ()),                     # 0 step += 1
    ("torch.Tensor.mul_", (PARAM, Lit(0.99999)), ()),                    # 1 weight decay
    ("torch.is_complex", (PARAM,), ()),                                  # 2
    ("torch.Tensor.lerp_", (M, GRAD, Lit(0.1)), ()),                     # 3 m
    ("torch.Tensor.mul_", (V, Lit(0.999)), ()),                          # 4 v *= beta2
    ("torch.Tensor.addcmul_", (Ref(4), GRAD, GRAD), (("value", Lit(0.001)),)),   # 5
    ("torch.Tensor.item", (Ref(0),), ()),                                # 6
    ("torch.Tensor.sqrt", (Ref(5),), ()),                                # 7
    ("torch.Tensor.__truediv__", (Ref(7), Lit(0.0836)), ()),             # 8 / sqrt(bc2)
    ("torch.Tensor.add_", (Ref(8), Lit(1e-8)), ()),                      # 9 + eps
    ("torch.Tensor.addcdiv_", (PARAM, Ref(3), Ref(9)), (("value", Lit(-0.0019)),)),  # 10
]


def _adam_calls(rows=TORCH_ADAMW) -> list[Call]:
    return [_call(i, api, args, kwargs) for i, (api, args, kwargs) in enumerate(rows)]


def test_an_adamw_update_folds_its_calls_and_its_decay_and_keeps_the_counter():
    """The decay folds as nn.AdamWeightDecay runs it (AdamWeightDecay kernel)."""
    (fold,) = adam_folds(_adam_calls())
    assert fold.folded == (1, 3, 4, 5, 7, 8, 9) and fold.update == 10
    assert fold.decay_factor == 0.99999
    assert (fold.param, fold.m, fold.v, fold.grad) == (PARAM, M, V, GRAD)
    assert fold.step_size == 0.0019 and fold.eps == 1e-8
    assert abs(fold.beta1 - 0.9) < 1e-12 and fold.beta2 == 0.999
    assert abs(fold.beta2_power - (1 - 0.0836 ** 2)) < 1e-12     # 1 - bias_correction2


def test_adam_does_not_fold_when_a_step_reads_its_denominator_or_the_moments_differ():
    read_twice = _adam_calls() + [_call(11, "torch.Tensor.sum", (Ref(9),))]
    assert adam_folds(read_twice) == []
    other_grad = list(TORCH_ADAMW)
    other_grad[5] = ("torch.Tensor.addcmul_", (Ref(4), GRAD, Ext(9)), (("value", Lit(0.001)),))
    assert adam_folds(_adam_calls(other_grad)) == []
    wrong_share = list(TORCH_ADAMW)
    wrong_share[5] = ("torch.Tensor.addcmul_", (Ref(4), GRAD, GRAD), (("value", Lit(0.5)),))
    assert adam_folds(_adam_calls(wrong_share)) == []


def test_adam_without_decay_folds_its_update_alone():
    without_decay = list(TORCH_ADAMW)
    without_decay[1] = ("torch.is_complex", (PARAM,), ())          # Adam: no decay call
    (fold,) = adam_folds(_adam_calls(without_decay))
    assert fold.decay_factor == 1.0 and len(fold.folded) == 6


def test_a_scaling_of_the_weight_whose_result_is_read_is_not_a_decay():
    read = _adam_calls() + [_call(11, "torch.Tensor.sum", (Ref(1),))]
    (fold,) = adam_folds(read)
    assert fold.decay_factor == 1.0 and 1 not in fold.folded


def test_adam_updates_may_differ_by_twice_their_step_size_between_frameworks():
    """A weight whose gradient is 0 up to rounding moves by the step size either way."""
    calls = _adam_calls()
    assert adam_update_tolerances(calls) == {10: 2 * 0.0019}
    ms_adam = replace(_call(0, "mindspore.nn.Adam", (Ext(1),)),
                      init=(("learning_rate", 0.01), ("beta1", 0.9)))
    assert adam_update_tolerances([ms_adam]) == {0: 0.02}


def test_an_adamw_decay_the_update_reads_the_weight_from_folds():
    """As torch 2.13 records it: the weight after mul_ is mul_'s output (read by the update
    and by an is_complex check)."""
    rows = list(TORCH_ADAMW)
    rows[2] = ("torch.is_complex", (Ref(1),), ())
    rows[10] = ("torch.Tensor.addcdiv_", (Ref(1), Ref(3), Ref(9)), (("value", Lit(-0.0019)),))
    (fold,) = adam_folds(_adam_calls(rows))
    assert fold.decay_factor == 0.99999 and fold.folded[0] == 1 and fold.param == Ref(1)

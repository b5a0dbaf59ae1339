"""torch SGD's per-weight update (mul_, add_, add_) found in a step so the other framework
replays it as one fused kernel (opbench/model/optimizer_fold.py); nothing else folds."""
from __future__ import annotations

from dataclasses import replace

from opbench.model.optimizer_fold import sgd_momentum_folds
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

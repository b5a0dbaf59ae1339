"""A torch optimizer's per-weight update as the one fused kernel a MindSpore port calls.

SGD with momentum:

torch's SGD with momentum on CPU (the single-tensor path) updates each weight with three
in-place calls: `buf.mul_(momentum)`, `buf.add_(grad, alpha=1 - dampening)`,
`param.add_(buf, alpha=-lr)`. A port calls `nn.SGD`, whose update is one `ApplyMomentum`
kernel per weight. Replayed call by call in MindSpore (each written back with ops.assign)
the three cost ~29 ms a step of the CNN example that its port does not spend (docs/model.md),
so the other framework's replay folds each such update: the calls before the last pass
their receiver through, the last runs the fused kernel.

Only the exact pattern folds (dampening 0, so MindSpore's `accum = accum * momentum + grad`
is torch's; no Nesterov, whose third call reads another tensor), and only when the first two
calls' outputs are used by nothing but the next call of the triple.

Adam and AdamW (torch's single-tensor path on CPU): per weight `m.lerp_(grad, 1 - beta1)`,
`v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)`, `denom = (v.sqrt() / sqrt(bc2))
.add_(eps)`, `param.addcdiv_(m, denom, value=-lr / bc1)` (bc: the bias corrections), with
the step counter's `+= 1` and `.item()` and AdamW's `param.mul_(1 - lr * wd)` in between,
which stay calls of their own. MindSpore's `ops.Adam` kernel (what nn.Adam runs) computes
the same update with lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power): with
beta1_power 0, beta2_power 1 - bc2 and lr = lr / bc1 it is torch's step (eps then scales by
sqrt(bc2), a difference of order eps). AdamW's decay `param.mul_(1 - lr * wd)` folds too,
as MindSpore's nn.AdamWeightDecay runs it: its AdamWeightDecay kernel computes
var -= lr_k * (m / (sqrt(v) + eps_k) + decay_k * var), which is torch's AdamW step exactly
with lr_k = lr / bc1 * sqrt(bc2), eps_k = eps * sqrt(bc2) and decay_k = (1 - factor) / lr_k
(checked against numpy on MindSpore 2.10's CPU kernel). An AdamW model replayed call by call in MindSpore
also hits three calls MindSpore has no mapping for (lerp_, addcmul_, addcdiv_: 3.5% of a
CNN's traced step left out, and every weight left unchanged).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from opbench.model.bound_args import bind
from opbench.model.program import Call, Lit, Ref, walk_args

__all__ = ["MomentumFold", "AdamFold", "sgd_momentum_folds", "adam_folds", "FOLDED_INTO",
           "adam_update_tolerances", "adam_weight_decay_step_bound"]

MUL, ADD = "torch.Tensor.mul_", "torch.Tensor.add_"
LERP, ADDCMUL, SQRT, DIV, ADDCDIV = ("torch.Tensor.lerp_", "torch.Tensor.addcmul_",
                                     "torch.Tensor.sqrt", "torch.Tensor.__truediv__",
                                     "torch.Tensor.addcdiv_")
# what a folded call replays as (the report's "replayed as"): one name for every fold, so
# the signature rows group them
FOLDED_INTO = "(folded into the optimizer update after it)"


@dataclass(frozen=True)
class MomentumFold:
    scale: int             # buf.mul_(momentum)
    accumulate: int        # buf.add_(grad)
    update: int            # param.add_(buf, alpha=-lr)
    param: Any             # program arguments of the fused call
    buf: Any
    grad: Any
    learning_rate: float
    momentum: float

    @property
    def folded(self) -> tuple[int, ...]:
        return (self.scale, self.accumulate)


def _alpha(call: Call) -> float | None:
    """The call's alpha (1 when not given); None when it is not a literal number."""
    if {k for k, _ in call.kwargs} - {"alpha"}:
        return None
    value = bind(("alpha",), (), call.kwargs, alpha=Lit(1)).alpha
    if isinstance(value, Lit) and isinstance(value.value, (int, float)) \
            and not isinstance(value.value, bool):
        return float(value.value)
    return None


def _uses(calls: Sequence[Call]) -> dict[int, int]:
    """How many times each call's output is read by the step's calls."""
    counts: dict[int, int] = {}
    for call in calls:
        leaves = [*walk_args(call.args), *walk_args(tuple(v for _, v in call.kwargs))]
        if call.alias_of is not None:
            leaves.append(call.alias_of)
        for leaf in leaves:
            if isinstance(leaf, Ref):
                counts[leaf.call] = counts.get(leaf.call, 0) + 1
    return counts


def sgd_momentum_folds(calls: Sequence[Call]) -> list[MomentumFold]:
    folds, uses, i = [], _uses(calls), 0
    while i + 2 < len(calls):
        a, b, c = calls[i], calls[i + 1], calls[i + 2]
        fold = _fold(a, b, c, uses)
        if fold is None:
            i += 1
            continue
        folds.append(fold)
        i += 3
    return folds


def _fold(a: Call, b: Call, c: Call, uses: dict[int, int]) -> MomentumFold | None:
    if (a.replay_api, b.replay_api, c.replay_api) != (MUL, ADD, ADD):
        return None
    if len(a.args) != 2 or a.kwargs or not isinstance(a.args[1], Lit):
        return None
    momentum = a.args[1].value
    if not isinstance(momentum, (int, float)) or isinstance(momentum, bool):
        return None
    if len(b.args) != 2 or b.args[0] != Ref(a.index) or _alpha(b) != 1.0:
        return None
    lr = _alpha(c)
    if len(c.args) != 2 or c.args[1] != Ref(b.index) or lr is None or lr >= 0:
        return None
    if uses.get(a.index, 0) != 1 or uses.get(b.index, 0) != 1:
        return None
    return MomentumFold(a.index, b.index, c.index, param=c.args[0], buf=a.args[0],
                        grad=b.args[1], learning_rate=-lr, momentum=float(momentum))


@dataclass(frozen=True)
class AdamFold:
    folded: tuple[int, ...]    # lerp_, mul_, addcmul_, sqrt, __truediv__, add_
    update: int                # param.addcdiv_(m, denom, value=-step_size)
    param: Any
    m: Any
    v: Any
    grad: Any
    step_size: float           # lr / bias_correction1
    beta1: float
    beta2: float
    eps: float
    beta2_power: float         # 1 - bias_correction2
    # AdamW's decay `param.mul_(1 - lr * weight_decay)` before the update, folded into it as
    # MindSpore's nn.AdamWeightDecay runs it (its AdamWeightDecay kernel): 1 without decay
    decay_factor: float = 1.0


def _number(value: Any) -> float | None:
    if isinstance(value, Lit) and isinstance(value.value, (int, float)) \
            and not isinstance(value.value, bool):
        return float(value.value)
    return None


def _keyword_number(call: Call, name: str) -> float | None:
    given = dict(call.kwargs)
    if set(given) - {name} or name not in given:
        return None
    return _number(given[name])


def adam_folds(calls: Sequence[Call]) -> list[AdamFold]:
    """Each weight's Adam update, found from its last call (addcdiv_) back along the data
    flow; the calls between that are not part of it (the step counter, AdamW's decay) stay."""
    uses, folds = _uses(calls), []
    for c in calls:
        fold = _adam(calls, c, uses)
        if fold is not None:
            folds.append(fold)
    return folds


def _producer(calls: Sequence[Call], ref: Any, api: str, uses: dict[int, int]) -> Call | None:
    if not isinstance(ref, Ref) or ref.path or not 0 <= ref.call < len(calls):
        return None
    call = calls[ref.call]
    if call.replay_api != api or uses.get(call.index, 0) != 1:
        return None
    return call


def _adam(calls: Sequence[Call], update: Call, uses: dict[int, int]) -> AdamFold | None:
    if update.replay_api != ADDCDIV or len(update.args) != 3:
        return None
    step_size = _keyword_number(update, "value")
    lerp = _producer(calls, update.args[1], LERP, uses)
    add = _producer(calls, update.args[2], ADD, uses)
    if step_size is None or step_size >= 0 or lerp is None or add is None:
        return None
    div = _producer(calls, add.args[0], DIV, uses)
    sqrt = _producer(calls, div.args[0], SQRT, uses) if div and len(div.args) == 2 else None
    addcmul = (_producer(calls, sqrt.args[0], ADDCMUL, uses)
               if sqrt and len(sqrt.args) == 1 else None)
    mul = (_producer(calls, addcmul.args[0], MUL, uses)
           if addcmul and len(addcmul.args) == 3 else None)
    if mul is None or len(mul.args) != 2 or len(lerp.args) != 3 or len(add.args) != 2:
        return None
    grad = lerp.args[1]
    if addcmul.args[1] != grad or addcmul.args[2] != grad or mul.kwargs or lerp.kwargs \
            or add.kwargs or div.kwargs or sqrt.kwargs:
        return None
    weight, beta2, eps = _number(lerp.args[2]), _number(mul.args[1]), _number(add.args[1])
    bc2_sqrt, v_share = _number(div.args[1]), _keyword_number(addcmul, "value")
    if None in (weight, beta2, eps, bc2_sqrt, v_share) or abs(v_share - (1 - beta2)) > 1e-6:
        return None
    folded = (lerp.index, mul.index, addcmul.index, sqrt.index, div.index, add.index)
    decay = _decay(calls, update, uses)
    return AdamFold(folded if decay is None else (decay.index, *folded),
                    update.index, param=update.args[0], m=lerp.args[0], v=mul.args[0],
                    grad=grad, step_size=-step_size, beta1=1 - weight, beta2=beta2, eps=eps,
                    beta2_power=1 - bc2_sqrt ** 2,
                    decay_factor=1.0 if decay is None else float(decay.args[1].value))


def _decay(calls: Sequence[Call], update: Call, uses: dict[int, int]) -> Call | None:
    """AdamW's `param.mul_(1 - lr * weight_decay)`: a call that scales the weight in place
    by a literal factor in (0, 1) before the update, either the call the update's weight
    comes from (torch 2.13's single-tensor AdamW: the capture sees the weight as mul_'s
    output) or the nearest before it on the same weight whose output nothing reads."""
    param = update.args[0]
    if isinstance(param, Ref) and not param.path and 0 <= param.call < len(calls):
        made = calls[param.call]
        factor = _number(made.args[1]) if len(made.args) == 2 else None
        if made.replay_api == MUL and not made.kwargs and factor is not None \
                and 0.0 < factor < 1.0:
            return made
    for call in reversed(calls[:update.index]):
        if call.replay_api == MUL and len(call.args) == 2 and not call.kwargs \
                and call.args[0] == param and uses.get(call.index, 0) == 0:
            factor = _number(call.args[1])
            return call if factor is not None and 0.0 < factor < 1.0 else None
    return None


def adam_update_tolerances(calls: Sequence[Call]) -> dict[int, float]:
    """Per Adam update call (torch's folded addcdiv_, a MindSpore nn.Adam or
    nn.AdamWeightDecay Cell's call), the
    absolute difference its updated weights may show between two frameworks that both
    update right: Adam moves a weight by up to about its step size whatever the gradient's
    size, so a weight whose gradient is 0 up to rounding (a conv bias before a BatchNorm)
    moves by the step size in the direction of its rounding, which differs between the
    frameworks: up to twice the step size apart. Their output check allows that much (not a
    MISMATCH); a wrong update is off by more than that at the points compared."""
    found = {fold.update: 2.0 * fold.step_size for fold in adam_folds(calls)}
    for call in calls:
        if call.replay_api == "mindspore.nn.Adam":
            rate = bind(("learning_rate",), (), call.init).learning_rate
            if isinstance(rate, (int, float)) and not isinstance(rate, bool):
                found[call.index] = 2.0 * float(rate)
        elif call.replay_api == "mindspore.nn.AdamWeightDecay":
            step = adam_weight_decay_step_bound(dict(call.init))
            if step is not None:
                found[call.index] = 2.0 * step
    return found


def adam_weight_decay_step_bound(settings: dict[str, Any]) -> float | None:
    """How far one nn.AdamWeightDecay step moves a weight at most, decay aside (the decay
    moves it alike in both frameworks): lr * |m| / sqrt(v). Without bias correction that
    ratio is not at most 1 as Adam's is: m and v are sums of b1^k (1 - b1) g and
    b2^k (1 - b2) g^2, and by Cauchy-Schwarz |m| / sqrt(v) <= (1 - b1) / sqrt((1 - b2)
    (1 - b1^2 / b2)): 7.3 at the defaults (0.9, 0.999; a constant gradient reaches 6.6 at
    step 12). None: settings that do not bound it (b1^2 >= b2)."""
    try:
        rate, beta1, beta2 = (float(settings[k]) for k in ("learning_rate", "beta1", "beta2"))
    except (KeyError, TypeError, ValueError):
        return None
    if not 0.0 <= beta1 < 1.0 or not 0.0 < beta2 < 1.0 or beta1 ** 2 >= beta2:
        return None
    return rate * (1.0 - beta1) / math.sqrt((1.0 - beta2) * (1.0 - beta1 ** 2 / beta2))

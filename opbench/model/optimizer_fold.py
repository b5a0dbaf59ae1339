"""A torch optimizer's per-weight update as the one fused kernel a MindSpore port calls.

torch's SGD with momentum on CPU (the single-tensor path) updates each weight with three
in-place calls: `buf.mul_(momentum)`, `buf.add_(grad, alpha=1 - dampening)`,
`param.add_(buf, alpha=-lr)`. A port calls `nn.SGD`, whose update is one `ApplyMomentum`
kernel per weight. Replayed call by call in MindSpore (each written back with ops.assign)
the three cost ~29 ms a step of the CNN example that its port does not spend (docs/model.md),
so the other framework's replay folds each such triple: the first two calls pass their
receiver through, the third runs the fused update.

Only the exact pattern folds (dampening 0, so MindSpore's `accum = accum * momentum + grad`
is torch's; no Nesterov, whose third call reads another tensor), and only when the first two
calls' outputs are used by nothing but the next call of the triple.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from opbench.model.program import Call, Lit, Ref, walk_args

__all__ = ["MomentumFold", "sgd_momentum_folds", "FOLDED_INTO"]

MUL, ADD = "torch.Tensor.mul_", "torch.Tensor.add_"
# what a folded call replays as (the report's "replayed as"): one name for every fold, so
# the signature rows group them
FOLDED_INTO = "(folded into the SGD update after it)"


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


def _alpha(call: Call) -> float | None:
    """The call's alpha (1 when not given); None when it is not a literal number."""
    given = dict(call.kwargs)
    if set(given) - {"alpha"}:
        return None
    value = given.get("alpha", Lit(1))
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

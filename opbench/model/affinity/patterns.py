"""Candidates for a swap in one captured step: single calls and patterns of calls linked by
the data flow (Refs) that have an equivalent in the script's own framework, with the
families and replacement APIs of the static scan's catalogue (opbench/data/
affinity_families.yaml: one vocabulary for `scan --affinity` and `model --suggest`).

A pattern is matched on what the data flow shows, not on how the source spelled it: a
formula's calls are the ones between one input value and the formula's result, each used
only inside the formula, whose operations and constants are the family's (GELU's 0.044715,
softplus' 1). Nothing here decides that a swap computes the same thing: the replay checks
the outputs (measure.py), and a swap whose outputs differ is dropped and listed.

Every occurrence of one family at one source site is one candidate (a line inside a layer
run twelve times per step is one change to the code: its saving is all twelve).
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from opbench.model.affinity.graph import StepGraph, Value
from opbench.model.affinity.optimizer_loop import steps_an_optimizer, update_loop
from opbench.model.program import Dtype, Ext, Lit, Ref, Seq, Site
from opbench.model.replay.trainable import is_in_place
from opbench.model.replay.training_routes import TORCH_SGD
from opbench.model.steady import StepProgram

__all__ = ["New", "NewCall", "Swap", "MadeOnce", "Candidate", "find_candidates",
           "ROUTE_FAMILY", "MS_ROUTE_ALTERNATIVES", "MAX_FORMULA_CALLS", "MAX_MADE_ONCE_VALUES"]

# A formula written by hand is a handful of calls (GELU's tanh form: 8); a larger region
# is a model, not an activation.
MAX_FORMULA_CALLS = 10
ROUTE_FAMILY = "mindspore.route"
# MindSpore's routes of one operation that take the same positional arguments: a call
# written one way with positional arguments only is tried the other way. Each name was
# checked to exist in both modules with MindSpore 2.10.0.
MS_ROUTE_ALTERNATIVES = {
    **{f"mindspore.ops.{n}": f"mindspore.mint.{n}" for n in (
        "abs", "add", "bmm", "cos", "div", "erf", "exp", "log", "matmul", "mean", "mul",
        "neg", "ones_like", "rsqrt", "sigmoid", "sin", "softmax", "sqrt", "square", "sub",
        "sum", "tanh", "where", "zeros_like")},
    **{f"mindspore.ops.{n}": f"mindspore.mint.nn.functional.{n}" for n in (
        "relu", "gelu", "silu", "softplus")},
}
MS_ROUTE_ALTERNATIVES.update({v: k for k, v in list(MS_ROUTE_ALTERNATIVES.items())
                              if v.startswith("mindspore.mint.")
                              and v.rsplit(".", 1)[-1] not in ("sigmoid", "tanh",
                                                               "softmax")})
_HOST_SYNCS = frozenset({"item", "asnumpy", "tolist", "numpy"})
# A tensor made from constants each step and hoisted: its values travel in the replay
# request (ExternalTensor.values), so a large one is left alone: 65,536 values (a 256x256
# mask) are ~0.4 MB of JSON per request.
MAX_MADE_ONCE_VALUES = 65_536
# Calls that write into their first operand (a hoisted tensor written each step is not the
# same tensor every step): in-place methods (replay/trainable.is_in_place) and these.
_WRITES_INTO = frozenset({"__setitem__", "assign", "assign_sub", "assign_add", "copy_"})


@dataclass(frozen=True)
class New:
    """An argument of a replacement call: the output of the group's k-th new call."""
    k: int


@dataclass(frozen=True)
class NewCall:
    api: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...] = ()
    kind: str = "function"
    init: tuple[tuple[str, Any], ...] = ()
    shape: tuple[int, ...] | None = None     # a helper's output (None: the pattern's)
    dtype: str | None = None                 # a helper's output dtype (None: the pattern's)
    # The element of the call's result that stands for the pattern's output (a primitive
    # returning (y, mean, variance): (0,)), and the described outputs of the other elements
    # after it; () : the whole result.
    pick: tuple[int, ...] = ()
    extra_outputs: tuple[Any, ...] = ()
    # The element of the call's result the replay returns (program.Call.pick), where the
    # pattern's output is one element of a larger result: nn.SGD's call returns every
    # weight, the ops.assign it replaces returned its own weight. None: the whole result.
    returns: int | None = None
    # The arguments in the output check's program (swap.py, whole_results) where they are
    # not `args`: torch's optimizer is checked on the loop's own gradients (the externals
    # its `p.grad` reads are) and timed as the fixed script steps it, on what the replayed
    # backward left in `.grad`. None: `args`.
    checked_args: tuple[Any, ...] | None = None


@dataclass(frozen=True)
class Swap:
    """One occurrence: the calls removed (the last is the pattern's output call, `root`)
    and the calls put in its place; the last new call's output stands for the root's
    output. No new calls: the calls are removed (a host sync nothing reads)."""
    removed: tuple[int, ...]
    root: int
    new_calls: tuple[NewCall, ...]
    # Removed calls whose output is one element of the last new call's whole result, with
    # that element: an optimizer loop's write-backs, each its weight's place in nn.SGD's
    # result. The output check replays the swap with the whole result and compares each
    # (swap.py, whole_results); the timed swap returns the root's element alone.
    stands_for: tuple[tuple[int, int], ...] = ()
    # The root's output made once, before the step (a tensor the step made from constants):
    # the swapped program reads it as an external with these values (swap.py); no new calls.
    made_once: MadeOnce | None = None
    # Where the removed root's readers read instead (a Ref or Ext of the original step): a
    # host sync removed, its readers take the tensor it read back. None: nothing reads it.
    reads_instead: Any = None


@dataclass(frozen=True)
class MadeOnce:
    """A tensor made once before the step: what the creation call it replaces returned."""
    shape: tuple[int, ...]
    dtype: str
    values: tuple[float | int, ...]          # row-major; 0/1 for bool


@dataclass(frozen=True)
class Candidate:
    family: str                # catalogue id (torch.silu_formula), or ROUTE_FAMILY
    framework: str
    api: str                   # what is there now: the replaced calls' APIs
    affinity_api: str          # what replaces it
    api_type: str              # the catalogue's: function | method | pattern
    site: Site | None
    swaps: tuple[Swap, ...]    # every occurrence at this site in the step
    replacement: str           # the replacement as code, with the operands' names

    @property
    def calls(self) -> int:
        """Calls replaced per step."""
        return sum(len(s.removed) for s in self.swaps)


@dataclass(frozen=True)
class _Match:
    kind: str                  # the catalogue's kind (silu_formula) or "route"
    swap: Swap
    affinity_api: str
    replacement: str


# -- formulas of one input ------------------------------------------------------------------
def _region(g: StepGraph, root: int, x: Value, allowed: frozenset[str]) -> list[int] | None:
    """The calls between x and root, if every one of them reads only x and each other,
    is of an allowed operation, and (root aside) is read only inside the region."""
    region: set[int] = set()
    todo = [root]
    while todo:
        i = todo.pop()
        if i in region:
            continue
        if g.ops[i] not in allowed or len(region) >= MAX_FORMULA_CALLS:
            return None
        region.add(i)
        for v in g.tensors(i):
            if v == x:
                continue
            p = g.producer(v)
            if p is None:
                return None
            todo.append(p)
    if not any(x in g.tensors(i) for i in region):
        return None
    for i in region:
        if i != root and not g.only_used_by(i, region):
            return None
    return sorted(region)


def _inputs_upstream(g: StepGraph, root: int, limit: int = MAX_FORMULA_CALLS) -> list[Value]:
    """Values read by root's nearest ancestors: the candidates for a formula's input."""
    seen_calls, values, todo = set(), [], [root]
    while todo and len(seen_calls) < limit:
        i = todo.pop(0)
        if i in seen_calls:
            continue
        seen_calls.add(i)
        for v in g.tensors(i):
            if v not in values:
                values.append(v)
            p = g.producer(v)
            if p is not None:
                todo.append(p)
    return values


def _numbers(g: StepGraph, index: int) -> list[float]:
    """The call's literal numbers (a bool is not one)."""
    return [v for v in g.literals(index) if isinstance(v, (int, float))
            and not isinstance(v, bool)]


def _formula(g: StepGraph, root: int, allowed: frozenset[str],
             accept: Callable[[Counter, list[Any]], bool]) -> tuple[Value, list[int]] | None:
    """The largest region of a formula in one input ending at root that `accept` takes
    (given its operations and its literal constants)."""
    best = None
    for x in _inputs_upstream(g, root):
        region = _region(g, root, x, allowed)
        if region is None or (best and len(region) <= len(best[1])):
            continue
        ops = Counter(g.ops[i] for i in region)
        constants = [v for i in region for v in _numbers(g, i)]
        if accept(ops, constants):
            best = (x, region)
    return best


def _near(values: list[Any], target: float, rel: float = 1e-3) -> bool:
    return any(abs(v - target) <= rel * abs(target) for v in values)


@dataclass(frozen=True)
class _Apis:
    """The replacement APIs of one framework (the catalogue's, where MindSpore 2.10 has a
    CPU kernel for them)."""
    silu: str
    gelu: str
    softplus: str
    softmax: str
    log_softmax: str
    linear: str
    t: str
    masked_fill: str
    layer_norm: str
    rms_norm: str | None        # None: no replacement built (MindSpore's needs a gamma)


_TORCH_APIS = _Apis(
    silu="torch.nn.functional.silu", gelu="torch.nn.functional.gelu",
    softplus="torch.nn.functional.softplus", softmax="torch.softmax",
    log_softmax="torch.nn.functional.log_softmax", linear="torch.nn.functional.linear",
    t="torch.Tensor.t", masked_fill="torch.Tensor.masked_fill",
    layer_norm="torch.nn.functional.layer_norm", rms_norm="torch.nn.functional.rms_norm")
# MindSpore 2.10 on CPU: mint.nn.functional.gelu has no kernel (the MindSpore GELU pair's
# swap "did not run" through it); ops.gelu runs, and is what ports write.
# mint.nn.functional.layer_norm and ops.layer_norm both fail with
# "Create kernelmod for op LayerNormExt failed"; the ops.LayerNorm primitive runs (2.4e-7
# off numpy's layer norm on 4x8 float32): the layer norm is built from it (_ms_layer_norm).
_MINDSPORE_APIS = _Apis(
    silu="mindspore.mint.nn.functional.silu", gelu="mindspore.ops.gelu",
    softplus="mindspore.mint.nn.functional.softplus", softmax="mindspore.ops.softmax",
    log_softmax="mindspore.ops.log_softmax", linear="mindspore.mint.nn.functional.linear",
    t="mindspore.ops.transpose", masked_fill="mindspore.ops.masked_fill",
    layer_norm="mindspore.ops.LayerNorm", rms_norm=None)


def _names(framework: str) -> _Apis:
    return _TORCH_APIS if framework == "torch" else _MINDSPORE_APIS


def _unary(g: StepGraph, root: int, framework: str) -> _Match | None:
    names = _names(framework)
    ops = g.ops[root]
    if ops == "mul":
        found = _formula(g, root, frozenset({"mul", "sigmoid"}),
                         lambda c, k: c == Counter({"mul": 1, "sigmoid": 1}))
        if found:
            return _one(found, root, "silu_formula", names.silu, ())
        found = _formula(g, root, frozenset({"mul", "add", "pow", "tanh"}),
                         lambda c, k: c["tanh"] == 1 and _near(k, 0.044715))
        if found:
            return _one(found, root, "gelu_formula", names.gelu,
                        (("approximate", Lit("tanh")),))
        found = _formula(g, root, frozenset({"mul", "add", "div", "erf"}),
                         lambda c, k: c["erf"] == 1 and (_near(k, math.sqrt(2.0))
                                                         or _near(k, math.sqrt(0.5))))
        if found:
            return _one(found, root, "gelu_formula", names.gelu, ())
        if names.rms_norm is not None:
            found = _formula(g, root, frozenset({"mul", "pow", "square", "mean", "add",
                                                 "rsqrt"}),
                             lambda c, k: c["mean"] == 1 and c["rsqrt"] == 1)
            if found:
                return _norm(g, found, root, "rms_norm_composed", names.rms_norm)
    if ops in ("log", "log1p"):
        found = _formula(g, root, frozenset({"exp", "add", "log", "log1p"}),
                         lambda c, k: c["exp"] == 1 and (
                             c == Counter({"exp": 1, "log1p": 1})
                             or (c == Counter({"exp": 1, "add": 1, "log": 1}) and _near(k, 1))))
        if found:
            return _one(found, root, "softplus_formula", names.softplus, ())
    if ops == "log":
        found = _formula(g, root, frozenset({"softmax", "log"}),
                         lambda c, k: c == Counter({"softmax": 1, "log": 1}))
        if found:
            dim = _dim(g, found[1][0])
            if dim is not None:
                return _one(found, root, "log_softmax_composed", names.log_softmax,
                            (), (Lit(dim),))
    if ops == "div":
        # exp(x) / exp(x).sum(-1, keepdim=True) computes exp twice: two exp calls of x
        found = _formula(g, root, frozenset({"exp", "sum", "div"}),
                         lambda c, k: c in (Counter({"exp": 1, "sum": 1, "div": 1}),
                                            Counter({"exp": 2, "sum": 1, "div": 1})))
        if found and all(g.tensors(i) == [found[0]] for i in found[1] if g.ops[i] == "exp"):
            summed = [i for i in found[1] if g.ops[i] == "sum"][0]
            dim = _dim(g, summed)
            if dim is not None and _keepdim(g, summed):
                return _one(found, root, "softmax_composed", names.softmax, (), (Lit(dim),))
        found = _formula(g, root, frozenset({"mean", "sub", "var", "add", "sqrt", "div",
                                             "pow", "mul"}),
                         lambda c, k: c["mean"] >= 1 and c["sub"] >= 1 and c["sqrt"] == 1)
        if found:
            return _norm(g, found, root, "layer_norm_composed", names.layer_norm)
    return None


def _one(found: tuple[Value, list[int]], root: int, kind: str, api: str,
         kwargs: tuple[tuple[str, Any], ...], extra: tuple[Any, ...] = ()) -> _Match:
    x, region = found
    new = NewCall(api, (x, *extra), kwargs)
    shown = ", ".join(["x", *(repr(e.value) for e in extra),
                       *(f"{k}={v.value!r}" for k, v in kwargs)])
    return _Match(kind, Swap(tuple(region), root, (new,)), api, f"{api}({shown})")


def _dim(g: StepGraph, index: int) -> int | None:
    found = g.kwarg(index, "dim", "axis")
    if found is None:
        numbers = [v for v in g.literals(index) if isinstance(v, int)
                   and not isinstance(v, bool)]
        found = numbers[0] if numbers else None
    return found if isinstance(found, int) else None


def _keepdim(g: StepGraph, index: int) -> bool:
    found = g.kwarg(index, "keepdim", "keep_dims")
    if found is None:
        bools = [v for v in g.literals(index) if isinstance(v, bool)]
        found = bools[0] if bools else False
    return bool(found)


def _affine(g: StepGraph, root: int, hidden: int) -> tuple[list[int], Value, Value | None] | None:
    """The `* gamma (+ beta)` a layer norm's result goes through: the calls, gamma and beta
    (None when no add follows), when each reads a (hidden,) vector and only the next one
    reads its result."""
    users = g.consumers[root]
    if len(users) != 1 or g.ops[users[0]] != "mul":
        return None
    mul = users[0]
    others = [v for v in g.tensors(mul) if v != Ref(root)]
    if len(others) != 1 or g.shape(others[0]) != (hidden,):
        return None
    gamma = others[0]
    after = g.consumers[mul]
    if len(after) == 1 and g.ops[after[0]] == "add":
        added = [v for v in g.tensors(after[0]) if v != Ref(mul)]
        if len(added) == 1 and g.shape(added[0]) == (hidden,):
            return [mul, after[0]], gamma, added[0]
    return [mul], gamma, None


def _norm(g: StepGraph, found: tuple[Value, list[int]], root: int, kind: str,
          api: str) -> _Match | None:
    """A norm over the last dimension (every mean's dim -1): eps is the add's constant. A
    layer norm's `* gamma + beta` after it is taken into the one call (the fixed form
    F.layer_norm(x, (H,), gamma, beta, eps) saves those two elementwise calls too)."""
    x, region = found
    shape = g.shape(x)
    if not shape:
        return None
    for i in region:
        if g.ops[i] in ("mean", "var") and _dim(g, i) not in (-1, len(shape) - 1):
            return None
    adds = [v for i in region if g.ops[i] == "add" for v in g.literals(i)
            if isinstance(v, float)]
    eps = adds[0] if adds else 1e-5
    hidden = Seq("tuple", (Lit(shape[-1]),))
    if kind == "rms_norm_composed":
        new = NewCall(api, (x, hidden), (("eps", Lit(eps)),))
        return _Match(kind, Swap(tuple(region), root, (new,)), api,
                      f"{api}(x, ({shape[-1]},), eps={eps!r})")
    affine = _affine(g, root, shape[-1])
    gamma, beta = (affine[1], affine[2]) if affine else (None, None)
    calls = sorted(region + (affine[0] if affine else []))
    end = calls[-1]
    shown = ", ".join(["x", f"({shape[-1]},)"] + (["gamma"] if gamma is not None else [])
                      + (["beta"] if beta is not None else []))
    if g.step.framework == "mindspore":
        return _ms_layer_norm(g, x, gamma, beta, eps, calls, end, api)
    new = NewCall(api, (x, hidden, gamma if gamma is not None else Lit(None),
                        beta if beta is not None else Lit(None)), (("eps", Lit(eps)),))
    return _Match(kind, Swap(tuple(calls), end, (new,)), api,
                  f"{api}({shown}, eps={eps!r})")


def _ms_layer_norm(g: StepGraph, x: Value, gamma: Value | None, beta: Value | None,
                   eps: float, calls: list[int], end: int, api: str) -> _Match | None:
    """ops.LayerNorm(begin_norm_axis=-1, begin_params_axis=-1, epsilon)(x, gamma, beta)[0]:
    the primitive needs both vectors; a norm without them is left alone (a ones/zeros
    pair made each step would cost what the swap saves)."""
    if gamma is None or beta is None:
        return None
    shape = g.shape(x) or ()
    stats = ("tensor", tuple(shape[:-1]) + (1,), g.dtype(x) or "float32")
    new = NewCall(api, (x, gamma, beta), kind="primitive",
                  init=(("begin_norm_axis", -1), ("begin_params_axis", -1), ("epsilon", eps)),
                  pick=(0,), extra_outputs=(stats, stats))
    return _Match("layer_norm_composed", Swap(tuple(calls), end, (new,)), api,
                  f"{api}(begin_norm_axis=-1, begin_params_axis=-1, epsilon={eps!r})"
                  f"(x, gamma, beta)[0]")


# -- patterns of two operands --------------------------------------------------------------
def _transposed(g: StepGraph, value: Value, user: int) -> Value | None:
    """The untransposed operand when `value` is a 2-D transpose only `user` reads."""
    p = g.producer(value)
    if p is None or not g.only_used_by(p, {user}):
        return None
    operands = g.tensors(p)
    if len(operands) != 1 or len(g.shape(operands[0]) or ()) != 2:
        return None
    return operands[0] if _last_two_swapped(g, p, 2) else None


def _linear(g: StepGraph, root: int, framework: str) -> _Match | None:
    names = _names(framework)
    if g.ops[root] != "add":
        return None
    operands = g.tensors(root)
    if len(operands) != 2:
        return None
    for m_value, bias in (operands, operands[::-1]):
        m = g.producer(m_value)
        if m is None or g.ops[m] != "matmul" or not g.only_used_by(m, {root}):
            continue
        mm = g.tensors(m)
        if len(mm) != 2 or len(g.shape(mm[1]) or ()) != 2:
            continue
        x, w = mm
        n = g.shape(w)[1]
        if g.shape(bias) != (n,):
            continue
        removed = [m, root]
        direct = _transposed(g, w, m)
        if direct is not None:
            removed.insert(0, g.producer(w))
            new = (NewCall(names.linear, (x, direct, bias)),)
        else:
            transpose_args = (w,) if framework == "torch" else \
                (w, Seq("tuple", (Lit(1), Lit(0))))
            new = (NewCall(names.t, transpose_args, shape=(n, g.shape(w)[0])),
                   NewCall(names.linear, (x, New(0), bias)))
        return _Match("linear_composed", Swap(tuple(sorted(removed)), root, new),
                      names.linear, f"{names.linear}(x, w, b)")
    return None


def _transpose_matmul(g: StepGraph, root: int, framework: str) -> _Match | None:
    if g.ops[root] != "matmul":
        return None
    operands = g.tensors(root)
    if len(operands) != 2:
        return None
    x, t = operands
    w = _transposed(g, t, root)
    if w is None:
        return None
    removed = (g.producer(t), root)
    if framework == "torch":
        api = "torch.nn.functional.linear"
        return _Match("transpose_matmul", Swap(removed, root, (NewCall(api, (x, w)),)),
                      api, f"{api}(x, w)")
    if len(g.shape(x) or ()) != 2:
        return None
    api = "mindspore.ops.MatMul"
    new = NewCall(api, (x, w), kind="primitive", init=(("transpose_b", True),))
    return _Match("transpose_matmul", Swap(removed, root, (new,)), api,
                  "mindspore.ops.MatMul(transpose_b=True)(x, w)")


def _masked_where(g: StepGraph, root: int, framework: str) -> _Match | None:
    if g.ops[root] != "where":
        return None
    operands = g.tensors(root)
    call = g.call(root)
    if len(operands) != 3 or len(call.args) != 3:
        return None
    cond, zeros, x = operands
    z = g.producer(zeros)
    if z is None or g.ops[z] != "zeros_like" or g.tensors(z) != [x] \
            or not g.only_used_by(z, {root}) or g.dtype(cond) != "bool":
        return None
    api = _names(framework).masked_fill
    new = NewCall(api, (x, cond, Lit(0.0)), kind="tensor_method" if ".Tensor." in api
                  else "function")
    return _Match("masked_write_where", Swap((z, root), root, (new,)), api,
                  f"{api}(x, cond, 0.0)")


def _masked_write_index(g: StepGraph, root: int, framework: str) -> _Match | None:
    """`x[cond] = v`: a boolean mask of x's own shape and a number, written as one masked
    fill. The capture records the write as `Tensor.__setitem__(x, cond, v)`. torch's returns
    nothing and the step reads x on (its producer's Ref): the swap is the in-place
    `x.masked_fill_(cond, v)` on the same tensor. MindSpore's returns the written tensor and
    the capture reads it from there on: the swap is `x = ops.masked_fill(x, cond, v)` standing
    for that output (mindspore.Tensor.masked_fill_ has no CPU kernel in 2.10:
    "InplaceMaskedFillScalar unregistered", replay/inplace_routes.py), refused where a later
    call reads x itself, which the out-of-place fill would leave unwritten."""
    call = g.call(root)
    if g.ops[root] != "__setitem__" or len(call.args) != 3 or call.kwargs:
        return None
    x, cond, value = call.args
    if not isinstance(x, (Ref, Ext)) or not isinstance(cond, (Ref, Ext)) \
            or not isinstance(value, Lit) or isinstance(value.value, bool) \
            or not isinstance(value.value, (int, float)):
        return None
    if g.dtype(cond) != "bool" or g.shape(cond) is None or g.shape(cond) != g.shape(x):
        return None
    shown = repr(value.value)
    if framework == "torch":
        api = "torch.Tensor.masked_fill_"
        new = NewCall(api, (x, cond, value), kind="tensor_method")
        return _Match("masked_write_index", Swap((root,), root, (new,)), api,
                      f"x.masked_fill_(cond, {shown})")
    if any(x in g.tensors(i) for i in range(root + 1, len(g.ops))):
        return None
    api = "mindspore.ops.masked_fill"
    return _Match("masked_write_index", Swap((root,), root, (NewCall(api, (x, cond, value)),)),
                  api, f"x = {api}(x, cond, {shown})")


# -- attention composed: softmax(q @ k^T * scale (+ mask)) @ v -----------------------------
_SDPA = "torch.nn.functional.scaled_dot_product_attention"
# A masked_fill value that removes a position as sdpa's boolean mask does: -inf, or a
# "very negative" float scripts write instead (-1e9, torch.finfo(float32).min: -3.4e38).
_MASKED_OUT_AT_MOST = -1e4
# Calls between the softmax and the value matmul that compute nothing here: an eval-mode
# dropout (a call with training=False or p=0) and a cast to the dtype it already has.
_PASSING = frozenset({"dropout", "to", "type_as", "contiguous"})


def _last_two_swapped(g: StepGraph, index: int, rank: int) -> bool:
    """Call `index` transposes the last two dimensions of its rank-`rank` operand: the one
    rule of the linear, transpose-matmul and attention matchers.

    - `.t()`, `.T` of a 2-D tensor, `.mT` of any (`.T` above 2-D reverses every dimension);
    - a swap of two dimensions (torch's `transpose(d0, d1)`, `swapaxes`, MindSpore's
      `Tensor.transpose(d0, d1)`): d0 and d1 are the last two, either order, negative or
      not (`w.transpose(0, 1)` of a 2-D weight is one);
    - a permutation (`permute(1, 0)`, `permute((1, 0))`, MindSpore's `ops.transpose(w, (1,
      0))`: a tuple, or three or more dimensions): every dimension in place but the last
      two, swapped. The identity permutation (`permute(0, 1)`) is no transpose."""
    call = g.call(index)
    if rank < 2:
        return False
    if g.ops[index] == "t":
        return call.api.endswith(".mT") or rank == 2
    if g.ops[index] not in ("transpose", "permute"):
        return False
    seqs = [a for a in call.args if isinstance(a, Seq)]
    dims = ([a.value for a in seqs[0].items if isinstance(a, Lit)] if seqs
            else _numbers(g, index))
    if not all(isinstance(d, int) for d in dims):
        return False
    dims = [d % rank for d in dims]
    if g.ops[index] == "transpose" and not seqs and len(dims) == 2:
        return sorted(dims) == [rank - 2, rank - 1]
    return dims == [*range(rank - 2), rank - 1, rank - 2]


def _passing(g: StepGraph, index: int) -> bool:
    """A call between softmax and the value matmul that leaves its input as it was."""
    if g.ops[index] not in _PASSING or len(g.tensors(index)) != 1:
        return False
    if g.ops[index] == "dropout":
        training = g.kwarg(index, "training")
        p = g.kwarg(index, "p")
        literals = g.literals(index)
        if p is None:
            p = next((v for v in literals if isinstance(v, float)), None)
        if training is None:
            training = next((v for v in literals if isinstance(v, bool)), True)
        return training is False or p == 0.0
    x = g.tensors(index)[0]
    return g.dtype(Ref(index)) == g.dtype(x) and g.shape(Ref(index)) == g.shape(x)


def _attention(g: StepGraph, root: int, framework: str) -> _Match | None:
    """softmax(q @ k^T [* s | / d] [+ mask | .masked_fill(m, -inf)], dim=-1) [dropout in eval,
    a cast to its own dtype] @ v as one F.scaled_dot_product_attention(q, k, v, attn_mask,
    scale): the (L, S) score matrix never written. Each intermediate read inside the
    pattern alone (attention weights returned to the caller keep the calls). torch only:
    MindSpore 2.10's fused attention (flash_attention_score) is Ascend-only."""
    if framework != "torch" or g.ops[root] != "matmul" or len(g.tensors(root)) != 2:
        return None
    chain = []
    probs, v = g.tensors(root)
    node = g.producer(probs)
    while node is not None and g.only_used_by(node, {root, *chain}):
        alias = g.call(node).alias_of
        if isinstance(alias, Ref):           # an eval-mode Dropout lowered to an alias
            chain.append(node)
            node = g.producer(alias)
        elif _passing(g, node):
            chain.append(node)
            node = g.producer(g.tensors(node)[0])
        else:
            break
    if node is None or g.ops[node] != "softmax" or len(g.tensors(node)) != 1:
        return None
    softmax = node
    rank = len(g.shape(g.tensors(softmax)[0]) or ())
    if rank < 2 or _dim(g, softmax) not in (-1, rank - 1) or g.kwarg(softmax, "dtype"):
        return None
    removed = [root, *chain, softmax]
    if not g.only_used_by(softmax, set(removed)):
        return None
    kwargs: list[tuple[str, Any]] = []
    new: list[NewCall] = []
    node = g.producer(g.tensors(softmax)[0])
    scale = 1.0
    # the mask, added or filled in
    if node is not None and g.ops[node] == "add" and len(g.tensors(node)) == 2 \
            and g.only_used_by(node, set(removed)):
        scores, mask = g.tensors(node)
        if g.producer(scores) is None or g.ops[g.producer(scores)] not in ("mul", "div",
                                                                              "matmul"):
            scores, mask = mask, scores
        if (g.dtype(mask) or "").startswith(("float", "bfloat")):
            kwargs.append(("attn_mask", mask))
            removed.append(node)
            node = g.producer(scores)
    elif node is not None and g.ops[node] == "masked_fill" and g.only_used_by(node, set(removed)):
        operands = g.tensors(node)
        fill = _numbers(g, node)
        if len(operands) != 2 or g.dtype(operands[1]) != "bool" or not fill \
                or fill[0] > _MASKED_OUT_AT_MOST:
            return None
        scores, masked_out = operands
        inverted = g.producer(masked_out)
        if inverted is not None and g.ops[inverted] in ("__invert__", "logical_not") \
                and g.only_used_by(inverted, {node}) and len(g.tensors(inverted)) == 1:
            kwargs.append(("attn_mask", g.tensors(inverted)[0]))      # ~keep -> keep
            removed.append(inverted)
        else:
            new.append(NewCall("torch.logical_not", (masked_out,), shape=g.shape(masked_out),
                               dtype="bool"))
            kwargs.append(("attn_mask", New(0)))
        removed.append(node)
        node = g.producer(scores)
    # the scale, a literal multiplier or divisor
    if node is not None and g.ops[node] in ("mul", "div") and len(g.tensors(node)) == 1 \
            and len(_numbers(g, node)) == 1 and g.only_used_by(node, set(removed)):
        number = float(_numbers(g, node)[0])
        if number == 0.0:
            return None
        scale = number if g.ops[node] == "mul" else 1.0 / number
        removed.append(node)
        node = g.producer(g.tensors(node)[0])
    if node is None or g.ops[node] != "matmul" or len(g.tensors(node)) != 2 \
            or not g.only_used_by(node, set(removed)):
        return None
    removed.append(node)
    q, k_t = g.tensors(node)
    transpose = g.producer(k_t)
    if transpose is None or not _last_two_swapped(g, transpose, len(g.shape(k_t) or ())) \
            or len(g.tensors(transpose)) != 1:
        return None
    k = g.tensors(transpose)[0]
    if g.only_used_by(transpose, set(removed)):
        removed.append(transpose)
    shapes = [g.shape(t) for t in (q, k, v)]
    if any(s is None or len(s) < 2 for s in shapes) or shapes[0][-1] != shapes[1][-1] \
            or shapes[1][-2] != shapes[2][-2]:
        return None
    kwargs.append(("scale", Lit(scale)))
    new.append(NewCall(_SDPA, (q, k, v), tuple(kwargs)))
    shown = ", ".join(["q", "k", "v"] + (["attn_mask=mask"] if len(kwargs) > 1 else [])
                      + [f"scale={scale!r}"])
    return _Match("attention_composed", Swap(tuple(sorted(removed)), root, tuple(new)),
                  _SDPA, f"{_SDPA}({shown})")


def _constant(arg: Any) -> bool:
    """An argument that reads no tensor: a literal, a dtype, a sequence of them."""
    if isinstance(arg, Seq):
        return all(_constant(a) for a in arg.items)
    return isinstance(arg, (Lit, Dtype))


def _flat_numbers(arg: Any) -> list[Any] | None:
    """torch.tensor's data: a number or nested sequences of numbers, row-major."""
    if isinstance(arg, Seq):
        out: list[Any] = []
        for item in arg.items:
            found = _flat_numbers(item)
            if found is None:
                return None
            out += found
        return out
    if isinstance(arg, Lit) and isinstance(arg.value, (bool, int, float)):
        return [arg.value]
    return None


def _argument(call: Any, position: int, name: str) -> Any:
    """A call's argument by keyword or position (None: not given)."""
    for key, value in call.kwargs:
        if key == name:
            return value
    args = call.args
    return args[position] if position < len(args) else None


def _created_values(g: StepGraph, index: int, n: int) -> list[Any] | None:
    """The n values a creation call from constants makes, row-major (None: not one this
    knows). The shape and dtype are the recorded output's; the values follow from the
    arguments: ones and zeros, full(size, fill_value) (MindSpore's fill(type, shape,
    value)), arange([start,] end[, step]) and tensor(data)."""
    call, op = g.call(index), g.ops[index]
    if op in ("ones", "zeros"):
        return [1 if op == "ones" else 0] * n
    if op in ("full", "fill"):
        fill = _argument(call, 2, "value") if op == "fill" else \
            _argument(call, 1, "fill_value")
        if not isinstance(fill, Lit) or not isinstance(fill.value, (bool, int, float)):
            return None
        return [fill.value] * n
    if op == "arange":
        numbers = [a.value for a in call.args if isinstance(a, Lit)
                   and isinstance(a.value, (int, float)) and not isinstance(a.value, bool)]
        named = {k: v.value for k, v in call.kwargs if k in ("start", "end", "step")
                 and isinstance(v, Lit)}
        if len(numbers) == 1 and "end" not in named:
            named["end"] = numbers[0]
        elif numbers:
            named.update(zip(("start", "end", "step"), numbers))
        start, step = named.get("start", 0), named.get("step", 1)
        if "end" not in named or not step or math.ceil((named["end"] - start) / step) != n:
            return None
        return [start + k * step for k in range(n)]
    if op in ("tensor", "as_tensor") and call.args:
        found = _flat_numbers(call.args[0])
        return found if found is not None and len(found) == n else None
    return None


def _tensor_creation(g: StepGraph, root: int, framework: str) -> _Match | None:
    """A tensor the step makes from constants every step (`torch.tensor([...])`,
    `torch.arange(n)`, `ops.ones((h,))`: every argument a literal, none a tensor), that no
    call writes into and that takes no gradient: the same tensor each step, made once
    before the loop in the fixed script. The swap removes the call and the step reads the
    tensor as an external made once with those values (Swap.made_once)."""
    call = g.call(root)
    if call.kind != "function" or not call.api.startswith(("torch.", "mindspore.")) \
            or not all(_constant(a) for a in (*call.args, *(v for _, v in call.kwargs))):
        return None
    requires_grad = g.kwarg(root, "requires_grad")
    if requires_grad or not g.consumers[root]:
        return None
    shape, dtype = g.shape(Ref(root)), g.dtype(Ref(root))
    if shape is None or dtype is None:
        return None
    n = math.prod(shape)
    if n > MAX_MADE_ONCE_VALUES:
        return None
    for user in g.consumers[root]:
        written = g.call(user).args[:1] == (Ref(root),)
        if written and (is_in_place(g.call(user).api) or g.ops[user] in _WRITES_INTO):
            return None
    values = _created_values(g, root, n)
    if values is None:
        return None
    if dtype == "bool":
        values = [1 if v else 0 for v in values]
    elif dtype.startswith(("int", "uint")):
        if any(float(v) != int(v) for v in values):
            return None
        values = [int(v) for v in values]
    else:
        values = [float(v) for v in values]
    made = MadeOnce(tuple(shape), dtype, tuple(values))
    return _Match("tensor_creation_in_loop", Swap((root,), root, (), made_once=made), "",
                  f"create it once before the loop: t = {call.api}({_shown(call)}), then "
                  f"read t in the step (the same {dtype} tensor of shape {list(shape)} "
                  f"every step)")


def _shown(call: Any) -> str:
    """A constant call's arguments as code."""
    def one(arg: Any) -> str:
        if isinstance(arg, Seq):
            inner = ", ".join(one(a) for a in arg.items)
            return f"[{inner}]" if arg.kind == "list" else \
                f"({inner}{',' if len(arg.items) == 1 else ''})"
        if isinstance(arg, Dtype):
            return f"{call.framework}.{arg.name}"
        return repr(arg.value)
    return ", ".join([one(a) for a in call.args] + [f"{k}={one(v)}" for k, v in call.kwargs])


def _host_sync(g: StepGraph, root: int, framework: str) -> _Match | None:
    """A read-back in the step. Nothing reading it: the swap removes it. Read by later calls
    (a float from `.item()` the capture linked to them: capture/synced_float.py, as in
    `h = h / h.abs().max().item()`): the swap removes it and those calls read the tensor it
    was read from (Swap.reads_instead), as the fixed script divides by the tensor. The output
    check compares the result (a float read where a 0-d tensor now goes, or a sync read as an
    int, that changes the outputs or does not run, is listed as such, not timed)."""
    if g.ops[root] not in _HOST_SYNCS:
        return None
    if not g.consumers[root]:
        return _Match("host_sync_in_loop", Swap((root,), root, ()), "", "")
    call = g.call(root)
    if g.ops[root] != "item" or not call.args or not isinstance(call.args[0], (Ref, Ext)):
        return None
    return _Match("host_sync_in_loop", Swap((root,), root, (), reads_instead=call.args[0]),
                  "", "pass the tensor where its .item() went: no read-back in the step")


def _route(g: StepGraph, root: int, framework: str) -> _Match | None:
    call = g.call(root)
    if framework != "mindspore" or call.kwargs or call.init or call.kind != "function":
        return None
    api = MS_ROUTE_ALTERNATIVES.get(call.api)
    if api is None:
        return None
    return _Match("route", Swap((root,), root, (NewCall(api, call.args),)), api,
                  f"{api}(...)")


def _optimizer_loop(g: StepGraph, root: int, framework: str) -> _Match | None:
    """A hand-written SGD loop over the weights (optimizer_loop.py) as the one optimizer
    fixed scripts make, built over the loop's weights with its learning rate (momentum 0,
    as the loop has none), stepped where the last write-back was; it returns that
    write-back's weight, as the write-back did."""
    loop = update_loop(g, root)
    if loop is None:
        return None
    weights = Seq("list", tuple(u.weight for u in loop.updates))
    grads = Seq("tuple", tuple(u.grad for u in loop.updates))
    stands_for = tuple((u.calls[-1], k) for k, u in enumerate(loop.updates))
    last = len(loop.updates) - 1
    if framework == "torch":
        # fixed.py's `torch.optim.SGD(params, lr=LR, foreach=True)`, then `.step()` and
        # `.zero_grad()` (replay/training_routes.py: torch_sgd_route)
        api = TORCH_SGD
        new = NewCall(api, (weights,), kind="module",
                      init=(("lr", loop.lr), ("foreach", True)), returns=last,
                      checked_args=(weights, grads))
        if steps_an_optimizer(g.call(root).site):
            # the script's own torch.optim.SGD, stepping weight by weight (CPU's default)
            replacement = (f"pass foreach=True to the script's {api}: {api}(params, "
                           f"lr={loop.lr!r}, foreach=True) (without it, its step updates "
                           f"the {len(loop.updates)} weights one by one)")
        else:
            replacement = (f"optimizer = {api}(params, lr={loop.lr!r}, foreach=True) (once, "
                           f"before the step; params: the {len(loop.updates)} weights the "
                           f"loop updates); optimizer.step(); optimizer.zero_grad()")
        return _Match("optimizer_loop", Swap(loop.calls, root, (new,), stands_for), api,
                      replacement)
    api = "mindspore.nn.SGD"
    new = NewCall(api, (weights, grads), kind="module",
                  init=(("learning_rate", loop.lr), ("momentum", 0.0), ("dampening", 0.0),
                        ("nesterov", False)),
                  returns=last)
    return _Match("optimizer_loop", Swap(loop.calls, root, (new,), stands_for), api,
                  f"optimizer = {api}(params, learning_rate={loop.lr!r}) (once, before the "
                  f"step; params: the {len(loop.updates)} weights the loop updates); "
                  f"optimizer(grads)")


_MATCHERS = (_optimizer_loop, _attention, _linear, _transpose_matmul, _masked_where,
             _masked_write_index, _unary, _host_sync, _tensor_creation)


def _matches(step: StepProgram) -> Iterator[_Match]:
    """Each call in one match at most; later roots first, so a formula is matched whole
    before a part of it could be. Route swaps (one call for one call) come after every
    pattern: a layer norm's `* gamma + beta` written with ops.mul / ops.add belongs to the
    norm, not to two route swaps."""
    g = StepGraph.of(step)
    taken: set[int] = set()
    for matchers in (_MATCHERS, (_route,)):
        for root in range(len(step.calls) - 1, -1, -1):
            call = step.calls[root]
            if root in taken or call.alias_of is not None or not call.replayable:
                continue
            for matcher in matchers:
                found = matcher(g, root, step.framework)
                if found is None or taken & set(found.swap.removed):
                    continue
                if not all(step.calls[i].replayable for i in found.swap.removed):
                    continue
                taken |= set(found.swap.removed)
                yield found
                break


def _spanned_site(step: StepProgram, swap: Swap) -> Site | None:
    """The root's site widened to every removed call's lines in the root's file: a layer
    norm written over three lines is lines 48-50, where its output call is on line 50."""
    root = step.calls[swap.root].site
    if root is None:
        return None
    lines = [(s.first_line, s.last_line) for s in (step.calls[i].site for i in swap.removed)
             if s is not None and s.file == root.file]
    return Site(root.file, min(first for first, _ in lines), max(last for _, last in lines))


def find_candidates(step: StepProgram, families: dict[tuple[str, str], Any]) -> list[Candidate]:
    """The candidates of one step, grouped by family and source site. `families`: the
    catalogue by (framework, kind) (opbench.scan.affinity)."""
    groups: dict[tuple[str, Any, str], list[_Match]] = {}
    for match in _matches(step):
        site = _spanned_site(step, match.swap)
        groups.setdefault((match.kind, site, match.affinity_api), []).append(match)
    out = []
    for (kind, site, affinity_api), matches in groups.items():
        family = families.get((step.framework, kind))
        first = matches[0].swap
        apis = " + ".join(dict.fromkeys(step.calls[i].api for i in first.removed))
        if kind == "route":
            out.append(Candidate(ROUTE_FAMILY, step.framework, apis, affinity_api, "function",
                                 site, tuple(sorted((m.swap for m in matches),
                                                    key=lambda s: s.root)),
                                 matches[0].replacement))
            continue
        if family is None:
            continue
        out.append(Candidate(family.id, step.framework, apis,
                             affinity_api or family.affinity_api, family.api_type, site,
                             tuple(sorted((m.swap for m in matches), key=lambda s: s.root)),
                             matches[0].replacement))
    return sorted(out, key=lambda c: c.swaps[0].root)



"""MindSpore calls in torch where the counterpart takes its arguments another way: rules from
the two frameworks' semantics, for every call of a kind alike (routes.py registers them).

- Padding MindSpore computes and torch does not: `pad_mode="same"` for a strided convolution
  (torch's conv2d refuses 'same' with a stride: 7.5% of mindcv's mobilenet_v3 traced time)
  and MaxPool's pad_mode SAME (mindcv's resnet stem). MindSpore pads as TensorFlow does: the padding a dimension needs to keep
  ceil(size / stride) outputs, split with the odd pixel after (bottom, right). Where the split
  is even, torch's own `padding` takes it; where not, `F.pad` first, then the call unpadded,
  as a torch port of such a model writes it (timm's `pad_same`).
- MindSpore's `ops` functions a script calls that the API mapping (keyed by torch's names,
  MindSpore's side mostly `mint`, which spells parameters as torch does) does not list:
  `ops.mean(x, axis=(2, 3), keep_dims=True)` is `mint.mean`'s entry with numpy's keyword
  names (`axis`, `keep_dims`) spelled as torch's (`dim`, `keepdim`).
- A primitive instance with no constructor arguments (`P.Neg()(x)`, `P.GatherD()(x, 1, i)`,
  in mindcv's cross entropy) is its functional twin in `ops` (the snake_case of its class
  name: Neg -> ops.neg, OnesLike -> ops.ones_like, GatherD -> ops.gather_d), then as above.
- Loss primitives: `ops.SparseSoftmaxCrossEntropyWithLogits()` (nn.SoftmaxCrossEntropyWithLogits
  with sparse=True and a mean) is F.cross_entropy on int64 labels; its is_grad=True form
  returns a gradient and is refused.
- `ops.assign(variable, value)` is what a torch script writes as `p.copy_(value)` under
  `torch.no_grad()` (a leaf that requires grad refuses an in-place copy otherwise).
- MindSpore's own names for torch's functions, which the mapping cannot name from MindSpore's
  side: Equal -> torch.eq, GatherD -> torch.gather (an int64 index), expand_dims ->
  torch.unsqueeze, cast -> torch.as_tensor.

Every rule reads a call's arguments by parameter name through `bound_arguments`.
"""
from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Any, Callable

from opbench.frameworks.apimap import ApiMapping
from opbench.model.program import Call, Lit, Seq
from opbench.model.replay.call_arguments import bound as bound_arguments
from opbench.model.replay.call_arguments import init_arguments
from opbench.model.replay.route import Route, Unmapped

__all__ = ["MINDSPORE_TO_TORCH_RULES", "bound_arguments", "same_padding", "explicit_padding",
           "ops_as_mint", "functional_twin", "primitive_as_function"]


def _plain(value: Any) -> Any:
    """A program argument as a plain value: a literal's value, a sequence's as a tuple."""
    if isinstance(value, Seq):
        return tuple(_plain(v) for v in value.items)
    return value.value if isinstance(value, Lit) else value


def _pair(value: Any, default: int) -> tuple[int, int]:
    value = _plain(value)
    if value is None:
        return (default, default)
    if isinstance(value, (tuple, list)):
        return (int(value[0]), int(value[-1])) if len(value) in (1, 2) else \
            (int(value[-2]), int(value[-1]))
    return (int(value), int(value))


# -- padding ----------------------------------------------------------------------------------

def same_padding(size: int, kernel: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """The (before, after) padding of one dimension under MindSpore's (and TensorFlow's)
    'same': enough for ceil(size / stride) outputs, the odd pixel after."""
    outputs = math.ceil(size / stride)
    needed = max(0, (outputs - 1) * stride + dilation * (kernel - 1) + 1 - size)
    return needed // 2, needed - needed // 2


def explicit_padding(padding: Any) -> tuple[int, int, int, int]:
    """ops.conv2d's `padding` in 'pad' mode (an int, or (height, width)) as (top, bottom,
    left, right)."""
    value = _plain(padding)
    if value is None:
        return (0, 0, 0, 0)
    if isinstance(value, (tuple, list)):
        if len(value) == 2:
            return (int(value[0]), int(value[0]), int(value[1]), int(value[1]))
        value = value[0]
    return (int(value),) * 4                             # type: ignore[return-value]


def _pads(mode: str, explicit: tuple[int, int, int, int], shape: tuple, kernel: tuple,
          stride: tuple, dilation: tuple) -> tuple[int, int, int, int]:
    if mode == "same":
        top, bottom = same_padding(shape[-2], kernel[0], stride[0], dilation[0])
        left, right = same_padding(shape[-1], kernel[1], stride[1], dilation[1])
        return (top, bottom, left, right)
    if mode == "pad":
        return explicit
    return (0, 0, 0, 0)


def _torch_conv2d(call: Call) -> Route | Unmapped:
    """ops.conv2d (what nn.Conv2d lowers to: capture/lowering.py) in torch, with MindSpore's
    padding made explicit."""
    v = bound_arguments(call, ["input", "weight", "bias", "stride", "pad_mode", "padding",
                               "dilation", "groups"])
    mode = str(_plain(v.pad_mode) or "valid").lower()
    if mode not in ("same", "valid", "pad"):
        return Unmapped(f"ops.conv2d with pad_mode {mode!r}: no torch counterpart here")
    explicit = explicit_padding(v.padding)
    stride, dilation = _pair(v.stride, 1), _pair(v.dilation, 1)
    groups = int(_plain(v.groups) or 1)
    has_bias = _plain(v.bias) is not None

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        conv2d = resolve("torch.nn.functional.conv2d")
        pad = resolve("torch.nn.functional.pad")

        def convolution(x: Any, weight: Any, bias: Any = None) -> Any:
            top, bottom, left, right = _pads(mode, explicit, tuple(x.shape),
                                             tuple(weight.shape[-2:]), stride, dilation)
            if top == bottom and left == right:
                return conv2d(x, weight, bias, stride, (top, left), dilation, groups)
            return conv2d(pad(x, (left, right, top, bottom)), weight, bias, stride, (0, 0),
                          dilation, groups)
        return convolution

    args = (v.input, v.weight) + ((v.bias,) if has_bias else ())
    return Route(f"torch.nn.functional.conv2d (MindSpore's pad_mode {mode!r} made explicit)",
                 make, args)


def _torch_max_pool_primitive(call: Call) -> Route | Unmapped:
    """ops.MaxPool (what nn.MaxPool2d holds) in torch: VALID as max_pool2d, SAME with
    MindSpore's padding as -inf first (a max never picks it), NCHW only."""
    init = init_arguments(call, pad_mode="VALID", data_format="NCHW", kernel_size=1, strides=1)
    mode = str(init.pad_mode).upper()
    if init.data_format != "NCHW" or mode not in ("VALID", "SAME"):
        return Unmapped(f"ops.MaxPool with data_format {init.data_format!r} or "
                        f"pad_mode {mode!r} has no torch counterpart here")
    kernel, stride = _pair(init.kernel_size, 1), _pair(init.strides, 1)

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        max_pool2d = resolve("torch.nn.functional.max_pool2d")
        pad = resolve("torch.nn.functional.pad")

        def pool(x: Any) -> Any:
            if mode == "SAME":
                top, bottom, left, right = _pads("same", (0, 0, 0, 0), tuple(x.shape), kernel,
                                                 stride, (1, 1))
                if top or bottom or left or right:
                    x = pad(x, (left, right, top, bottom), value=-math.inf)
            return max_pool2d(x, kernel_size=kernel, stride=stride)
        return pool

    return Route(f"torch.nn.functional.max_pool2d (as ops.MaxPool, pad_mode {mode})", make,
                 call.args[:1])


# -- ops functions and primitives through the mapping's mint entries ---------------------------

# numpy's keyword names in MindSpore's `ops` -> torch's (and mint's)
OPS_KEYWORDS_AS_TORCH = {"axis": "dim", "keep_dims": "keepdim", "keepdims": "keepdim",
                         "x": "input", "input_x": "input"}
OPS, MINT = "mindspore.ops.", "mindspore.mint."
# `ops` functions whose `mint` namesake computes something else (checked in MindSpore 2.10's
# signatures and documentation): ops.equal is elementwise, mint.equal (torch.equal) one bool;
# ops.gather(params, indices, axis) is an embedding lookup, mint.gather torch's gather;
# ops.var / ops.std default to ddof 0, torch's to correction 1; ops.norm's `ord` of a matrix
# is not torch.norm's `p`; ops.flatten's second parameter is `order`; ops.unique returns
# (values, indices), torch's the values.
OPS_NOT_AS_MINT = frozenset({"equal", "gather", "var", "std", "norm", "flatten", "unique"})


def ops_as_mint(call: Call, mapping: ApiMapping) -> Call | None:
    """A MindSpore `ops.NAME` call the mapping does not list as the call to `mint.NAME` it
    lists, keywords renamed to torch's spelling; None where no such entry exists."""
    api = call.replay_api or call.api
    if call.framework != "mindspore" or not api.startswith(OPS) or call.init \
            or mapping.from_mindspore(api) is not None:
        return None
    name = api[len(OPS):]
    if name in OPS_NOT_AS_MINT:
        return None
    twin = MINT + name
    if mapping.from_mindspore(twin) is None:
        return None
    kwargs = tuple((OPS_KEYWORDS_AS_TORCH.get(k, k), v) for k, v in call.kwargs)
    return replace(call, replay_api=twin, kwargs=kwargs)


def functional_twin(primitive: str) -> str:
    """mindspore.ops.GatherD -> mindspore.ops.gather_d: MindSpore's functional form of a
    primitive is its class name in snake_case."""
    module, _, name = primitive.rpartition(".")
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()
    return f"{module}.{snake}"


def primitive_as_function(call: Call, mapping: ApiMapping) -> Call | None:
    """A primitive instance without constructor arguments called as its functional twin, which
    takes the same arguments in the same order; None where the mapping knows no twin."""
    api = call.replay_api or call.api
    if call.framework != "mindspore" or call.kind != "primitive" or call.init:
        return None
    twin = replace(call, replay_api=functional_twin(api), kind="function")
    if mapping.from_mindspore(twin.replay_api) is not None:
        return twin
    return ops_as_mint(twin, mapping)


def _torch_assign(call: Call) -> Route | Unmapped:
    """ops.assign(variable, value): `variable.copy_(value)` under torch.no_grad(), as a torch
    script updates a weight in place."""
    v = bound_arguments(call, ["variable", "value"])
    if v.variable is None or v.value is None:
        return Unmapped("ops.assign without a variable and a value")

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        no_grad = resolve("torch.no_grad")

        def assign(variable: Any, value: Any) -> Any:
            with no_grad():
                return variable.copy_(value)
        return assign
    return Route("torch.Tensor.copy_", make,
                 (v.variable, v.value))


# MindSpore's reduction primitives, Reduce<Op>(keep_dims)(x, axis): torch's reductions over
# `dim` with `keepdim` (an empty or absent axis reduces every dimension in both)
REDUCTIONS = {"mindspore.ops.ReduceMax": "torch.amax", "mindspore.ops.ReduceMin": "torch.amin",
              "mindspore.ops.ReduceSum": "torch.sum", "mindspore.ops.ReduceMean": "torch.mean",
              "mindspore.ops.ReduceProd": "torch.prod"}


def _torch_reduction(torch_api: str) -> Callable[[Call], Route | Unmapped]:
    def rule(call: Call) -> Route | Unmapped:
        init = dict(call.init)
        v = bound_arguments(call, ["x", "axis"])
        axis = v.axis
        keep = bool(init.get("keep_dims", False))
        if axis is not None and not isinstance(axis, (Lit, Seq)):
            return Unmapped(f"{call.replay_api} over an axis computed at run time")
        if set(init) - {"keep_dims", "skip_mode"} or init.get("skip_mode"):
            return Unmapped(f"{call.replay_api} with {', '.join(sorted(init))}: no torch "
                            f"counterpart here")
        if axis is None or _plain(axis) in ((), [], None):
            # every dimension: torch's dim=() (amax, amin, sum and mean take it so)
            if not keep:
                return Route(torch_api, lambda resolve: resolve(torch_api), (v.x,))
            axis = Seq("tuple", ())
        return Route(torch_api, lambda resolve: resolve(torch_api), (v.x,),
                     (("dim", axis), ("keepdim", Lit(keep))))
    return rule


# -- MindSpore's names for torch's functions ---------------------------------------------------
# Functions the API mapping (keyed by torch's names; MindSpore's side is mostly `mint`) cannot
# name from MindSpore's side, because MindSpore spells them otherwise in `ops`, as primitives
# and as Tensor methods (mindcv's cross entropy with label smoothing: P.Equal()(label, -100),
# P.GatherD()(logits, -1, label), label.expand_dims(-1), ops.cast(0, mstype.int32): 0.7% of
# mindcv_resnet18_training.py's traced time not covered).

def _torch_equal(call: Call) -> Route | Unmapped:
    """ops.Equal()(x, y) / ops.equal: element-wise ==, torch.eq (a Python number broadcast as
    in MindSpore); torch.equal is another function (one bool for the whole tensor)."""
    v = bound_arguments(call, ["input", "other"])
    return Route("torch.eq", lambda resolve: resolve("torch.eq"), (v.input, v.other))


def _torch_gather_d(call: Call) -> Route | Unmapped:
    """ops.GatherD()(x, dim, index) / ops.gather_d: torch.gather(x, dim, index), whose index
    must be int64 (MindSpore's labels are int32: "gather(): Expected dtype int64 for
    index")."""
    v = bound_arguments(call, ["x", "dim", "index"])

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        gather = resolve("torch.gather")

        def gather_d(x: Any, dim: Any, index: Any) -> Any:
            return gather(x, dim, index.long())
        return gather_d
    return Route("torch.gather (an int64 index)", make, (v.x, v.dim, v.index))


def _torch_expand_dims(call: Call) -> Route | Unmapped:
    """x.expand_dims(axis) / ops.expand_dims(x, axis): torch.unsqueeze(x, dim)."""
    v = bound_arguments(call, ["input", "axis"])
    return Route("torch.unsqueeze", lambda resolve: resolve("torch.unsqueeze"),
                 (v.input, v.axis))


def _torch_cast(call: Call) -> Route | Unmapped:
    """ops.cast(x, dtype) / ops.Cast()(x, dtype): a tensor as `dtype`, and a Python number
    (ops.cast(0, mstype.int32)) as a 0-d tensor of it: torch.as_tensor does both."""
    v = bound_arguments(call, ["input", "dtype"])
    if v.dtype is None:
        return Unmapped("ops.cast without a dtype")
    return Route("torch.as_tensor (as ops.cast)", lambda resolve: resolve("torch.as_tensor"),
                 (v.input,), (("dtype", v.dtype),))


# -- the primitives MindSpore's own layers call -----------------------------------------------
# mindspore.nn.GRU on CPU is a Python loop of rnn_cells._gru_cell (MatMul, Split, Sigmoid, Tanh)
# over the time steps, with Squeeze, Stack, Concat, Transpose and ops.zeros around it: traced
# through (capture/lowering.py traced_through), 19% of ms_gru_bmm_value_and_grad.py's region
# was these primitives with "no torch rule" (MatMul 11.6%, Split 5.1%, Squeeze 1.4%).

def _torch_matmul_primitive(call: Call) -> Route | Unmapped:
    """ops.MatMul(transpose_a, transpose_b)(a, b): torch.matmul on the transposed operands
    (2-D, as the primitive takes them: .mT is .t() there)."""
    init = dict(call.init)
    if set(init) - {"transpose_a", "transpose_b"}:
        return Unmapped(f"ops.MatMul with {', '.join(sorted(init))}: no torch counterpart here")
    ta, tb = bool(init.get("transpose_a", False)), bool(init.get("transpose_b", False))
    v = bound_arguments(call, ["x", "y"])

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        matmul = resolve("torch.matmul")

        def primitive(a: Any, b: Any) -> Any:
            return matmul(a.mT if ta else a, b.mT if tb else b)
        return primitive
    return Route("torch.matmul (as ops.MatMul)", make, (v.x, v.y))


def _torch_split_primitive(call: Call) -> Route | Unmapped:
    """ops.Split(axis, output_num)(x): output_num equal parts along axis, torch.chunk."""
    init = dict(call.init)
    axis, parts = init.get("axis", 0), init.get("output_num", 1)
    v = bound_arguments(call, ["x"])
    return Route("torch.chunk (as ops.Split)", lambda resolve: resolve("torch.chunk"),
                 (v.x, Lit(int(parts))), (("dim", Lit(int(axis))),))


def _torch_axis_primitive(torch_api: str, first: str) -> Callable[[Call], Route | Unmapped]:
    """ops.Stack(axis)(tensors), ops.Concat(axis)(tensors): torch.stack / torch.cat on dim."""
    def rule(call: Call) -> Route | Unmapped:
        v = bound_arguments(call, [first])
        axis = dict(call.init).get("axis", 0)
        return Route(torch_api, lambda resolve: resolve(torch_api), (getattr(v, first),),
                     (("dim", Lit(int(axis))),))
    return rule


def _torch_squeeze_primitive(call: Call) -> Route | Unmapped:
    """ops.Squeeze(axis)(x): torch.squeeze over those dims; an empty axis squeezes all."""
    axis = dict(call.init).get("axis", ())
    v = bound_arguments(call, ["x"])
    if axis in ((), []):
        return Route("torch.squeeze", lambda resolve: resolve("torch.squeeze"), (v.x,))
    dims = Seq("tuple", tuple(Lit(int(a)) for a in axis)) if isinstance(axis, (tuple, list)) \
        else Lit(int(axis))
    return Route("torch.squeeze", lambda resolve: resolve("torch.squeeze"), (v.x, dims))


def _torch_permute(call: Call) -> Route | Unmapped:
    """ops.Transpose()(x, perm) / ops.transpose(x, perm): a permutation of every axis, which
    is torch.permute (torch.transpose swaps two: "argument 'dim0' must be int, not tuple")."""
    v = bound_arguments(call, ["input", "input_perm"])
    return Route("torch.permute (as ops.transpose)", lambda resolve: resolve("torch.permute"),
                 (v.input, v.input_perm))


def _torch_zeros(call: Call) -> Route | Unmapped:
    """ops.zeros(size, dtype): torch.zeros(size, dtype=dtype) (its dtype is keyword-only:
    "zeros() takes 1 positional argument but 2 were given")."""
    v = bound_arguments(call, ["size", "dtype"])
    kwargs = (("dtype", v.dtype),) if v.dtype is not None else ()
    return Route("torch.zeros", lambda resolve: resolve("torch.zeros"), (v.size,), kwargs)


def _torch_sparse_softmax_cross_entropy(call: Call) -> Route | Unmapped:
    """ops.SparseSoftmaxCrossEntropyWithLogits(is_grad)(logits, labels): what
    nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean") calls (no torch rule: 2-8%
    of ms_train_one_step_cell.py's region). With is_grad=False (the default) it returns the
    loss, the batch's mean of -log softmax(logits)[label] (MindSpore 2.10's own example:
    3.4878 on its 2 x 5 logits, torch's F.cross_entropy gives the same): F.cross_entropy
    with reduction "mean", on int64 labels (MindSpore's are int32, which torch's nll_loss
    refuses: "expected scalar type Long"). With is_grad=True it returns the gradient of that
    loss with respect to the logits instead, a backward kernel: refused."""
    init = dict(call.init)
    if set(init) - {"is_grad"}:
        return Unmapped(f"ops.SparseSoftmaxCrossEntropyWithLogits with "
                        f"{', '.join(sorted(init))}: no torch counterpart here")
    if init.get("is_grad", False):
        return Unmapped("ops.SparseSoftmaxCrossEntropyWithLogits(is_grad=True) returns the "
                        "loss's gradient with respect to the logits (a backward kernel): no "
                        "torch function computes it alone")
    v = bound_arguments(call, ["logits", "labels"])
    if v.logits is None or v.labels is None:
        return Unmapped("ops.SparseSoftmaxCrossEntropyWithLogits without logits and labels")

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        cross_entropy = resolve("torch.nn.functional.cross_entropy")

        def sparse_softmax_cross_entropy(logits: Any, labels: Any) -> Any:
            return cross_entropy(logits, labels.long(), reduction="mean")
        return sparse_softmax_cross_entropy
    return Route("torch.nn.functional.cross_entropy (int64 labels, mean)", make,
                 (v.logits, v.labels))


LAYER_PRIMITIVES = {
    "mindspore.ops.MatMul": _torch_matmul_primitive,
    "mindspore.ops.Split": _torch_split_primitive,
    "mindspore.ops.Stack": _torch_axis_primitive("torch.stack", "tensors"),
    "mindspore.ops.Concat": _torch_axis_primitive("torch.cat", "tensors"),
    "mindspore.ops.Squeeze": _torch_squeeze_primitive,
    "mindspore.ops.Transpose": _torch_permute,
    "mindspore.ops.transpose": _torch_permute,
    "mindspore.ops.zeros": _torch_zeros,
    "mindspore.ops.SparseSoftmaxCrossEntropyWithLogits": _torch_sparse_softmax_cross_entropy,
}


MINDSPORE_NAMES = {
    "mindspore.ops.Equal": _torch_equal, "mindspore.ops.equal": _torch_equal,
    "mindspore.ops.GatherD": _torch_gather_d, "mindspore.ops.gather_d": _torch_gather_d,
    "mindspore.Tensor.expand_dims": _torch_expand_dims,
    "mindspore.ops.expand_dims": _torch_expand_dims,
    "mindspore.ops.cast": _torch_cast, "mindspore.ops.Cast": _torch_cast,
}


MINDSPORE_TO_TORCH_RULES: dict[str, Callable[[Call], Route | Unmapped]] = {
    "mindspore.ops.conv2d": _torch_conv2d,
    "mindspore.ops.MaxPool": _torch_max_pool_primitive,
    "mindspore.ops.assign": _torch_assign,
    # x.assign_value(v), the method a MindSpore script (and nn.AdamWeightDecay's update, as
    # traced in ms_train_one_step_cell.py: "no entry in the API mapping", 4% of its region)
    # writes a tensor with: the same copy_ under no_grad
    "mindspore.Tensor.assign_value": _torch_assign,
    **MINDSPORE_NAMES,
    **LAYER_PRIMITIVES,
    **{primitive: _torch_reduction(api) for primitive, api in REDUCTIONS.items()},
}

"""How a captured call replays in a framework: in the framework it was traced in, the call
itself; in the other one, its counterpart with the arguments adapted.

A Route names what it calls (for the report), says how to make the callable inside the
replay process (where the framework is imported), and holds the call's arguments as
program arguments (program.py), reordered or rewritten where the counterpart takes them
differently. A route may carry fallbacks: MindSpore 2.10 has no CPU kernel for several
`mint` functions, and the API mapping (opbench/data/api_mapping.yaml) lists the CPU route
as an alternative; the replay tries the route, then each fallback, and keeps the first that
runs.

Counterparts come from explicit rules for the calls models are made of (below) and
otherwise from the API mapping: status `same` with the same arguments; `differs` only when
every argument is positional (a keyword's name is what differs); `none` is unmapped. The
replay's output check (replay.py) catches a counterpart that computes something else.
"""
from __future__ import annotations

import inspect
import math
import re
from dataclasses import dataclass, replace
from typing import Any, Callable

from opbench.frameworks.apimap import ApiMapping
from opbench.model.autograd_function import FUNCTION_APPLY
from opbench.model.replay.call_arguments import bound, init_arguments
from opbench.model.replay.einsum_route import einsum_route
from opbench.model.replay.function_routes import straight_through_route
from opbench.model.replay.attention_dropout import attention_dropout, attention_route_name
from opbench.model.replay.inplace_routes import INPLACE_TORCH_TO_MINDSPORE
from opbench.model.replay.layer_routes import LAYER_TORCH_TO_MINDSPORE, OWN_FRAMEWORK_RULES
from opbench.model.replay.mindspore_to_torch import (MINDSPORE_TO_TORCH_RULES, ops_as_mint,
                                                     primitive_as_function)
from opbench.model.replay.adam_weight_decay_route import (ADAM_WEIGHT_DECAY,
                                                         adam_weight_decay_route)
from opbench.model.replay.momentum_route import MOMENTUM, momentum_route
from opbench.model.replay.optimizer_fold import AdamFold, MomentumFold
from opbench.model.program import Call, Dtype, Lit, Seq
from opbench.model.replay.route import Maker, Route, Unmapped
from opbench.model.replay.trainable import is_in_place
from opbench.model.replay.training_routes import (OPTIMIZER_APIS, TORCH_SGD,
                                                  TRAINING_TORCH_TO_MINDSPORE,
                                                  optimizer_route, torch_backward,
                                                  torch_sgd_route, write_back)

__all__ = ["Route", "Unmapped", "route_for", "fused_momentum_route", "fused_adam_route",
           "TENSOR_PREFIXES"]

TORCH_TENSOR_PREFIX, MINDSPORE_TENSOR_PREFIX = "torch.Tensor.", "mindspore.Tensor."
TENSOR_PREFIXES = {"torch": TORCH_TENSOR_PREFIX, "mindspore": MINDSPORE_TENSOR_PREFIX}


def case_spelling(framework: str, api: str) -> str:
    prefix = TENSOR_PREFIXES[framework]
    return "Tensor." + api[len(prefix):] if api.startswith(prefix) else api


def _by_name(framework: str, api: str) -> Maker:
    spelled = case_spelling(framework, api)
    return lambda resolve: resolve(spelled)


def _named(framework: str, api: str, args: tuple, kwargs: tuple = (),
           fallbacks: tuple[Route, ...] = ()) -> Route:
    return Route(api, _by_name(framework, api), args, kwargs, fallbacks)


def _kw(call: Call) -> dict[str, Any]:
    return dict(call.kwargs)


# a call's arguments by parameter name, as a frozen record (call_arguments.py: one helper
# for every rule module)
_values = bound


def _lit(value: Any, default: Any = None) -> Any:
    return value.value if isinstance(value, Lit) else default


# -- arguments across frameworks --------------------------------------------------------------
# The capture keeps the keywords the script wrote (capture/observer.py, by
# trace/recorder.py without_defaults: a keyword equal to its signature's default is gone).
# Of those, what the other framework has no parameter for and that does not change the work
# goes by rule, for every API alike, before the rules and the mapping below see the call.

# torch placement and allocation keywords: the replay runs on one device, and MindSpore's
# creation functions take none of them (mint.arange(n, device=...) raises a TypeError).
# `dtype` stays: both frameworks spell it dtype, and the replay turns the dtype object into
# the framework's own.
TORCH_PLACEMENT_KEYWORDS = frozenset({"device", "layout", "pin_memory", "non_blocking",
                                      "requires_grad"})
# torch's deprecated loss arguments; torch itself turns them into `reduction`
# (torch.nn._reduction.legacy_get_string).
TORCH_LEGACY_REDUCTION = ("size_average", "reduce")


def legacy_reduction(size_average: Any, reduce: Any) -> str:
    """torch's rule: None counts as True; reduce=False means per element, else
    size_average picks mean or sum."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _float_scales(value: Any) -> Any:
    """An integer `scale_factor` (or a sequence of them) as floats."""
    if isinstance(value, Lit) and isinstance(value.value, int) \
            and not isinstance(value.value, bool):
        return Lit(float(value.value))
    if isinstance(value, Seq):
        return replace(value, items=tuple(_float_scales(item) for item in value.items))
    return value


def _no_output_tensor(name: str, value: Any) -> bool:
    """torch's `out=None`: the result in a new tensor, what every call does without `out`
    (the capture keeps it where the signature cannot be read: torch.stack is a builtin)."""
    return name == "out" and isinstance(value, Lit) and value.value is None


def translate_torch_keywords(kwargs: tuple[tuple[str, Any], ...]
                             ) -> tuple[tuple[str, Any], ...]:
    """A torch call's keywords as MindSpore takes them: torch-private ones (a leading
    underscore: F.softmax's `_stacklevel`) and placement ones dropped, `size_average` /
    `reduce` turned into the `reduction` they mean, an integer `scale_factor` made a float
    (torch takes F.interpolate(x, scale_factor=2); MindSpore 2.10's upsampling kernels take
    float scales only: "Failed calling UpsampleNearest2D with ... scales=Tuple<int, int>",
    7.7% of unet_groupnorm_interpolate.py's traced time); `out=None` (a new tensor, torch's
    default, spelled out by DataLoader's default_collate: torch.stack(batch, 0, out=None),
    5.8% of dataloader_shuffle_training.py) dropped."""
    kept = [(k, _float_scales(v) if k == "scale_factor" else v) for k, v in kwargs
            if not k.startswith("_") and k not in TORCH_PLACEMENT_KEYWORDS
            and not _no_output_tensor(k, v)]
    legacy = {k: _lit(v) for k, v in kept if k in TORCH_LEGACY_REDUCTION}
    if not legacy:
        return tuple(kept)
    reduction = legacy_reduction(*(legacy.get(k) for k in TORCH_LEGACY_REDUCTION))
    kept = [(k, v) for k, v in kept if k not in TORCH_LEGACY_REDUCTION and k != "reduction"]
    return tuple(kept) + (("reduction", Lit(reduction)),)


# torch's creation functions whose every positional argument is one size of the shape
# (torch.zeros(*size, *, dtype=...)); MindSpore's take the shape as one argument:
# mint.zeros(2, 3) failed ("takes 1 positional argument but 2 were given": transformers'
# BART and a position-encoding script, 0.4-2% of their traced time).
TORCH_SIZE_VARARGS = frozenset({"torch.zeros", "torch.ones", "torch.empty", "torch.rand",
                                "torch.randn"})


def _for_other_framework(call: Call, target: str) -> Call:
    if call.framework != "torch" or target != "mindspore":
        return call
    if call.kwargs:
        # always the translated ones: Lit(2) == Lit(2.0), so a comparison would keep the int
        call = replace(call, kwargs=translate_torch_keywords(call.kwargs))
    if call.replay_api in TORCH_SIZE_VARARGS and len(call.args) > 1:
        call = replace(call, args=(Seq("tuple", tuple(call.args)),))
    return call


@dataclass(frozen=True)
class KeywordRule:
    """What a mapping entry's note says of its keywords. The notes are written by
    tools/build_api_mapping.py from both frameworks' signatures, one clause each:
    "argument names differ: torch (dim, keepdim) vs MindSpore (axis, keep_dims)",
    "MindSpore lacks torch argument(s): weight", "MindSpore also accepts: ...", and the
    CPU-kernel remarks. `understood` is False when a clause is anything else (a hand-written
    remark on semantics): then a keyword is not passed on trust, unless the note names it in
    a clause of its own: a hand-written note (tools/mapping_overrides.py) states its keyword
    rule as "argument names differ: torch (dim) vs MindSpore (axis)" or "keywords as torch's:
    dim, keepdim" (checked by calling both), and the keywords it names pass."""
    renames: tuple[tuple[str, str], ...] = ()
    lacking: frozenset = frozenset()
    understood: bool = True
    # keywords a clause says the counterpart takes under torch's own name
    same_names: frozenset = frozenset()

    def names(self, keyword: str) -> bool:
        """Whether a clause of the note names this keyword (renamed or as torch's)."""
        return keyword in self.same_names or any(t == keyword for t, _ in self.renames)


_RENAMED = re.compile(r"argument names differ: torch \((.*)\) vs MindSpore \((.*)\)$")
_LACKING = "MindSpore lacks torch argument(s): "
_SAME_NAMES = "keywords as torch's: "
_HARMLESS = ("MindSpore also accepts: ", "no CPU kernel in MindSpore", "CPU route: ")


def keyword_rule(note: str) -> KeywordRule:
    renames: list[tuple[str, str]] = []
    lacking: set[str] = set()
    same_names: set[str] = set()
    understood = True
    for clause in (c.strip() for c in note.split(";") if c.strip()):
        renamed = _RENAMED.match(clause)
        if renamed:
            torch_names = [n.strip() for n in renamed.group(1).split(",")]
            ms_names = [n.strip() for n in renamed.group(2).split(",")]
            if len(torch_names) == len(ms_names):
                # the generator lists each side's own names in signature order
                renames += zip(torch_names, ms_names)
            else:
                lacking.update(torch_names)
        elif clause.startswith(_LACKING):
            lacking.update(n.strip() for n in clause[len(_LACKING):].split(","))
        elif clause.startswith(_SAME_NAMES):
            same_names.update(n.strip() for n in clause[len(_SAME_NAMES):].split(","))
        elif not clause.startswith(_HARMLESS):
            understood = False
    return KeywordRule(tuple(renames), frozenset(lacking), understood, frozenset(same_names))


def _keywords_by_note(kwargs: tuple[tuple[str, Any], ...], rule: KeywordRule, other: str,
                      note: str) -> tuple[tuple[str, Any], ...] | Unmapped:
    """The call's keywords under an entry whose arguments differ, or why they cannot go."""
    if not rule.understood and any(k != "dtype" and not rule.names(k) for k, _ in kwargs):
        return Unmapped(f"{other} takes its arguments differently ({note}) and the call "
                        f"passes keywords")
    lacking = [k for k, _ in kwargs if k in rule.lacking]
    if lacking:
        return Unmapped(f"{other} has no {', '.join(repr(k) for k in lacking)} argument, "
                        f"which the call sets ({note})")
    renames = dict(rule.renames)
    return tuple((renames.get(k, k), v) for k, v in kwargs)


def _skipping_empty_vectors(make: Maker) -> Maker:
    """torch.cat skips 1-D empty tensors among tensors of higher rank (what a cache starts
    as in transformers models: torch.cat([torch.tensor([]), k], dim=-2)); MindSpore refuses
    them ("element rank must be same"). The other tensors are concatenated as torch does."""
    def made(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        fn = make(resolve)

        def cat(tensors: Any, *args: Any, **kwargs: Any) -> Any:
            kept = [t for t in tensors if tuple(t.shape) != (0,)]
            return fn(kept or list(tensors)[:1], *args, **kwargs)
        return cat
    return made


def _mapped_with(call: Call, mapping: ApiMapping, note: str,
                 wrap: Callable[[Maker], Maker]) -> Route | Unmapped:
    """The call's mapped MindSpore route (and its fallbacks) with each maker wrapped by
    `wrap`, the route's name saying why (`note`)."""
    route = _via_mapping(call, "mindspore", mapping)
    if isinstance(route, Unmapped):
        return route
    return replace(route, api=f"{route.api} ({note})", make=wrap(route.make),
                   fallbacks=tuple(replace(f, make=wrap(f.make)) for f in route.fallbacks))


def _ms_cat(call: Call, mapping: ApiMapping) -> Route | Unmapped:
    return _mapped_with(call, mapping, "1-D empty tensors skipped, as torch",
                        _skipping_empty_vectors)


CONCATENATIONS = frozenset({"torch.cat", "torch.concat", "torch.concatenate"})


def _complex_as_magnitude(make: Maker) -> Maker:
    """torch's abs of a complex tensor is its real magnitude (complex64 -> float32);
    MindSpore 2.10's abs (mint, ops, the method) returns it complex, the magnitude in the real
    part (checked on CPU: abs(3+4j) -> (5+0j), Complex64), so the calls after it would run on
    complex values and the output check flags it. ops.ComplexAbs returns the real magnitude,
    as torch; a real input goes to the route as before."""
    def made(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        fn = make(resolve)
        magnitude = resolve("mindspore.ops.ComplexAbs")()

        def absolute(x: Any, *args: Any, **kwargs: Any) -> Any:
            if "complex" in str(x.dtype).lower():
                return magnitude(x)
            return fn(x, *args, **kwargs)
        return absolute
    return made


def _ms_magnitude(call: Call, mapping: ApiMapping) -> Route | Unmapped:
    return _mapped_with(call, mapping, "a complex input: ops.ComplexAbs, real as torch",
                        _complex_as_magnitude)


def _zero_size_as_torch(make: Maker) -> Maker:
    """torch's argmax / argmin over a dimension of a zero-size tensor (a (0, 1000) batch of
    rows: a boolean mask that selected nothing) is an empty index tensor; MindSpore 2.10
    refuses it ("ArgMax is not supported zero size!"; its method: "CPU kernel op
    [Default/Argmax-op0] resize failed"). The empty result is made as torch makes it; a
    reduction over the empty dimension itself goes to the route, and fails as torch's does."""
    def made(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        fn = make(resolve)
        zeros = resolve("mindspore.ops.zeros")

        def reduced(x: Any, *args: Any, **kwargs: Any) -> Any:
            shape = [int(n) for n in x.shape]
            dim = args[0] if args else kwargs.get("dim", kwargs.get("axis"))
            keep = args[1] if len(args) > 1 else kwargs.get("keepdim",
                                                             kwargs.get("keep_dims", False))
            if 0 not in shape or not isinstance(dim, int) or shape[dim] == 0:
                return fn(x, *args, **kwargs)
            if keep:
                shape[dim] = 1
            else:
                del shape[dim]
            return zeros(tuple(shape)).astype("int64")
        return reduced
    return made


def _ms_zero_size(call: Call, mapping: ApiMapping) -> Route | Unmapped:
    return _mapped_with(call, mapping, "a zero-size input: an empty result, as torch",
                        _zero_size_as_torch)


# torch's index reductions: an empty result on a zero-size input (_zero_size_as_torch)
INDEX_REDUCTIONS = frozenset({"torch.argmax", "torch.Tensor.argmax", "torch.argmin",
                              "torch.Tensor.argmin"})
# torch's absolute value, every spelling: real on a complex input (_complex_as_magnitude)
MAGNITUDES = frozenset({"torch.abs", "torch.absolute", "torch.Tensor.abs",
                        "torch.Tensor.absolute", "torch.Tensor.__abs__"})


# -- torch -> MindSpore rules ---------------------------------------------------------------

def _ms_layer_norm(call: Call) -> Route | Unmapped:
    values = _values(call, ["input", "normalized_shape", "weight", "bias", "eps"])
    shape = values.normalized_shape
    dims = len(shape.items) if isinstance(shape, Seq) else 1
    eps = _lit(values.eps, 1e-5)
    if values.weight is None or values.bias is None \
            or _lit(values.weight, 0) is None or _lit(values.bias, 0) is None:
        return Unmapped("layer_norm without weight and bias: MindSpore's CPU LayerNorm "
                        "takes both")

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        primitive = resolve("mindspore.ops.LayerNorm")(begin_norm_axis=-dims,
                                                       begin_params_axis=-dims,
                                                       epsilon=float(eps))

        def layer_norm(x: Any, weight: Any, bias: Any) -> Any:
            return primitive(x, weight, bias)[0]
        return layer_norm

    primary = _named("mindspore", "mindspore.mint.nn.functional.layer_norm",
                     (values.input, shape, values.weight, values.bias, Lit(eps)))
    return Route("mindspore.ops.LayerNorm", make,
                 (values.input, values.weight, values.bias),
                 fallbacks=(primary,))


def _ms_embedding(call: Call) -> Route | Unmapped:
    kw = _kw(call)
    if any(k not in ("padding_idx",) for k in kw):
        return Unmapped(f"embedding with {', '.join(sorted(kw))}: not replayed in MindSpore")
    ids, weight = call.args[0], call.args[1]
    gather = _named("mindspore", "mindspore.ops.gather", (weight, ids, Lit(0)))
    return Route(gather.api, gather.make, gather.args,
                 fallbacks=(_named("mindspore", "mindspore.mint.nn.functional.embedding",
                                   (ids, weight)),))


def _ms_gelu(call: Call) -> Route | Unmapped:
    approximate = _lit(_values(call, ["input", "approximate"]).approximate, "none")
    x = call.args[0]
    kwargs = (("approximate", Lit(approximate)),)
    return _named("mindspore", "mindspore.ops.gelu", (x,), kwargs,
                  fallbacks=(_named("mindspore", "mindspore.mint.nn.functional.gelu", (x,),
                                    kwargs),))


def _ms_sdpa(call: Call) -> Route | Unmapped:
    """softmax(q @ k^T * scale + mask) @ v, composed as the case library composes attention
    (cases/attention.yaml): MindSpore's fused attention is Ascend-only."""
    values = _values(call, ["query", "key", "value", "attn_mask", "dropout_p", "is_causal",
                            "scale", "enable_gqa"])
    # dropout on the attention weights, as torch applies it, with the same p (MindSpore's
    # ops.dropout: mint's has no CPU kernel in 2.10). Random in both: outputs are not
    # compared (attention_dropout.py, randomness.py)
    dropout_p = float(_lit(values.dropout_p, 0.0) or 0.0)
    causal = bool(_lit(values.is_causal, False))
    scale = _lit(values.scale, None)
    # grouped-query attention (transformers' Llama / Qwen2 pass enable_gqa=True): the key and
    # value heads repeated to the query's, as torch does (repeat_interleave over the heads);
    # without it MindSpore's matmul refused the shapes (6.6% of hf_qwen2_inference.py's
    # traced time not covered). Broadcast and reshape: MindSpore 2.10's CPU build has no
    # RepeatInterleave kernel.
    grouped = bool(_lit(values.enable_gqa, False))
    mask = values.attn_mask
    has_mask = mask is not None and not (isinstance(mask, Lit) and mask.value is None)

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        matmul = resolve("mindspore.mint.matmul")
        softmax = resolve("mindspore.mint.softmax")
        where = resolve("mindspore.mint.where")
        ones = resolve("mindspore.mint.ones")
        triu = resolve("mindspore.mint.triu")
        dropout = attention_dropout(resolve, dropout_p)

        broadcast_to = resolve("mindspore.mint.broadcast_to")
        unsqueeze = resolve("mindspore.mint.unsqueeze")

        def heads_repeated(t: Any, heads: int) -> Any:
            if not grouped or t.shape[-3] == heads:
                return t
            times = heads // t.shape[-3]
            *lead, kv_heads, length, dim = t.shape
            spread = broadcast_to(unsqueeze(t, -3), (*lead, kv_heads, times, length, dim))
            return spread.reshape(*lead, kv_heads * times, length, dim)

        def attention(q: Any, k: Any, v: Any, m: Any = None) -> Any:
            k, v = heads_repeated(k, q.shape[-3]), heads_repeated(v, q.shape[-3])
            factor = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
            scores = matmul(q, k.swapaxes(-2, -1)) * factor
            if causal:
                length, source = scores.shape[-2], scores.shape[-1]
                upper = triu(ones((length, source), dtype=q.dtype), 1) > 0
                scores = where(upper, float("-inf"), scores)
            if m is not None:
                if str(m.dtype).lower().startswith("bool"):
                    scores = where(m, scores, float("-inf"))
                else:
                    scores = scores + m
            return matmul(dropout(softmax(scores, -1)), v)
        return attention

    args = (values.query, values.key, values.value) + ((mask,) if has_mask else ())
    return Route(attention_route_name(dropout_p), make, args)


def _ms_conv(dims: int) -> Callable[[Call], Route | Unmapped]:
    """F.conv1d / F.conv2d: mint's function (torch's arguments), then ops.conv<N>d, whose
    padding goes with a pad_mode ('pad' for numbers) before it in the signature: torch's
    positional padding passed on as it is reached ops.conv1d's pad_mode ("the type of
    'pad_mode' should be 'str', but got type 'list'", and mint's conv1d is Ascend-only:
    1.7% of gru_conv1d_sequence_training.py's traced time)."""
    def rule(call: Call) -> Route | Unmapped:
        primary = _named("mindspore", f"mindspore.mint.nn.functional.conv{dims}d", call.args,
                         call.kwargs)
        v = _values(call, ["input", "weight", "bias", "stride", "padding", "dilation",
                           "groups"])
        padding = _lit(v.padding, None) if isinstance(v.padding, Lit) else v.padding
        if isinstance(padding, str):
            ops_padding: tuple = (("pad_mode", Lit(padding)),)
        else:
            pads = (tuple(_lit(p, 0) for p in padding.items) if isinstance(padding, Seq)
                    else (padding or 0,) * dims)
            ops_padding = (("pad_mode", Lit("pad")),
                           ("padding", Seq("tuple", tuple(Lit(int(p)) for p in pads))))
        extra = tuple((n, _as_tuple(getattr(v, n))) for n in ("stride", "dilation", "groups")
                      if getattr(v, n) is not None)
        bias = v.bias
        ops_route = _named("mindspore", f"mindspore.ops.conv{dims}d",
                           (v.input, v.weight) + ((bias,) if bias is not None else ()),
                           ops_padding + extra)
        return Route(primary.api, primary.make, primary.args, primary.kwargs,
                     fallbacks=(ops_route,))
    return rule


def _ms_nonzero(call: Call) -> Route | Unmapped:
    """torch.nonzero(x[, as_tuple=True]): mint.nonzero has no CPU kernel in MindSpore 2.10
    ("The kernel NonZeroExt unregistered", with as_tuple too: 8.2% of moe_topk_index_add.py's
    traced time); ops.nonzero(x) runs and returns the (n, rank) index matrix, whose columns
    are the tuple (what a port writes for as_tuple=True)."""
    v = _values(call, ["input", "as_tuple"])
    as_tuple = _lit(v.as_tuple, False) if v.as_tuple is not None else False
    primary = _named("mindspore", "mindspore.mint.nonzero", call.args, call.kwargs)

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        nonzero = resolve("mindspore.ops.nonzero")
        if not as_tuple:
            return nonzero

        def columns(x: Any) -> Any:
            found = nonzero(x)
            return tuple(found[:, k] for k in range(found.shape[1]))
        return columns
    api = "mindspore.ops.nonzero" + (" (columns as the tuple)" if as_tuple else "")
    return Route(primary.api, primary.make, primary.args, primary.kwargs,
                 fallbacks=(Route(api, make, (v.input,)),))


def _as_tuple(value: Any) -> Any:
    """ops.conv2d takes stride and dilation as an int or a tuple, not a list: equal values
    become one int (a case file, which holds lists only, can then name the call too)."""
    if not isinstance(value, Seq):
        return value
    values = {_lit(v) for v in value.items}
    if len(values) == 1 and all(isinstance(v, Lit) for v in value.items):
        return Lit(values.pop())
    return Seq("tuple", value.items)


def _sizes(rest: tuple) -> Seq | None:
    """torch's `*sizes` (x.repeat(1, 4, 1), x.flip(0, 1)) or one sequence of them, as one
    tuple (MindSpore's tile / flip take a tuple); None when it is neither."""
    if len(rest) == 1 and isinstance(rest[0], Seq):
        return Seq("tuple", rest[0].items)
    if rest and all(isinstance(r, Lit) and isinstance(r.value, int) for r in rest):
        return Seq("tuple", tuple(rest))
    return None


def _ms_repeat(call: Call) -> Route | Unmapped:
    """torch's x.repeat(*sizes) tiles the tensor (numpy's tile): MindSpore's Tensor.repeat
    has no CPU kernel in 2.10 ("'repeat' is not supported on this device", 13-17% of
    cat_split_stack_reshape.py's traced time); ops.tile computes the same."""
    sizes = _sizes(tuple(call.args[1:]) + tuple(v for k, v in call.kwargs if k == "repeats"))
    if sizes is None or any(k != "repeats" for k, _ in call.kwargs):
        return Unmapped("Tensor.repeat with sizes that are not numbers")
    primary = _named("mindspore", "mindspore.Tensor.repeat", call.args, call.kwargs)
    return replace(primary, fallbacks=(_named("mindspore", "mindspore.ops.tile",
                                              (call.args[0], sizes)),))


def _ms_flip(api: str) -> Callable[[Call], Route | Unmapped]:
    """torch's flip takes an int, several or a sequence (x.flip(-1)); MindSpore's takes a
    tuple ("Failed calling ReverseV2 with ReverseV2(axis=int)")."""
    def rule(call: Call) -> Route | Unmapped:
        dims = _sizes(tuple(call.args[1:]) + tuple(v for k, v in call.kwargs if k == "dims"))
        if dims is None:
            return Unmapped("flip with dims that are not numbers")
        return _named("mindspore", api, (call.args[0], dims))
    return rule


def _ms_roll(call: Call) -> Route | Unmapped:
    """torch.roll(x, shifts, dims) as two slices concatenated back to front: MindSpore 2.10's
    CPU build has no Roll kernel in any namespace (3% of cat_split_stack_reshape.py)."""
    v = _values(call, ["input", "shifts", "dims"])
    shifts, dims = _lit_or_list(v.shifts), _lit_or_list(v.dims)
    shifts = shifts if isinstance(shifts, list) else [shifts]
    dims = dims if isinstance(dims, list) else [dims]
    if None in dims or len(shifts) != len(dims) or \
            not all(isinstance(n, int) for n in (*shifts, *dims)):
        return Unmapped("torch.roll without a dim for each shift (a flattened roll)")
    primary = _named("mindspore", "mindspore.mint.roll", call.args, call.kwargs)

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        cat, narrow = resolve("mindspore.mint.cat"), resolve("mindspore.mint.narrow")

        def roll(x: Any) -> Any:
            for shift, dim in zip(shifts, dims):
                size = x.shape[dim]
                cut = shift % size if size else 0
                if cut:
                    x = cat((narrow(x, dim, size - cut, cut), narrow(x, dim, 0, size - cut)),
                            dim)
            return x
        return roll
    return replace(primary, fallbacks=(
        Route("mindspore.mint.cat of two mint.narrow slices (as torch.roll)", make,
              (v.input,)),))


def _ms_arange(call: Call) -> Route | Unmapped:
    primary = _named("mindspore", "mindspore.mint.arange", call.args, call.kwargs)
    return Route(primary.api, primary.make, primary.args, primary.kwargs,
                 fallbacks=(_named("mindspore", "mindspore.ops.arange", call.args,
                                   call.kwargs),))


def _ms_to(call: Call) -> Route | Unmapped:
    """x.to(dtype) is astype; x.to(device) on the replay's one device does nothing."""
    rest = list(call.args[1:]) + [v for _, v in call.kwargs]
    dtypes = [v for v in rest if isinstance(v, Dtype)]
    if len(dtypes) > 1 or any(not isinstance(v, (Dtype, Lit)) for v in rest):
        return Unmapped("Tensor.to with arguments other than a dtype or a device")
    if dtypes:
        return _named("mindspore", "mindspore.Tensor.astype", (call.args[0], dtypes[0]))
    return Route("identity (one device)", lambda resolve: _identity, call.args[:1])


def _ms_max_pool2d(call: Call) -> Route | Unmapped:
    """The MaxPool primitive nn.MaxPool2d uses, where it computes the same: measured here,
    ops.max_pool2d (MaxPoolWithArgmaxV2) took 84 ms forward+backward on 8x32x32x32 where
    nn.MaxPool2d took 2.7 ms (the forward 2.3 against 1.2 ms); a port uses the layer."""
    v = _values(call, ["input", "kernel_size", "stride", "padding", "dilation", "ceil_mode",
                       "return_indices"])
    kernel, stride = _lit_or_list(v.kernel_size), _lit_or_list(v.stride)
    plain = (_lit(v.padding, 0) in (0, None) and _lit(v.dilation, 1) in (1, None)
             and not _lit(v.ceil_mode, False) and not _lit(v.return_indices, False)
             and kernel is not None)
    if not plain:
        return Unmapped("max_pool2d with padding, dilation or ceil_mode")
    strides = stride if stride not in (None, []) else kernel

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        return resolve("mindspore.ops.MaxPool")(kernel_size=_tuple_of(kernel),
                                                strides=_tuple_of(strides),
                                                pad_mode="VALID")

    return Route("mindspore.ops.MaxPool (as nn.MaxPool2d)", make, (v.input,))


def _lit_or_list(value: Any) -> Any:
    if isinstance(value, Seq):
        return [_lit(v) for v in value.items]
    return _lit(value)


def _tuple_of(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _as_parameter(prefix: str) -> Callable[[Any], Any]:
    """A tensor as a MindSpore Parameter (kernels that update state in place, as BatchNorm's
    running statistics or ApplyMomentum's buffers, take Parameters): a Parameter stays
    itself, a plain tensor gets one Parameter, made on first use and kept."""
    import mindspore
    held: dict[int, Any] = {}

    def parameter(tensor: Any) -> Any:
        if isinstance(tensor, mindspore.Parameter):
            return tensor
        found = held.get(id(tensor))
        if found is None:
            found = held[id(tensor)] = mindspore.Parameter(
                tensor, name=f"{prefix}{len(held)}", requires_grad=False)
        return found
    return parameter


def _ms_batch_norm(call: Call) -> Route | Unmapped:
    """ops.batch_norm with the running statistics as Parameters, as nn.BatchNorm2d holds
    them: measured here on 8x32x32x32 in training, plain tensors cost 6.0 ms forward against
    1.6 ms, and 76 against 64 ms with the backward."""
    v = _values(call, ["input", "running_mean", "running_var", "weight", "bias", "training",
                       "momentum", "eps"])
    training = bool(_lit(v.training, False))
    momentum = float(_lit(v.momentum, 0.1))
    eps = float(_lit(v.eps, 1e-5))
    if any(getattr(v, n) is None or isinstance(getattr(v, n), Lit)
           for n in ("running_mean", "running_var", "weight", "bias")):
        return Unmapped("batch_norm without running statistics, weight or bias")

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        batch_norm = resolve("mindspore.ops.batch_norm")
        parameter = _as_parameter("running_")

        def run(x: Any, mean: Any, var: Any, weight: Any, bias: Any) -> Any:
            return batch_norm(x, parameter(mean), parameter(var), weight, bias, training,
                              momentum, eps)
        return run

    return Route("mindspore.ops.batch_norm (running statistics as Parameters)", make,
                 (v.input, v.running_mean, v.running_var, v.weight, v.bias))


def _ms_same_method(method: str) -> Callable[[Call], Route | Unmapped]:
    def rule(call: Call) -> Route | Unmapped:
        return _named("mindspore", f"mindspore.Tensor.{method}", call.args, call.kwargs)
    return rule


def _ms_transpose(call: Call) -> Route | Unmapped:
    return _named("mindspore", "mindspore.mint.transpose", call.args, call.kwargs)


def _ms_contiguous(call: Call) -> Route | Unmapped:
    return Route("identity (MindSpore tensors are contiguous)", lambda resolve: _identity,
                 call.args[:1])


def _identity(x: Any) -> Any:
    return x


def _ms_size(call: Call) -> Route | Unmapped:
    """x.size() and x.size(dim): MindSpore's shape is a property, not a method (the mapping's
    `Tensor.shape` called with the dim failed on nanoGPT's `x.size(1)`)."""
    dim = _values(call, ["self", "dim"]).dim
    if dim is None:
        return Route("mindspore.Tensor.shape", lambda resolve: lambda x: x.shape, call.args[:1])
    return Route("mindspore.Tensor.shape[dim]", lambda resolve: lambda x, d: x.shape[d],
                 (call.args[0], dim))


# torch.full's dtype when the call names none: torch infers it from the fill value (a bool
# -> bool, an int -> int64, a float -> the default float32); MindSpore 2.10's ops.full makes
# Int64 whatever the value (checked here: ops.full((2,), 0.5) is [0, 0] in Int64), so the
# CPU route is given torch's dtype.
_FILL_DTYPES = ((bool, "bool"), (int, "int64"), (float, "float32"))


def _fill_dtype(value: Any) -> Dtype | None:
    for kind, name in _FILL_DTYPES:
        if isinstance(value, kind):
            return Dtype(name)
    return None


def _ms_full(call: Call) -> Route | Unmapped:
    """torch.full(size, fill_value[, dtype=]): mint.full ("The kernel FillScalar
    unregistered" on CPU: 0.8% of hf_gpt2_generate.py), then ops.full with the dtype torch
    would give the tensor (_FILL_DTYPES)."""
    v = _values(call, ["size", "fill_value"])
    kwargs = dict(call.kwargs)
    primary = _named("mindspore", "mindspore.mint.full", call.args, call.kwargs)
    if "dtype" not in kwargs:
        dtype = _fill_dtype(_lit(v.fill_value))
        if dtype is None:
            return primary
        kwargs["dtype"] = dtype
    return replace(primary, fallbacks=(
        _named("mindspore", "mindspore.ops.full", (v.size, v.fill_value),
               (("dtype", kwargs["dtype"]),)),))


def _ms_normalize(call: Call) -> Route | Unmapped:
    """F.normalize(x, p=2, dim=1, eps=1e-12) is x / max(||x||_p over dim, eps): mint's
    (LinalgVectorNorm) has no CPU kernel in MindSpore 2.10 (5.8% of
    contrastive_clip_loss.py); written out with ops.norm, ops.clamp and a division."""
    v = _values(call, ["input", "p", "dim", "eps"])
    given = [a for a in (v.p, v.dim, v.eps) if a is not None]
    p, dim, eps = _lit(v.p, 2.0), _lit(v.dim, 1), _lit(v.eps, 1e-12)
    if not all(isinstance(a, Lit) for a in given) or isinstance(dim, bool) or \
            not all(isinstance(n, (int, float)) for n in (p, dim, eps)):
        return Unmapped("F.normalize with p, dim or eps that are not numbers")
    primary = _named("mindspore", "mindspore.mint.nn.functional.normalize", call.args,
                     call.kwargs)

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        norm, clamp = resolve("mindspore.ops.norm"), resolve("mindspore.ops.clamp")

        def normalize(x: Any) -> Any:
            return x / clamp(norm(x, float(p), dim, keepdim=True), min=eps)
        return normalize
    return replace(primary, fallbacks=(
        Route("mindspore.ops.norm, clamp and a division (as F.normalize)", make,
              (v.input,)),))


def _ms_isin(call: Call) -> Route | Unmapped:
    """torch.isin(elements, test_elements[, invert=]) (transformers' generate checks each new
    token against the stop tokens with it: 1.1% of hf_gpt2_generate.py): MindSpore 2.10 has
    no isin in mint or ops (mindspore.numpy.isin, the mapping's entry, is Python over ops
    too: in1d, then a reshape); written out as a port would, each element compared with
    every test element (ops.equal broadcast over a new last axis) and ops.any over it."""
    v = _values(call, ["elements", "test_elements", "assume_unique", "invert"])
    if v.elements is None or v.test_elements is None:
        return Unmapped("torch.isin without its elements or test elements")
    if v.invert is not None and not isinstance(v.invert, Lit):
        return Unmapped("torch.isin with an invert that is not a literal")
    invert = bool(_lit(v.invert, False))

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        equal, any_of = resolve("mindspore.ops.equal"), resolve("mindspore.ops.any")
        expand_dims, reshape = resolve("mindspore.ops.expand_dims"), resolve(
            "mindspore.ops.reshape")
        logical_not = resolve("mindspore.ops.logical_not")

        def isin(elements: Any, test_elements: Any) -> Any:
            if hasattr(test_elements, "shape"):
                test_elements = reshape(test_elements, (-1,))
            found = any_of(equal(expand_dims(elements, -1), test_elements), -1)
            return logical_not(found) if invert else found
        return isin
    return Route("mindspore.ops.equal + ops.any over the test elements (as torch.isin)", make,
                 (v.elements, v.test_elements))


TORCH_TO_MINDSPORE: dict[str, Callable[[Call], Route | Unmapped]] = {
    "torch.isin": _ms_isin,
    "torch.full": _ms_full,
    "torch.nn.functional.normalize": _ms_normalize,
    "torch.nn.functional.layer_norm": _ms_layer_norm,
    "torch.nn.functional.embedding": _ms_embedding,
    "torch.nn.functional.gelu": _ms_gelu,
    "torch.nn.functional.scaled_dot_product_attention": _ms_sdpa,
    "torch.nn.functional.conv1d": _ms_conv(1),
    "torch.nonzero": _ms_nonzero,
    "torch.Tensor.nonzero": _ms_nonzero,
    "torch.nn.functional.conv2d": _ms_conv(2),
    "torch.Tensor.transpose": _ms_transpose,
    "torch.transpose": _ms_transpose,
    "torch.Tensor.view": _ms_same_method("view"),
    "torch.Tensor.reshape": _ms_same_method("reshape"),
    "torch.Tensor.contiguous": _ms_contiguous,
    "torch.Tensor.size": _ms_size,
    "torch.arange": _ms_arange,
    "torch.Tensor.repeat": _ms_repeat,
    "torch.Tensor.flip": _ms_flip("mindspore.Tensor.flip"),
    "torch.flip": _ms_flip("mindspore.mint.flip"),
    "torch.roll": _ms_roll,
    "torch.nn.functional.max_pool2d": _ms_max_pool2d,
    "torch.nn.functional.batch_norm": _ms_batch_norm,
    "torch.Tensor.to": _ms_to,
    # the transposing properties the capture records (trace/torch_intercept.py
    # TENSOR_PROPERTIES): MindSpore 2.10's Tensor has the same four, as properties
    **{f"torch.Tensor.{name}": _ms_same_method(name) for name in ("T", "mT", "H", "mH")},
}
# what torch's training utilities call (clip_grad_norm_'s foreach calls, zero_): their own
# section, in training_routes.py
TORCH_TO_MINDSPORE.update(TRAINING_TORCH_TO_MINDSPORE)
# in-place methods MindSpore 2.10's CPU build has no kernel for, as a port writes them
TORCH_TO_MINDSPORE.update(INPLACE_TORCH_TO_MINDSPORE)
# layers lowered to functions a replay adapts in both frameworks (nn.LSTM, nn.EmbeddingBag)
TORCH_TO_MINDSPORE.update(LAYER_TORCH_TO_MINDSPORE)
# -- MindSpore -> torch rules ---------------------------------------------------------------

_init = init_arguments


def _torch_layer_norm_primitive(call: Call) -> Route | Unmapped:
    """ops.LayerNorm(begin_norm_axis, begin_params_axis, epsilon)(x, gamma, beta) returns
    (y, mean, variance) (the third checked against numpy's variance on MindSpore 2.10);
    torch.native_layer_norm returns (y, mean, rstd)."""
    init = _init(call, begin_norm_axis=1, begin_params_axis=1, epsilon=1e-7)
    norm_axis, params_axis = init.begin_norm_axis, init.begin_params_axis
    if norm_axis != params_axis:
        return Unmapped("ops.LayerNorm with begin_params_axis != begin_norm_axis has no torch "
                        "counterpart")
    eps = float(init.epsilon)

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        import torch

        def layer_norm(x: Any, gamma: Any, beta: Any) -> Any:
            y, mean, rstd = torch.native_layer_norm(x, x.shape[norm_axis % x.dim():], gamma,
                                                    beta, eps)
            return y, mean, rstd.pow(-2) - eps
        return layer_norm
    return Route("torch.native_layer_norm (as ops.LayerNorm)", make, call.args[:3])


def _torch_gather(call: Call) -> Route | Unmapped:
    """ops.gather(params, indices, axis): an embedding lookup on axis 0 (what a torch model
    calls), else index_select over the flattened indices."""
    v = _values(call, ["input_params", "input_indices", "axis", "batch_dims"])
    axis, batch_dims = _lit(v.axis, 0), _lit(v.batch_dims, 0)
    if batch_dims or axis is None:
        return Unmapped("ops.gather with batch_dims: no torch counterpart here")

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        import torch

        def gather(params: Any, indices: Any) -> Any:
            if axis == 0:
                return torch.nn.functional.embedding(indices, params)
            dim = axis % params.dim()
            flat = torch.index_select(params, dim, indices.reshape(-1))
            return flat.reshape(*params.shape[:dim], *indices.shape, *params.shape[dim + 1:])
        return gather
    return Route("torch.nn.functional.embedding / index_select (as ops.gather)", make,
                 (v.input_params, v.input_indices))


def _torch_cross_entropy(call: Call) -> Route | Unmapped:
    """ops.cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing):
    torch's takes size_average and reduce between them, so all but the first two go by name;
    MindSpore's labels are int32 and torch's class indices int64."""
    names = ["input", "target", "weight", "ignore_index", "reduction", "label_smoothing"]
    v = _values(call, names)
    given = tuple((n, getattr(v, n)) for n in names[2:] if getattr(v, n) is not None)

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        import torch

        def cross_entropy(logits: Any, labels: Any, **kwargs: Any) -> Any:
            if not labels.is_floating_point():
                labels = labels.long()
            return torch.nn.functional.cross_entropy(logits, labels, **kwargs)
        return cross_entropy
    return Route("torch.nn.functional.cross_entropy", make, (v.input, v.target), given)


def _torch_numpy(call: Call) -> Route | Unmapped:
    return Route("torch.Tensor.numpy", lambda resolve: lambda x: x.detach().numpy(),
                 call.args[:1])


def _torch_named(api: str) -> Callable[[Call], Route | Unmapped]:
    """Same arguments in the same order (checked against both frameworks' signatures)."""
    return lambda call: _named("torch", api, call.args, call.kwargs)


MINDSPORE_TO_TORCH: dict[str, Callable[[Call], Route | Unmapped]] = {
    "mindspore.ops.LayerNorm": _torch_layer_norm_primitive,
    "mindspore.ops.gather": _torch_gather,
    "mindspore.ops.cross_entropy": _torch_cross_entropy,
    "mindspore.Tensor.asnumpy": _torch_numpy,
    "mindspore.ops.dense": _torch_named("torch.nn.functional.linear"),
    "mindspore.ops.gelu": _torch_named("torch.nn.functional.gelu"),
    "mindspore.ops.arange": _torch_named("torch.arange"),
    "mindspore.ops.batch_norm": _torch_named("torch.nn.functional.batch_norm"),
    "mindspore.ops.relu": _torch_named("torch.relu"),
    "mindspore.ops.flatten": _torch_named("torch.flatten"),
    "mindspore.value_and_grad": torch_backward,
}
# MindSpore's padding made explicit, ops.assign as copy_ under no_grad: their own module
MINDSPORE_TO_TORCH.update(MINDSPORE_TO_TORCH_RULES)

# Rules that only improve on the API mapping's route: where they do not apply, or their
# route fails, the mapping's route is next.
MAPPING_AFTER_RULE = frozenset({"torch.nn.functional.max_pool2d",
                                "torch.nn.functional.batch_norm"})


def _via_mapping(call: Call, target: str, mapping: ApiMapping) -> Route | Unmapped:
    api = call.replay_api or call.api
    entry = mapping.lookup(call.framework, api)
    if entry is None:
        return Unmapped(f"no entry in the API mapping for {api}")
    other = entry.mindspore if target == "mindspore" else entry.torch
    if entry.status == "none" or not other:
        return Unmapped(f"no {target} equivalent: {entry.note}")
    kwargs = call.kwargs
    if entry.status == "differs" and kwargs:
        translated = _keywords_by_note(kwargs, keyword_rule(entry.note), other, entry.note)
        if isinstance(translated, Unmapped):
            return translated
        kwargs = translated
    call = replace(call, kwargs=kwargs)
    alternatives = tuple(entry.alternatives) if target == "mindspore" else ()
    route = _named(target, other, call.args, call.kwargs,
                   fallbacks=tuple(_keywords_by_signature(_named(target, alt, call.args,
                                                                 call.kwargs))
                                   for alt in alternatives))
    if target == "mindspore" and _is_inplace_method(api):
        return Route(f"{route.api} + assign (in place, as torch)", _in_place(route.make),
                     route.args, route.kwargs, fallbacks=_out_of_place(other, route))
    return route


def _out_of_place(method: str, route: Route) -> tuple[Route, ...]:
    """An in-place MindSpore method's out-of-place twin, written back: MindSpore 2.10's CPU
    build has no kernel for several in-place methods whose twin it has (masked_fill_:
    "The kernel InplaceMaskedFillScalar unregistered"; masked_fill runs: 5% of
    masking_indexing_inplace.py's traced time)."""
    prefix = MINDSPORE_TENSOR_PREFIX
    name = method[len(prefix):] if method.startswith(prefix) else ""
    if not name.endswith("_") or name.startswith("_"):
        return ()
    twin = prefix + name[:-1]
    return (Route(f"{twin} + assign (in place, as torch)",
                  _in_place(_by_name("mindspore", twin)), route.args, route.kwargs),)


# torch's keyword -> what MindSpore's `ops` namespace calls it. A mapping entry's note
# describes its primary route (mint, torch's names); its CPU alternatives are mostly `ops`
# functions, which spell the same parameter as numpy does: ops.stack(dim=0) failed
# ("unexpected keyword argument"), and so did ops.log_softmax and ops.cumsum (1-4% of the
# traced time in five conformance scripts).
TORCH_KEYWORD_SYNONYMS = {"dim": ("axis",), "keepdim": ("keep_dims", "keepdims")}


def _keywords_by_signature(route: Route) -> Route:
    """The route with torch's keywords renamed to the callee's synonyms, by its signature,
    read where the callee is resolved (a keyword it takes is kept; one it takes under a
    synonym of TORCH_KEYWORD_SYNONYMS is renamed; the rest is left to fail as it would)."""
    make = route.make
    if not any(k in TORCH_KEYWORD_SYNONYMS for k, _ in route.kwargs):
        return route

    def made(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        fn = make(resolve)
        accepted = _keyword_parameters(fn)
        if accepted is None:
            return fn
        renames = {}
        for name, synonyms in TORCH_KEYWORD_SYNONYMS.items():
            if name not in accepted:
                renames.update((name, s) for s in synonyms[::-1] if s in accepted)
        if not renames:
            return fn

        def renamed(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **{renames.get(k, k): v for k, v in kwargs.items()})
        return renamed
    return replace(route, make=made)


def _keyword_parameters(fn: Any) -> frozenset[str] | None:
    """The names a callable takes by keyword (None: unknown, or it takes any)."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):       # a builtin without a signature
        return None
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return None
    return frozenset(p.name for p in parameters
                     if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


def _is_inplace_method(api: str) -> bool:
    """torch's in-place methods and augmented assignments (`p -= lr * g`: MindSpore's
    Tensor.__isub__ too returns a new tensor and leaves a Parameter as it was)."""
    return api.startswith(TORCH_TENSOR_PREFIX) and is_in_place(api)


def _in_place(make: Maker) -> Maker:
    """MindSpore 2.10's Tensor.add_, mul_, ... return a new tensor and leave the receiver as
    it was (checked here: p.add_(g) left a Parameter p unchanged), where torch's write the
    receiver. An optimizer's update replayed without writing back would leave the weights
    unchanged: the result is assigned to the receiver, as a MindSpore port's update does
    (ops.assign)."""
    def made(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        fn = make(resolve)

        def in_place(receiver: Any, *args: Any, **kwargs: Any) -> Any:
            return write_back(receiver, fn(receiver, *args, **kwargs))
        return in_place
    return made


def _constructed(framework: str, api: str, init: tuple[tuple[str, Any], ...]) -> Maker:
    """A MindSpore primitive built once from its constructor arguments."""
    spelled = case_spelling(framework, api)
    return lambda resolve: resolve(spelled)(**dict(init))


def _picked(route: Route, index: int) -> Route:
    """The route's call, returning one element of its result (a layer that lowered to a
    primitive returning several: nn.LayerNorm's output of LayerNorm's three)."""
    make = route.make

    def made(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        fn = make(resolve)
        return lambda *args, **kwargs: fn(*args, **kwargs)[index]
    return replace(route, api=f"{route.api}[{index}]", make=made,
                   fallbacks=tuple(_picked(f, index) for f in route.fallbacks))


def fused_momentum_route(fold: MomentumFold) -> Route:
    """torch SGD's three-call update of one weight as MindSpore's ApplyMomentum (the fused
    per-weight update nn.Momentum runs; nn.SGD's SGD kernel is its like), on the weight and
    its momentum buffer as Parameters (the kernel updates them in place; a buffer that is a
    plain tensor gets one Parameter, made once). Fallback: the same arithmetic in MindSpore
    calls, written back with ops.assign."""
    def fused(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        import mindspore
        apply_momentum, parameter = mindspore.ops.ApplyMomentum(), _as_parameter("momentum_")
        lr = mindspore.Tensor(fold.learning_rate, mindspore.float32)
        momentum = mindspore.Tensor(fold.momentum, mindspore.float32)

        def update(param: Any, buf: Any, grad: Any) -> Any:
            weight = parameter(param)
            apply_momentum(weight, parameter(buf), lr, grad, momentum)
            return weight
        return update

    def call_by_call(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        import mindspore
        parameter = _as_parameter("momentum_")

        def update(param: Any, buf: Any, grad: Any) -> Any:
            param, buf = parameter(param), parameter(buf)
            mindspore.ops.assign(buf, buf * fold.momentum + grad)
            mindspore.ops.assign(param, param - fold.learning_rate * buf)
            return param
        return update

    args = (fold.param, fold.buf, fold.grad)
    return Route("mindspore.ops.ApplyMomentum (as nn.SGD's update)", fused, args,
                 fallbacks=(Route("mindspore mul, add, assign (SGD momentum update)",
                                  call_by_call, args),))


def fused_adam_route(fold: AdamFold) -> Route:
    """torch Adam's per-weight update as MindSpore's ops.Adam (what nn.Adam runs), with the
    bias corrections carried by beta1_power 0 and beta2_power (optimizer_fold.py), on the
    weight and its two moment buffers as Parameters."""
    def fused(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        import mindspore
        adam, parameter = mindspore.ops.Adam(), _as_parameter("adam_moment_")
        scalars = [mindspore.Tensor(v, mindspore.float32)
                   for v in (0.0, fold.beta2_power, fold.step_size, fold.beta1, fold.beta2,
                             fold.eps)]

        def update(param: Any, m: Any, v: Any, grad: Any) -> Any:
            # the kernel updates its Parameters in place; its first output is not the
            # updated weight (2.3 off it on a 32-vector here), so the weight is returned
            weight = parameter(param)
            adam(weight, parameter(m), parameter(v), *scalars, grad)
            return weight
        return update

    if fold.decay_factor != 1.0:
        return _fused_adamw_route(fold)
    return Route("mindspore.ops.Adam (as nn.Adam's update)", fused,
                 (fold.param, fold.m, fold.v, fold.grad))


def _fused_adamw_route(fold: AdamFold) -> Route:
    """AdamW's decay and update as MindSpore's AdamWeightDecay kernel (nn.AdamWeightDecay's),
    with torch's bias corrections carried by its learning rate and eps (optimizer_fold.py)."""
    bc2_sqrt = math.sqrt(1.0 - fold.beta2_power)
    lr = fold.step_size * bc2_sqrt
    settings = (lr, fold.beta1, fold.beta2, fold.eps * bc2_sqrt,
                (1.0 - fold.decay_factor) / lr)

    def fused(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        import mindspore
        adamw, parameter = mindspore.ops.AdamWeightDecay(), _as_parameter("adamw_moment_")

        def update(param: Any, m: Any, v: Any, grad: Any) -> Any:
            weight = parameter(param)
            adamw(weight, parameter(m), parameter(v), *settings, grad)
            return weight
        return update

    return Route("mindspore.ops.AdamWeightDecay (as nn.AdamWeightDecay's update)", fused,
                 (fold.param, fold.m, fold.v, fold.grad))


def route_for(call: Call, target: str, mapping: ApiMapping) -> Route | Unmapped:
    """The route that replays `call` in framework `target`."""
    found = _route_for(call, target, mapping)
    if isinstance(found, Route) and call.pick is not None:
        return _picked(found, call.pick)
    return found


def _route_for(call: Call, target: str, mapping: ApiMapping) -> Route | Unmapped:
    if call.replay_api is None:
        return Unmapped(call.problem or "not replayable")
    if call.replay_api == FUNCTION_APPLY:
        # in both frameworks, the traced one too: its replay cannot run the script's backward
        return straight_through_route(call, target)
    if call.replay_api in OPTIMIZER_APIS:
        return optimizer_route(call, target)
    if call.replay_api == MOMENTUM:
        return momentum_route(call, target)
    if call.replay_api == ADAM_WEIGHT_DECAY:
        return adam_weight_decay_route(call, target)
    if call.replay_api == TORCH_SGD:
        return torch_sgd_route(call, target)
    if call.framework == target:
        if call.replay_api in OWN_FRAMEWORK_RULES:
            return OWN_FRAMEWORK_RULES[call.replay_api](call)
        if call.init or call.kind == "primitive":
            return Route(call.replay_api, _constructed(target, call.replay_api, call.init),
                         call.args, call.kwargs)
        return _named(target, call.replay_api, call.args, call.kwargs)
    if call.framework == "mindspore" and target == "torch":
        rule = MINDSPORE_TO_TORCH.get(call.replay_api)
        if rule is not None:
            return rule(call)
        if call.init:
            return Unmapped(f"no torch rule for the MindSpore primitive {call.replay_api}")
        call = primitive_as_function(call, mapping) or ops_as_mint(call, mapping) or call
    call = _for_other_framework(call, target)
    if call.framework == "torch" and target == "mindspore":
        if call.replay_api in CONCATENATIONS:
            return _ms_cat(call, mapping)
        if call.replay_api in MAGNITUDES:
            return _ms_magnitude(call, mapping)
        if call.replay_api in INDEX_REDUCTIONS:
            return _ms_zero_size(call, mapping)
        if call.replay_api == "torch.einsum":
            # mint.einsum, then the einsum written out (einsum_route.py)
            return einsum_route(call, _via_mapping(call, target, mapping))
        rule = TORCH_TO_MINDSPORE.get(call.replay_api)
        if rule is not None:
            found = rule(call)
            if call.replay_api not in MAPPING_AFTER_RULE:
                return found
            backup = _via_mapping(call, target, mapping)
            if isinstance(found, Unmapped):
                return backup
            if isinstance(backup, Route):
                found = replace(found, fallbacks=found.fallbacks + (backup, *backup.fallbacks))
            return found
    return _via_mapping(call, target, mapping)

"""torch's LSTM and EmbeddingBag (lowered by capture/sequence_lowering.py to `torch.lstm`
and `F.embedding_bag`) in both frameworks.

In torch (the traced framework), the call itself, with two adaptations:
- `torch.lstm` returns (output, h_n, c_n) where the layer returned (output, (h_n, c_n)):
  the route returns the layer's form, so the program's paths into it (recorded on the
  layer's output) read the same tensors; without initial states it starts from zeros, as
  the layer does.
- `F.embedding_bag`'s offsets are an external tensor the replay draws from its observed range
  (program.ExternalTensor), but torch refuses offsets that do not start at 0 and needs them
  nondecreasing: they are sorted and the first set to 0, once per tensor (kept, so no step
  pays for it), in both frameworks alike. Every index is still in a bag (the last bag runs to
  the end), so the work is the script's: N rows gathered and reduced into len(offsets) bags.

In MindSpore, what a port writes:
- LSTM: what mindspore.nn.LSTM runs on CPU, layer by layer and direction by direction
  (nn.layer.rnns._DynamicLSTMCPUGPU: the weights concatenated, the two biases summed, one
  ops.LSTM kernel; the backward direction on the sequence reversed), on torch's weights
  (the same gate order i, f, g, o: checked against torch on CPU,
  tests/integration/test_model_cover_routes_real.py).
- EmbeddingBag: ops.gather of the rows, then a sum / mean / max per bag
  (ops.unsorted_segment_sum / _max over bag ids from the offsets by ops.searchsorted), or
  over the second axis for a 2-D input (bags of equal length, no offsets)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np

from opbench.model.program import Call, Lit
from opbench.model.replay.call_arguments import bound, literal
from opbench.model.replay.ms_layer_kernels import MINDSPORE_LAYER_KERNELS
from opbench.model.replay.route import Route, Unmapped

__all__ = ["OWN_FRAMEWORK_RULES", "LAYER_TORCH_TO_MINDSPORE"]

LSTM_PARAMETERS = ["input", "hx", "params", "has_biases", "num_layers", "dropout", "train",
                   "bidirectional", "batch_first"]
BAG_PARAMETERS = ["input", "weight", "offsets", "max_norm", "norm_type", "scale_grad_by_freq",
                  "mode", "sparse", "per_sample_weights", "include_last_offset",
                  "padding_idx"]
BAG_MODES = ("sum", "mean", "max")
# torch.nn.functional.multi_head_attention_forward's parameters (torch 2.13); MindSpore 2.10's
# ops.function.nn_func.multi_head_attention_forward has the same but need_weights
MHA_PARAMETERS = ["query", "key", "value", "embed_dim_to_check", "num_heads", "in_proj_weight",
                  "in_proj_bias", "bias_k", "bias_v", "add_zero_attn", "dropout_p",
                  "out_proj_weight", "out_proj_bias", "training", "key_padding_mask",
                  "need_weights", "attn_mask", "use_separate_proj_weight", "q_proj_weight",
                  "k_proj_weight", "v_proj_weight", "static_k", "static_v",
                  "average_attn_weights", "is_causal"]


# -- offsets a replay can use -----------------------------------------------------------------

def usable_offsets(values: np.ndarray, rows: int) -> np.ndarray:
    """Offsets torch accepts, from drawn ones: sorted, within [0, rows], the first 0."""
    fixed = np.clip(np.sort(np.asarray(values, dtype=np.int64).ravel()), 0, rows)
    if fixed.size:
        fixed[0] = 0
    return fixed


class _Offsets:
    """Each offsets tensor made usable once and kept (held with the tensor, so an id reused
    by another object is not mistaken for it)."""

    def __init__(self, to_numpy: Callable[[Any], np.ndarray],
                 from_numpy: Callable[[np.ndarray, Any], Any]):
        self._to_numpy, self._from_numpy = to_numpy, from_numpy
        self._held: dict[int, tuple[Any, Any]] = {}

    def __call__(self, offsets: Any, rows: int) -> Any:
        found = self._held.get(id(offsets))
        if found is not None and found[0] is offsets:
            return found[1]
        usable = self._from_numpy(usable_offsets(self._to_numpy(offsets), rows), offsets)
        if len(self._held) > 64:            # offsets made by the step itself: new each step
            self._held.clear()
        self._held[id(offsets)] = (offsets, usable)
        return usable


def _numpy_of(tensor: Any) -> np.ndarray:
    return tensor.asnumpy() if hasattr(tensor, "asnumpy") else np.asarray(tensor)


def _tensor_like(values: np.ndarray, like: Any) -> Any:
    """`values` as a tensor of `like`'s framework and dtype (a MindSpore tensor; a numpy
    array where numpy stands in for it)."""
    if isinstance(like, np.ndarray):
        return values.astype(like.dtype)
    import mindspore
    return mindspore.Tensor(values, like.dtype)


# -- torch: the call itself, in the layer's form ---------------------------------------------

@dataclass(frozen=True)
class LstmSettings:
    """torch.lstm's arguments: the three tensors (program arguments) and its settings as
    numbers."""

    input: Any
    hx: Any
    params: Any
    has_biases: bool
    num_layers: int
    dropout: float
    train: bool
    bidirectional: bool
    batch_first: bool


def _lstm_settings(call: Call) -> LstmSettings | Unmapped:
    v = bound(call, LSTM_PARAMETERS)
    settings = {n: literal(getattr(v, n)) for n in LSTM_PARAMETERS[3:]}
    if any(value is None for value in settings.values()) or v.params is None:
        return Unmapped(f"{call.replay_api} without its settings as numbers")
    return LstmSettings(input=v.input, hx=v.hx or Lit(None), params=v.params, **settings)


def _torch_lstm(call: Call) -> Route | Unmapped:
    s = _lstm_settings(call)
    if isinstance(s, Unmapped):
        return s

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        import torch

        def lstm(x: Any, hx: Any, params: Any) -> Any:
            if hx is None:
                hx = [_zero_state(x, params, s, x.new_zeros)] * 2
            out, h, c = torch.lstm(x, tuple(hx), list(params), s.has_biases,
                                   s.num_layers, s.dropout, s.train,
                                   s.bidirectional, s.batch_first)
            return out, (h, c)
        return lstm
    return Route("torch.lstm (as nn.LSTM)", make, (s.input, s.hx, s.params))


def _zero_state(x: Any, params: Any, s: LstmSettings, zeros: Callable[..., Any]) -> Any:
    directions = 2 if s.bidirectional else 1
    batch = x.shape[0] if s.batch_first else x.shape[1]
    return zeros((s.num_layers * directions, batch, params[1].shape[1]))


@dataclass(frozen=True)
class BagSettings:
    """F.embedding_bag's arguments: the tensors (program arguments) and its settings."""

    input: Any
    weight: Any
    offsets: Any
    mode: str
    per_sample_weights: Any
    include_last_offset: bool
    padding_idx: int | None


def _bag_settings(call: Call) -> BagSettings | Unmapped:
    v = bound(call, BAG_PARAMETERS)
    mode = literal(v.mode, "mean")
    if mode not in BAG_MODES:
        return Unmapped(f"embedding_bag with mode {mode!r}")
    for name in ("max_norm", "scale_grad_by_freq", "sparse"):
        if literal(getattr(v, name), None) not in (None, False):
            return Unmapped(f"embedding_bag with {name}: not replayed")
    return BagSettings(input=v.input, weight=v.weight, offsets=v.offsets or Lit(None),
                       mode=mode, per_sample_weights=v.per_sample_weights or Lit(None),
                       include_last_offset=bool(literal(v.include_last_offset, False)),
                       padding_idx=literal(v.padding_idx, None))


def _torch_embedding_bag(call: Call) -> Route | Unmapped:
    s = _bag_settings(call)
    if isinstance(s, Unmapped):
        return s

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        import torch
        offsets_of = _Offsets(lambda t: t.detach().cpu().numpy(),
                              lambda a, like: torch.as_tensor(a, dtype=like.dtype))

        def embedding_bag(ids: Any, weight: Any, offsets: Any, per_sample: Any) -> Any:
            if offsets is not None:
                offsets = offsets_of(offsets, ids.numel())
            return torch.nn.functional.embedding_bag(
                ids, weight, offsets, mode=s.mode, per_sample_weights=per_sample,
                include_last_offset=s.include_last_offset, padding_idx=s.padding_idx)
        return embedding_bag
    return Route("torch.nn.functional.embedding_bag (offsets made usable)", make,
                 (s.input, s.weight, s.offsets, s.per_sample_weights))


# -- MindSpore: what a port writes -------------------------------------------------------------

def _ms_lstm(call: Call) -> Route | Unmapped:
    s = _lstm_settings(call)
    if isinstance(s, Unmapped):
        return s
    per_direction = 4 if s.has_biases else 2
    directions = 2 if s.bidirectional else 1

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        import mindspore
        from mindspore.nn.layer.rnns import _DynamicLSTMCPUGPU
        ops = mindspore.ops
        cell, reverse = _DynamicLSTMCPUGPU(), ops.ReverseV2(axis=[0])

        def lstm(x: Any, hx: Any, params: Any) -> Any:
            if s.batch_first:
                x = ops.transpose(x, (1, 0, 2))
            if hx is None:
                zero = _zero_state(x, params, replace(s, batch_first=False),
                                   lambda shape: ops.zeros(shape, x.dtype))
                hx = (zero, zero)
            h0, c0 = hx
            hs, cs, layer_input = [], [], x
            for layer in range(s.num_layers):
                outs = []
                for d in range(directions):
                    k = layer * directions + d
                    w = list(params[k * per_direction:(k + 1) * per_direction])
                    biases = w[2:] if s.has_biases else [None, None]
                    seq = reverse(layer_input) if d else layer_input
                    out, (h, c) = cell(seq, (h0[k], c0[k]), None, w[0], w[1], *biases)
                    outs.append(reverse(out) if d else out)
                    hs.append(h)
                    cs.append(c)
                layer_input = ops.cat(outs, 2) if directions == 2 else outs[0]
                if s.train and s.dropout and layer < s.num_layers - 1:
                    layer_input = ops.dropout(layer_input, p=s.dropout, training=True)
            out = ops.transpose(layer_input, (1, 0, 2)) if s.batch_first else layer_input
            return out, (ops.cat(hs, 0).view(h0.shape), ops.cat(cs, 0).view(c0.shape))
        return lstm
    return Route("mindspore nn.LSTM's CPU kernel per layer and direction (ops.LSTM, as "
                 "nn.LSTM)", make, (s.input, s.hx, s.params))


def _ms_gru(call: Call) -> Route | Unmapped:
    """torch.gru (nn.GRU's call, traced through: capture/lowering.py traced_through) takes
    torch.lstm's arguments with one state tensor: what mindspore.nn.GRU runs on CPU, layer
    by layer and direction by direction (nn.layer.rnns._DynamicGRUCPUGPU: a Python loop of
    rnn_cells._gru_cell over the time steps, no fused kernel), on torch's weights (the same
    gate order r, z, n and update h' = n + z * (h - n): rnn_cells._gru_cell in MindSpore
    2.10; checked against torch on CPU, tests/integration/test_model_cover_routes_real.py)."""
    s = _lstm_settings(call)
    if isinstance(s, Unmapped):
        return s
    per_direction = 4 if s.has_biases else 2
    directions = 2 if s.bidirectional else 1

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        import mindspore
        from mindspore.nn.layer.rnns import _DynamicGRUCPUGPU
        ops = mindspore.ops
        cell, reverse = _DynamicGRUCPUGPU(), ops.ReverseV2(axis=[0])

        def gru(x: Any, hx: Any, params: Any) -> Any:
            if s.batch_first:
                x = ops.transpose(x, (1, 0, 2))
            if hx is None:
                hx = _zero_state(x, params, replace(s, batch_first=False),
                                 lambda shape: ops.zeros(shape, x.dtype))
            hs, layer_input = [], x
            for layer in range(s.num_layers):
                outs = []
                for d in range(directions):
                    k = layer * directions + d
                    w = list(params[k * per_direction:(k + 1) * per_direction])
                    biases = w[2:] if s.has_biases else [None, None]
                    seq = reverse(layer_input) if d else layer_input
                    out, h = cell(seq, hx[k], None, w[0], w[1], *biases)
                    outs.append(reverse(out) if d else out)
                    hs.append(h)
                layer_input = ops.cat(outs, 2) if directions == 2 else outs[0]
                if s.train and s.dropout and layer < s.num_layers - 1:
                    layer_input = ops.dropout(layer_input, p=s.dropout, training=True)
            out = ops.transpose(layer_input, (1, 0, 2)) if s.batch_first else layer_input
            return out, ops.cat(hs, 0).view(hx.shape)
        return gru
    return Route("mindspore nn.GRU's CPU loop per layer and direction (_DynamicGRUCPUGPU, "
                 "as nn.GRU)", make, (s.input, s.hx, s.params))


def _ms_multi_head_attention(call: Call) -> Route | Unmapped:
    """F.multi_head_attention_forward (nn.MultiheadAttention's call, traced through) as the
    functional mindspore.nn.MultiheadAttention runs (in_proj, the heads' bmm, softmax with
    the masks, dropout, out_proj), every argument by its name: the mapping's positional rule
    refused the call's keywords (55% of mha_einsum_padding_inference.py not covered). It has
    no need_weights (it always returns the averaged weights): the route returns None for them
    where the call asked for none, as torch does."""
    v = bound(call, MHA_PARAMETERS)
    need_weights = True if v.need_weights is None else literal(v.need_weights)
    if not isinstance(need_weights, bool):
        return Unmapped("multi_head_attention_forward with need_weights not a literal")
    names = [n for n in MHA_PARAMETERS if n != "need_weights" and getattr(v, n) is not None]

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        from mindspore.ops.function.nn_func import multi_head_attention_forward

        def attention(*values: Any) -> Any:
            out, weights = multi_head_attention_forward(**dict(zip(names, values)))
            return out, (weights if need_weights else None)
        return attention
    return Route("mindspore.ops.function.nn_func.multi_head_attention_forward (as "
                 "nn.MultiheadAttention)", make, tuple(getattr(v, n) for n in names))


def _ms_embedding_bag(call: Call) -> Route | Unmapped:
    s = _bag_settings(call)
    if isinstance(s, Unmapped):
        return s
    if s.include_last_offset or s.padding_idx is not None:
        return Unmapped("embedding_bag with include_last_offset or padding_idx: not replayed "
                        "in MindSpore")
    mode = s.mode

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        op = SimpleNamespace(**{name: resolve(f"mindspore.ops.{name}") for name in (
            "gather", "searchsorted", "unsorted_segment_sum", "unsorted_segment_max", "arange",
            "ones", "maximum", "where", "zeros_like", "sum", "mean", "amax")})
        offsets_of = _Offsets(_numpy_of, _tensor_like)

        def embedding_bag(ids: Any, weight: Any, offsets: Any, per_sample: Any) -> Any:
            rows = op.gather(weight, ids.reshape(-1), 0)
            if per_sample is not None:
                rows = rows * per_sample.reshape(-1, 1)
            if ids.ndim == 2:
                rows = rows.reshape(ids.shape[0], ids.shape[1], -1)
                return getattr(op, {"sum": "sum", "mean": "mean", "max": "amax"}[mode])(rows, 1)
            n, bags = ids.shape[0], offsets.shape[0]
            offsets = offsets_of(offsets, n)
            positions = op.arange(n, dtype=offsets.dtype)
            bag_of = op.searchsorted(offsets, positions, right=True) - 1
            reduce = (op.unsorted_segment_max if mode == "max" else op.unsorted_segment_sum)
            found = reduce(rows, bag_of, bags)
            if mode == "sum":
                return found
            counts = op.unsorted_segment_sum(op.ones((n,), rows.dtype), bag_of, bags)
            if mode == "mean":
                return found / op.maximum(counts, 1).reshape(-1, 1)
            # an empty bag: torch's max is 0 (unsorted_segment_max's is the lowest float)
            return op.where(counts.reshape(-1, 1) > 0, found, op.zeros_like(found))
        return embedding_bag
    return Route("mindspore.ops.gather + unsorted_segment_sum/max per bag (as "
                 "F.embedding_bag)", make,
                 (s.input, s.weight, s.offsets, s.per_sample_weights))


def _ms_rnn_cell(kind: str) -> Callable[[Call], Route | Unmapped]:
    """torch.lstm_cell(input, (hx, cx), w_ih, w_hh, b_ih, b_hh) and torch.gru_cell(input, hx,
    ...) (nn.LSTMCell / nn.GRUCell's calls, stepped by a script's own loop: 24% of
    lstmcell_teacher_forcing.py) as mindspore.nn.LSTMCell / GRUCell run them
    (nn.layer.rnn_cells._lstm_cell / _gru_cell: MatMul with the weight transposed, Split,
    Sigmoid, Tanh), on torch's weights: the same gate order (i, f, g, o; r, z, n) and the
    same update (MindSpore 2.10's source; checked against torch on CPU,
    tests/integration/test_model_cover_routes_real.py)."""
    names = ["input", "hx", "w_ih", "w_hh", "b_ih", "b_hh"]

    def rule(call: Call) -> Route | Unmapped:
        v = bound(call, names)
        if v.input is None or v.hx is None or v.w_ih is None or v.w_hh is None:
            return Unmapped(f"torch.{kind}_cell without its input, state or weights")

        def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
            from mindspore.nn.layer import rnn_cells
            cell = getattr(rnn_cells, f"_{kind}_cell")

            def step(x: Any, hx: Any, w_ih: Any, w_hh: Any, b_ih: Any = None,
                     b_hh: Any = None) -> Any:
                return cell(x, tuple(hx) if kind == "lstm" else hx, w_ih, w_hh, b_ih, b_hh)
            return step
        return Route(f"mindspore nn.layer.rnn_cells._{kind}_cell (as nn."
                     f"{kind.upper()}Cell)", make,
                     (v.input, v.hx, v.w_ih, v.w_hh, *(Lit(None) if b is None else b
                                                     for b in (v.b_ih, v.b_hh))))
    return rule


OWN_FRAMEWORK_RULES: dict[str, Callable[[Call], Route | Unmapped]] = {
    "torch.lstm": _torch_lstm,
    "torch.nn.functional.embedding_bag": _torch_embedding_bag,
    # a MindSpore layer with the kernels it runs (ms_layer_kernels.py)
    **MINDSPORE_LAYER_KERNELS,
}
LAYER_TORCH_TO_MINDSPORE: dict[str, Callable[[Call], Route | Unmapped]] = {
    "torch.lstm": _ms_lstm,
    "torch.gru": _ms_gru,
    "torch.lstm_cell": _ms_rnn_cell("lstm"),
    "torch.gru_cell": _ms_rnn_cell("gru"),
    "torch.nn.functional.multi_head_attention_forward": _ms_multi_head_attention,
    "torch.nn.functional.embedding_bag": _ms_embedding_bag,
}

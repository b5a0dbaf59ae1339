"""A framework layer's call as the function call it performs, from the layer's own
attributes: `nn.Linear(x)` is `F.linear(x, weight, bias)`, `nn.LayerNorm(x)` is
`F.layer_norm(x, normalized_shape, weight, bias, eps)`. A replay then needs no constructor,
and the layer's weights become the program's external tensors (shared with every other use
of the same parameter).

lower(api, layer, args, kwargs) -> Lowered | str: the function and its arguments (Python
values: tensors stay tensors), or the reason the layer has no function form here. An
eval-mode Dropout (and Identity) computes nothing: it lowers to an alias of its input.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["Lowered", "lower", "LOWERINGS"]

F = "torch.nn.functional."


@dataclass(frozen=True)
class Lowered:
    api: str | None                 # None: an alias (the layer returns its input)
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...] = ()


def _first(args: tuple, kwargs: dict, name: str = "input") -> Any:
    if args:
        return args[0]
    if name in kwargs:
        return kwargs[name]
    raise ValueError(f"no '{name}' argument")


def _pair_or_int(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


# -- torch.nn ---------------------------------------------------------------------------

def _linear(m: Any, args: tuple, kwargs: dict) -> Lowered:
    return Lowered(F + "linear", (_first(args, kwargs), m.weight, m.bias))


def _layer_norm(m: Any, args: tuple, kwargs: dict) -> Lowered:
    return Lowered(F + "layer_norm", (_first(args, kwargs), list(m.normalized_shape),
                                      m.weight, m.bias, float(m.eps)))


def _embedding(m: Any, args: tuple, kwargs: dict) -> Lowered | str:
    if m.max_norm is not None:
        return "Embedding with max_norm renormalises its weight in place: not replayed"
    extra = (("padding_idx", m.padding_idx),) if m.padding_idx is not None else ()
    return Lowered(F + "embedding", (_first(args, kwargs), m.weight), extra)


def _conv(dims: int) -> Callable[[Any, tuple, dict], Lowered | str]:
    def lowered(m: Any, args: tuple, kwargs: dict) -> Lowered | str:
        if m.padding_mode != "zeros":
            return f"Conv{dims}d with padding_mode={m.padding_mode!r}: not replayed"
        padding = m.padding if isinstance(m.padding, str) else _pair_or_int(m.padding)
        return Lowered(F + f"conv{dims}d", (_first(args, kwargs), m.weight, m.bias,
                                            _pair_or_int(m.stride), padding,
                                            _pair_or_int(m.dilation), m.groups))
    return lowered


def _batch_norm(m: Any, args: tuple, kwargs: dict) -> Lowered:
    training = m.training or not m.track_running_stats
    momentum = 0.0 if m.momentum is None else float(m.momentum)
    return Lowered(F + "batch_norm", (_first(args, kwargs), m.running_mean, m.running_var,
                                      m.weight, m.bias, training, momentum, float(m.eps)))


def _dropout(m: Any, args: tuple, kwargs: dict) -> Lowered:
    x = _first(args, kwargs)
    if not m.training or m.p == 0:
        return Lowered(None, (x,))
    return Lowered(F + "dropout", (x, float(m.p), True))


def _identity(m: Any, args: tuple, kwargs: dict) -> Lowered:
    return Lowered(None, (_first(args, kwargs),))


def _unary(api: str) -> Callable[[Any, tuple, dict], Lowered]:
    def lowered(m: Any, args: tuple, kwargs: dict) -> Lowered:
        return Lowered(api, (_first(args, kwargs),))
    return lowered


def _gelu(m: Any, args: tuple, kwargs: dict) -> Lowered:
    extra = (("approximate", m.approximate),) if m.approximate != "none" else ()
    return Lowered(F + "gelu", (_first(args, kwargs),), extra)


def _softmax(name: str) -> Callable[[Any, tuple, dict], Lowered]:
    def lowered(m: Any, args: tuple, kwargs: dict) -> Lowered:
        return Lowered(F + name, (_first(args, kwargs),), (("dim", m.dim),))
    return lowered


def _max_pool(dims: int) -> Callable[[Any, tuple, dict], Lowered | str]:
    def lowered(m: Any, args: tuple, kwargs: dict) -> Lowered | str:
        if m.return_indices:
            return "MaxPool with return_indices: not replayed"
        return Lowered(F + f"max_pool{dims}d", (
            _first(args, kwargs), _pair_or_int(m.kernel_size), _pair_or_int(m.stride),
            _pair_or_int(m.padding), _pair_or_int(m.dilation), bool(m.ceil_mode)))
    return lowered


def _avg_pool(dims: int) -> Callable[[Any, tuple, dict], Lowered]:
    def lowered(m: Any, args: tuple, kwargs: dict) -> Lowered:
        return Lowered(F + f"avg_pool{dims}d", (
            _first(args, kwargs), _pair_or_int(m.kernel_size), _pair_or_int(m.stride),
            _pair_or_int(m.padding), bool(m.ceil_mode), bool(m.count_include_pad)))
    return lowered


def _adaptive_avg_pool(dims: int) -> Callable[[Any, tuple, dict], Lowered]:
    def lowered(m: Any, args: tuple, kwargs: dict) -> Lowered:
        return Lowered(F + f"adaptive_avg_pool{dims}d",
                       (_first(args, kwargs), _pair_or_int(m.output_size)))
    return lowered


def _cross_entropy(m: Any, args: tuple, kwargs: dict) -> Lowered:
    extra = []
    if m.weight is not None:
        extra.append(("weight", m.weight))
    if m.ignore_index != -100:
        extra.append(("ignore_index", m.ignore_index))
    if m.reduction != "mean":
        extra.append(("reduction", m.reduction))
    if m.label_smoothing:
        extra.append(("label_smoothing", float(m.label_smoothing)))
    target = args[1] if len(args) > 1 else kwargs["target"]
    return Lowered(F + "cross_entropy", (_first(args, kwargs), target), tuple(extra))


def _mse(m: Any, args: tuple, kwargs: dict) -> Lowered:
    target = args[1] if len(args) > 1 else kwargs["target"]
    extra = (("reduction", m.reduction),) if m.reduction != "mean" else ()
    return Lowered(F + "mse_loss", (_first(args, kwargs), target), extra)


def _flatten(m: Any, args: tuple, kwargs: dict) -> Lowered:
    return Lowered("torch.flatten", (_first(args, kwargs), m.start_dim, m.end_dim))


# -- mindspore.nn -------------------------------------------------------------------------

def _ms_dense(m: Any, args: tuple, kwargs: dict) -> Lowered | str:
    if getattr(m, "activation_flag", False) or getattr(m, "activation", None) is not None:
        return "nn.Dense with an activation: not replayed (call the activation separately)"
    bias = m.bias if getattr(m, "has_bias", True) else None
    return Lowered("mindspore.ops.dense", (_first(args, kwargs, "x"), m.weight, bias))


def _ms_identity(m: Any, args: tuple, kwargs: dict) -> Lowered:
    return Lowered(None, (_first(args, kwargs, "x"),))


def _ms_dropout(m: Any, args: tuple, kwargs: dict) -> Lowered | str:
    if not m.training:
        return Lowered(None, (_first(args, kwargs, "x"),))
    return "a training-mode nn.Dropout: not replayed"


LOWERINGS: dict[str, Callable[[Any, tuple, dict], Lowered | str]] = {
    "torch.nn.Linear": _linear,
    "torch.nn.LayerNorm": _layer_norm,
    "torch.nn.Embedding": _embedding,
    "torch.nn.Conv1d": _conv(1),
    "torch.nn.Conv2d": _conv(2),
    "torch.nn.BatchNorm1d": _batch_norm,
    "torch.nn.BatchNorm2d": _batch_norm,
    "torch.nn.Dropout": _dropout,
    "torch.nn.Identity": _identity,
    "torch.nn.ReLU": _unary(F + "relu"),
    "torch.nn.GELU": _gelu,
    "torch.nn.SiLU": _unary(F + "silu"),
    "torch.nn.Tanh": _unary("torch.tanh"),
    "torch.nn.Sigmoid": _unary("torch.sigmoid"),
    "torch.nn.Softmax": _softmax("softmax"),
    "torch.nn.LogSoftmax": _softmax("log_softmax"),
    "torch.nn.MaxPool1d": _max_pool(1),
    "torch.nn.MaxPool2d": _max_pool(2),
    "torch.nn.AvgPool1d": _avg_pool(1),
    "torch.nn.AvgPool2d": _avg_pool(2),
    "torch.nn.AdaptiveAvgPool1d": _adaptive_avg_pool(1),
    "torch.nn.AdaptiveAvgPool2d": _adaptive_avg_pool(2),
    "torch.nn.Flatten": _flatten,
    "torch.nn.CrossEntropyLoss": _cross_entropy,
    "torch.nn.MSELoss": _mse,
    "mindspore.nn.Dense": _ms_dense,
    "mindspore.nn.Identity": _ms_identity,
    "mindspore.nn.Dropout": _ms_dropout,
}


def lower(api: str, layer: Any, args: tuple, kwargs: dict) -> Lowered | str:
    rule = LOWERINGS.get(api)
    if rule is None:
        return f"no function form for the layer {api} here"
    try:
        return rule(layer, args, kwargs)
    except (AttributeError, ValueError, TypeError) as exc:
        return f"{api} could not be lowered: {type(exc).__name__}: {exc}"

"""A framework layer's call as the function call it performs, from the layer's own
attributes: `nn.Linear(x)` is `F.linear(x, weight, bias)`, `nn.LayerNorm(x)` is
`F.layer_norm(x, normalized_shape, weight, bias, eps)`. A replay then needs no constructor,
and the layer's weights become the program's external tensors (shared with every other use
of the same parameter).

lower(api, layer, args, kwargs) -> Lowered | str: the function and its arguments (Python
values: tensors stay tensors), or the reason the layer has no function form here. An
eval-mode Dropout (and Identity) computes nothing: it lowers to an alias of its input (a
tuple or list of tensors too); so does a pass-through call such as ops.Depend
(lower_pass_through).
"""
from __future__ import annotations

from typing import Any, Callable

from opbench.model.bound_args import bind
from opbench.model.capture.lowering_record import Lowered
from opbench.model.capture.sequence_lowering import lower_embedding_bag, lower_lstm
from opbench.trace.events import CallSite

__all__ = ["Lowered", "lower", "LOWERINGS", "PASS_THROUGH", "lower_pass_through", "traced_through"]

F = "torch.nn.functional."


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
    target = bind(("input", "target"), args, kwargs).target
    return Lowered(F + "cross_entropy", (_first(args, kwargs), target), tuple(extra))


def _mse(m: Any, args: tuple, kwargs: dict) -> Lowered:
    target = bind(("input", "target"), args, kwargs).target
    extra = (("reduction", m.reduction),) if m.reduction != "mean" else ()
    return Lowered(F + "mse_loss", (_first(args, kwargs), target), extra)


def _flatten(m: Any, args: tuple, kwargs: dict) -> Lowered:
    return Lowered("torch.flatten", (_first(args, kwargs), m.start_dim, m.end_dim))


# -- mindspore.nn and mindspore.mint.nn ---------------------------------------------------

MS = "mindspore.ops."
MINT_F = "mindspore.mint.nn.functional."


def primitive_init(primitive: Any) -> tuple[tuple[str, Any], ...]:
    """A MindSpore primitive's constructor arguments (its `init_attrs`), as plain values."""
    attrs = getattr(primitive, "init_attrs", None)
    if not isinstance(attrs, dict):
        raise ValueError(f"{type(primitive).__name__} keeps no constructor arguments")
    return tuple(sorted(attrs.items()))


def _sole_input(args: tuple, kwargs: dict) -> Any:
    """A one-input MindSpore layer's input, positional or under whatever name its construct
    gives it (x, input, input_x)."""
    return args[0] if args else next(iter(kwargs.values()))


def _ms_dense(m: Any, args: tuple, kwargs: dict) -> Lowered | str:
    if getattr(m, "activation_flag", False) or getattr(m, "activation", None) is not None:
        return "nn.Dense with an activation: not replayed (call the activation separately)"
    bias = m.bias if getattr(m, "has_bias", True) else None
    return Lowered(MS + "dense", (_first(args, kwargs, "x"), m.weight, bias))


def _ms_linear(m: Any, args: tuple, kwargs: dict) -> Lowered:
    return Lowered(MINT_F + "linear", (_first(args, kwargs), m.weight, m.bias))


def _ms_identity(m: Any, args: tuple, kwargs: dict) -> Lowered:
    return Lowered(None, (_first(args, kwargs, "x"),))


def _ms_dropout(m: Any, args: tuple, kwargs: dict) -> Lowered | str:
    if not m.training or getattr(m, "p", None) == 0:
        return Lowered(None, (_sole_input(args, kwargs),))
    return "a training-mode Dropout: not replayed"


def _ms_unary(api: str) -> Callable[[Any, tuple, dict], Lowered]:
    def lowered(m: Any, args: tuple, kwargs: dict) -> Lowered:
        return Lowered(api, (_sole_input(args, kwargs),))
    return lowered


def _ms_gelu(m: Any, args: tuple, kwargs: dict) -> Lowered:
    """ops.gelu: MindSpore 2.10's CPU has no kernel for mint's gelu. nn.GELU's `approximate`
    is a bool (True: tanh), mint.nn.GELU's a string."""
    approximate = m.approximate
    if isinstance(approximate, bool):
        approximate = "tanh" if approximate else "none"
    return Lowered(MS + "gelu", (_sole_input(args, kwargs),), (("approximate", approximate),))


def _ms_conv2d(m: Any, args: tuple, kwargs: dict) -> Lowered | str:
    if getattr(m, "data_format", "NCHW") != "NCHW":
        return f"nn.Conv2d with data_format={m.data_format!r}: not replayed"
    padding = m.padding if m.pad_mode == "pad" else 0
    if isinstance(padding, (tuple, list)) and len(padding) == 4:
        # the layer's (top, bottom, left, right); ops.conv2d takes (height, width) only
        # ("'padding' must be a tuple or list of 2 integers": the traced framework's own
        # replay failed on it)
        top, bottom, left, right = padding
        if top != bottom or left != right:
            return "nn.Conv2d with uneven four-sided padding: not replayed"
        padding = (top, left)
    return Lowered(MS + "conv2d", (_first(args, kwargs, "x"), m.weight,
                                   m.bias if m.has_bias else None, _one_or_pair(m.stride),
                                   m.pad_mode, _one_or_pair(padding),
                                   _one_or_pair(m.dilation), m.group))


def _one_or_pair(value: Any) -> Any:
    """ops.conv2d takes an int or a tuple, not a list (what a JSON program holds): equal
    pairs as one int."""
    if isinstance(value, (tuple, list)):
        if len(set(value)) == 1:
            return value[0]
        return tuple(value)
    return value


def _ms_batch_norm(m: Any, args: tuple, kwargs: dict) -> Lowered:
    """ops.batch_norm with the layer's moving statistics (Parameters). nn.BatchNorm2d (and
    1d) keeps `momentum` already as the new value's share (its constructor's 0.9 reads 0.1),
    which is what ops.batch_norm takes."""
    training = m.training if m.use_batch_statistics is None else bool(m.use_batch_statistics)
    return Lowered(MS + "batch_norm", (_first(args, kwargs, "x"), m.moving_mean,
                                       m.moving_variance, m.gamma, m.beta, training,
                                       float(m.momentum), float(m.eps)))


def _ms_max_pool2d(m: Any, args: tuple, kwargs: dict) -> Lowered | str:
    """The MaxPool primitive nn.MaxPool2d holds (ops.max_pool2d is another kernel, 30x
    slower forward+backward here: docs/model.md)."""
    if getattr(m, "return_indices", False) or getattr(m, "use_pad", False):
        return "nn.MaxPool2d with padding or indices: not replayed"
    return Lowered(MS + "MaxPool", (_first(args, kwargs, "x"),), init=primitive_init(m.max_pool))


def _ms_layer_norm(m: Any, args: tuple, kwargs: dict) -> Lowered:
    """The LayerNorm primitive nn.LayerNorm holds; the layer returns its first output."""
    return Lowered(MS + "LayerNorm", (_first(args, kwargs, "input_x"), m.gamma, m.beta),
                   init=primitive_init(m.layer_norm), pick=0)


def _ms_embedding(m: Any, args: tuple, kwargs: dict) -> Lowered | str:
    if m.use_one_hot:
        return "nn.Embedding with use_one_hot: not replayed"
    return Lowered(MS + "gather", (m.embedding_table, _first(args, kwargs, "ids"), 0))


def _ms_cross_entropy(m: Any, args: tuple, kwargs: dict) -> Lowered:
    logits, labels = bind(("logits", "labels"), args, kwargs)
    return Lowered(MS + "cross_entropy", (logits, labels, m.weight, m.ignore_index,
                                          m.reduction, float(m.label_smoothing)))


def _ms_mse(m: Any, args: tuple, kwargs: dict) -> Lowered:
    """nn.MSELoss keeps its reduction as LossBase's two flags (reduce, average), not by name;
    ops.mse_loss takes it by keyword (torch's mse_loss has size_average third)."""
    logits, labels = bind(("logits", "labels"), args, kwargs)
    reduction = "none" if not m.reduce else ("mean" if m.average else "sum")
    extra = (("reduction", reduction),) if reduction != "mean" else ()
    return Lowered(MS + "mse_loss", (logits, labels), extra)


def _ms_flatten(m: Any, args: tuple, kwargs: dict) -> Lowered:
    return Lowered(MS + "flatten", (_first(args, kwargs, "x"),),
                   (("start_dim", m.start_dim), ("end_dim", m.end_dim)))


def _scalar(value: Any) -> float:
    """A hyperparameter MindSpore keeps as a Parameter or Tensor (learning rate, momentum,
    betas) or as a number."""
    if not hasattr(value, "asnumpy"):
        return float(value)
    host = value.asnumpy()
    # nn.AdamWeightDecay keeps its betas and eps as 1-element Tensors of shape (1,)
    return float(host.reshape(-1)[0]) if hasattr(host, "reshape") else float(host)


def _ms_optimizer_common(m: Any, args: tuple, kwargs: dict) -> tuple[list, Any] | str:
    """The weights and the gradients an optimizer Cell's call updates them with, or why the
    replay does not hold it: a schedule, groups, weight decay (MindSpore's skips the
    LayerNorm and BatchNorm weights by their names, torch's does not) or loss scaling."""
    if getattr(m, "dynamic_lr", False) or getattr(m, "is_group_lr", False) \
            or getattr(m, "is_group", False):
        return "an optimizer with a learning-rate schedule or parameter groups: not replayed"
    if getattr(m, "dynamic_weight_decay", False) or any(
            float(w) != 0.0 for w in _as_list(getattr(m, "weight_decay", 0.0))):
        return "an optimizer with weight decay: not replayed"
    if float(getattr(m, "loss_scale", 1.0)) != 1.0:
        return "an optimizer with loss scaling: not replayed"
    gradients = bind(("gradients",), args, kwargs).gradients
    return list(m.parameters), gradients


def _as_list(value: Any) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _ms_sgd(m: Any, args: tuple, kwargs: dict) -> Lowered | str:
    """nn.SGD(grads): the weights, the gradients and the hyperparameters; the replay builds
    nn.SGD over its own weights (MindSpore: the same jit-compiled update the script ran) or
    torch.optim.SGD (what a torch port steps)."""
    found = _ms_optimizer_common(m, args, kwargs)
    if isinstance(found, str):
        return found
    weights, gradients = found
    return Lowered("mindspore.nn.SGD", (weights, gradients),
                   init=(("learning_rate", _scalar(m.learning_rate)),
                         ("momentum", _scalar(m.momentum)),
                         ("dampening", float(m.dampening)), ("nesterov", bool(m.nesterov))))


def _ms_momentum(m: Any, args: tuple, kwargs: dict) -> Lowered | str:
    """nn.Momentum(grads) (mindcv's create_optimizer("momentum")): the weights, the gradients,
    and each weight's decay (its group's weight_decay where its decay flag is set: MindSpore
    adds decay * weight to the gradient first, as torch's SGD weight_decay does). Groups of
    decay replay as groups; a schedule, per-group learning rates, gradient centralization
    or loss scaling do not."""
    if getattr(m, "dynamic_lr", False) or getattr(m, "is_group_lr", False) \
            or getattr(m, "dynamic_weight_decay", False):
        return "nn.Momentum with a learning-rate or weight-decay schedule: not replayed"
    if float(getattr(m, "loss_scale", 1.0)) != 1.0:
        return "nn.Momentum with loss scaling: not replayed"
    if getattr(m, "grad_centralization", False) is True \
            or any(getattr(m, "grad_centralization_flags", None) or ()):
        return "nn.Momentum with gradient centralization: not replayed"
    weights = list(m.parameters)
    decays = [float(_scalar(w)) for w in _as_list(getattr(m, "weight_decay", 0.0))]
    flags = list(getattr(m, "decay_flags", None) or [True] * len(weights))
    if len(decays) == 1:
        decays = decays * len(weights)
    if len(decays) != len(weights) or len(flags) != len(weights):
        return "nn.Momentum whose weight decays do not match its weights: not replayed"
    gradients = args[0] if args else kwargs["gradients"]
    return Lowered("mindspore.nn.Momentum", (weights, gradients),
                   init=(("learning_rate", _scalar(m.learning_rate)),
                         ("momentum", _scalar(m.momentum)),
                         ("nesterov", bool(getattr(m, "use_nesterov", False))),
                         ("weight_decays", tuple(d if f else 0.0
                                                 for d, f in zip(decays, flags)))))


def _ms_adam(m: Any, args: tuple, kwargs: dict) -> Lowered | str:
    found = _ms_optimizer_common(m, args, kwargs)
    if isinstance(found, str):
        return found
    if getattr(m, "use_amsgrad", False) or getattr(m, "use_lazy", False) \
            or getattr(m, "use_offload", False) or getattr(m, "use_nesterov", False):
        return "nn.Adam with amsgrad, Nesterov, lazy or offloaded updates: not replayed"
    weights, gradients = found
    return Lowered("mindspore.nn.Adam", (weights, gradients),
                   init=(("learning_rate", _scalar(m.learning_rate)),
                         ("beta1", _scalar(m.beta1)), ("beta2", _scalar(m.beta2)),
                         ("eps", _scalar(m.eps))))


def _ms_adam_weight_decay(m: Any, args: tuple, kwargs: dict) -> Lowered | str:
    """nn.AdamWeightDecay(grads) (nn.TrainOneStepCell's optimizer in the model zoo; its
    construct is @jit, so traced through it was no call at all): the weights, the gradients,
    the hyperparameters and each weight's decay (its group's weight_decay where its decay flag
    is set: without groups MindSpore skips the weights named beta or gamma, LayerNorm's). A
    schedule, per-group learning rates or loss scaling are not replayed."""
    if getattr(m, "dynamic_lr", False) or getattr(m, "is_group_lr", False) \
            or getattr(m, "dynamic_weight_decay", False):
        return "nn.AdamWeightDecay with a learning-rate or weight-decay schedule: not replayed"
    if float(getattr(m, "loss_scale", 1.0)) != 1.0:
        return "nn.AdamWeightDecay with loss scaling: not replayed"
    weights = list(m.parameters)
    decays = [_scalar(w) for w in _as_list(getattr(m, "weight_decay", 0.0))]
    flags = list(getattr(m, "decay_flags", None) or [True] * len(weights))
    if len(decays) == 1:
        decays = decays * len(weights)
    if len(decays) != len(weights) or len(flags) != len(weights):
        return "nn.AdamWeightDecay whose weight decays do not match its weights: not replayed"
    gradients = bind(("gradients",), args, kwargs).gradients
    return Lowered("mindspore.nn.AdamWeightDecay", (weights, gradients),
                   init=(("learning_rate", _scalar(m.learning_rate)),
                         ("beta1", _scalar(m.beta1)), ("beta2", _scalar(m.beta2)),
                         ("eps", _scalar(m.eps)),
                         ("weight_decays", tuple(d if f else 0.0
                                                 for d, f in zip(decays, flags)))))


LOWERINGS: dict[str, Callable[[Any, tuple, dict], Lowered | str]] = {
    "torch.nn.Linear": _linear,
    "torch.nn.LayerNorm": _layer_norm,
    "torch.nn.Embedding": _embedding,
    "torch.nn.EmbeddingBag": lower_embedding_bag,
    "torch.nn.LSTM": lower_lstm,
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
    "mindspore.mint.nn.Linear": _ms_linear,
    "mindspore.nn.Identity": _ms_identity,
    "mindspore.mint.nn.Identity": _ms_identity,
    "mindspore.nn.Dropout": _ms_dropout,
    "mindspore.mint.nn.Dropout": _ms_dropout,
    "mindspore.nn.ReLU": _ms_unary(MS + "relu"),
    "mindspore.mint.nn.ReLU": _ms_unary(MINT_F + "relu"),
    "mindspore.nn.SiLU": _ms_unary(MS + "silu"),
    "mindspore.nn.Tanh": _ms_unary(MS + "tanh"),
    "mindspore.nn.Sigmoid": _ms_unary(MS + "sigmoid"),
    "mindspore.nn.GELU": _ms_gelu,
    # nn.HSwish and nn.HSigmoid are these classes in MindSpore 2.10 (mindcv's mobilenet_v3)
    "mindspore.mint.nn.Hardswish": _ms_unary(MINT_F + "hardswish"),
    "mindspore.mint.nn.Hardsigmoid": _ms_unary(MINT_F + "hardsigmoid"),
    "mindspore.nn.HSwish": _ms_unary(MINT_F + "hardswish"),
    "mindspore.nn.HSigmoid": _ms_unary(MINT_F + "hardsigmoid"),
    "mindspore.mint.nn.GELU": _ms_gelu,
    "mindspore.nn.Conv2d": _ms_conv2d,
    "mindspore.nn.BatchNorm2d": _ms_batch_norm,
    # the same _BatchNorm Cell over (N, C): ops.batch_norm gives its values and moving
    # statistics exactly (checked here on a 16x8 batch, max difference 0.0); before, the
    # layer ran as its BatchNorm primitive, which has no torch rule (1.9% of
    # ms_generator_dataset_momentum.py not covered)
    "mindspore.nn.BatchNorm1d": _ms_batch_norm,
    "mindspore.nn.MaxPool2d": _ms_max_pool2d,
    "mindspore.nn.LayerNorm": _ms_layer_norm,
    "mindspore.nn.Embedding": _ms_embedding,
    "mindspore.nn.CrossEntropyLoss": _ms_cross_entropy,
    "mindspore.nn.MSELoss": _ms_mse,
    "mindspore.nn.Flatten": _ms_flatten,
    "mindspore.nn.SGD": _ms_sgd,
    "mindspore.nn.Adam": _ms_adam,
    "mindspore.nn.AdamWeightDecay": _ms_adam_weight_decay,
    "mindspore.nn.Momentum": _ms_momentum,
}


# Calls that compute nothing and return one of their inputs, by the parameter returned: an
# alias of it in both frameworks' replays, as an eval-mode Dropout is. ops.Depend(value, expr)
# returns `value`: an ordering hint for graph mode (nn.TrainOneStepCell's
# `ops.depend(loss, self.optimizer(grads))`), which PyNative runs as a kernel of its own; it
# was "no entry in the API mapping", 3-8% of ms_train_one_step_cell.py's region.
PASS_THROUGH = {"mindspore.ops.Depend": "value", "mindspore.ops.depend": "value"}


def lower_pass_through(api: str, args: tuple, kwargs: dict) -> Lowered | None:
    """A pass-through call (PASS_THROUGH) as an alias of the input it returns; None for any
    other call, or one without that input."""
    name = PASS_THROUGH.get(api)
    if name is None or not (args or name in kwargs):
        return None
    return Lowered(None, (_first(args, kwargs, name),))


def traced_through(site: CallSite, layer: Any, args: tuple, kwargs: dict) -> bool:
    """The capture's rule for a framework layer (trace/recorder.py LayerRule): one with no
    function form here is traced THROUGH, its forward's own calls recorded in its place (a
    container such as nn.TransformerEncoder yields its Linear, LayerNorm, Dropout and
    activation calls, which lower; nn.GroupNorm its F.group_norm). Before, it was one call
    no replay ran: 2.7-80% of the traced time of this session's corpus scripts. A layer with a
    rule stays one call, also when the rule refuses it: its reason is then the row's."""
    return site.api not in LOWERINGS


def lower(api: str, layer: Any, args: tuple, kwargs: dict) -> Lowered | str:
    rule = LOWERINGS.get(api)
    if rule is None:
        return f"no function form for the layer {api} here"
    try:
        return rule(layer, args, kwargs)
    except (AttributeError, ValueError, TypeError) as exc:
        return f"{api} could not be lowered: {type(exc).__name__}: {exc}"

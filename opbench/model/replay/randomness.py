"""Which captured calls draw random numbers: a training-mode dropout (F.dropout,
attention's dropout_p, an LSTM's or GRU's dropout between layers) and a sampler (randn_like,
rand, randint, ... whatever its arguments). Both frameworks replay them with the same p, and their outputs, and
everything computed from them, cannot agree: the output check compares neither
(impact/pipeline.py). Before, each was a MISMATCH, and so was what read it: 56 in
hf_distilbert_training.py once its attention's dropout replayed (10 before), 3 in
mlp_adamw_dropout.py, none of them a port's error."""
from __future__ import annotations

from opbench.model.program import Call
from opbench.model.replay.call_arguments import bound, literal

__all__ = ["draws_random_numbers"]

# Samplers: random whenever called. Each framework's generator draws other numbers from the
# same seed, so a VAE's reparameterization (torch.randn_like) and everything computed from it
# read 7 MISMATCHes in vae_mlp_bce_adam.py (values up to 2x apart), none of them a port's
# error.
_TORCH_SAMPLERS = ("rand", "rand_like", "randn", "randn_like", "randint", "randint_like",
                   "randperm", "bernoulli", "multinomial", "normal", "poisson")
_TORCH_IN_PLACE_SAMPLERS = ("normal_", "uniform_", "bernoulli_", "exponential_",
                            "random_", "cauchy_", "log_normal_", "geometric_")
_MINDSPORE_SAMPLERS = ("rand", "rand_like", "randn", "randn_like", "randint", "randint_like",
                       "randperm", "bernoulli", "multinomial", "normal", "uniform",
                       "standard_normal", "gamma", "poisson")
SAMPLERS = frozenset(
    [f"torch.{n}" for n in _TORCH_SAMPLERS]
    + [f"torch.Tensor.{n}" for n in ("bernoulli", "multinomial", *_TORCH_IN_PLACE_SAMPLERS)]
    + [f"torch.nn.init.{n}" for n in ("normal_", "uniform_", "kaiming_normal_",
                                       "kaiming_uniform_", "xavier_normal_",
                                       "xavier_uniform_", "trunc_normal_")]
    + [f"mindspore.{ns}.{n}" for ns in ("ops", "mint") for n in _MINDSPORE_SAMPLERS])

# the function and its parameters, as torch and MindSpore name them; `training` None: the
# function is random whenever p > 0
DROPOUTS: dict[str, tuple[list[str], str, str | None]] = {
    "torch.nn.functional.dropout": (["input", "p", "training", "inplace"], "p", "training"),
    "torch.dropout": (["input", "p", "train"], "p", "train"),
    "torch.nn.functional.scaled_dot_product_attention": (
        ["query", "key", "value", "attn_mask", "dropout_p"], "dropout_p", None),
    "mindspore.ops.dropout": (["input", "p", "training", "seed"], "p", "training"),
    "mindspore.mint.nn.functional.dropout": (["input", "p", "training", "inplace"], "p",
                                             "training"),
    # nn.LSTM as lowered (capture/sequence_lowering.py): dropout between its layers
    "torch.lstm": (["input", "hx", "params", "has_biases", "num_layers", "dropout", "train"],
                   "dropout", "train"),
    # nn.GRU and nn.MultiheadAttention as traced through (capture/lowering.py traced_through):
    # the GRU's dropout between layers, the attention weights' dropout_p (without this, a
    # training encoder's attention read 4 MISMATCHes, values up to 0.8 apart)
    "torch.gru": (["input", "hx", "params", "has_biases", "num_layers", "dropout", "train"],
                  "dropout", "train"),
    "torch.nn.functional.multi_head_attention_forward": (
        ["query", "key", "value", "embed_dim_to_check", "num_heads", "in_proj_weight",
         "in_proj_bias", "bias_k", "bias_v", "add_zero_attn", "dropout_p", "out_proj_weight",
         "out_proj_bias", "training"], "dropout_p", "training"),
}
# each function's default p and training, where the call does not say
DEFAULTS = {"torch.nn.functional.scaled_dot_product_attention": (0.0, True),
            "torch.nn.functional.multi_head_attention_forward": (0.0, True)}


def draws_random_numbers(call: Call) -> bool:
    api = call.replay_api or call.api
    if api in SAMPLERS:
        return True
    found = DROPOUTS.get(api)
    if found is None:
        return False
    names, p_name, training_name = found
    default_p, default_training = DEFAULTS.get(api, (0.5, True))
    v = bound(call, names)
    p = literal(getattr(v, p_name), default_p) if getattr(v, p_name) is not None else default_p
    training = default_training if training_name is None or getattr(v, training_name) is None \
        else literal(getattr(v, training_name), True)
    return bool(training) and bool(p)

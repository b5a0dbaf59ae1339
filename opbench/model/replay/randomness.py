"""Which captured calls draw random numbers: a training-mode dropout (F.dropout,
attention's dropout_p, an LSTM's or GRU's dropout between layers). Both frameworks replay them with the same p, and their outputs, and
everything computed from them, cannot agree: the output check compares neither
(impact/pipeline.py). Before, each was a MISMATCH, and so was what read it: 56 in
hf_distilbert_training.py once its attention's dropout replayed (10 before), 3 in
mlp_adamw_dropout.py, none of them a port's error."""
from __future__ import annotations

from opbench.model.program import Call
from opbench.model.replay.call_arguments import bound, literal

__all__ = ["draws_random_numbers"]

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

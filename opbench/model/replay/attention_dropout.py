"""Attention's dropout in MindSpore: torch's F.scaled_dot_product_attention(dropout_p=p)
drops attention weights (softmax's output) with probability p before they multiply the
values; the composed MindSpore attention (routes.py) does the same with ops.dropout
(MindSpore 2.10's CPU build has no DropoutExt kernel for mint's dropout; ops.dropout runs).

As with a training-mode nn.Dropout / F.dropout, both frameworks run the same work with the
same p, and their outputs are random: the output check compares neither it nor what reads
it (randomness.py), and the route's name says so.
Before this, attention with dropout was not replayed: 8.7-10% of the traced time of
transformers' DistilBERT and T5 training steps (docs/model.md, the corpus table)."""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["attention_dropout", "attention_route_name", "COMPOSED_ATTENTION"]

COMPOSED_ATTENTION = "softmax(q @ k^T * scale + mask) @ v (mindspore.mint)"


def attention_route_name(dropout_p: float) -> str:
    if not dropout_p:
        return COMPOSED_ATTENTION
    return (f"softmax(q @ k^T * scale + mask), ops.dropout(p={dropout_p:g}), @ v "
            f"(mindspore.mint; dropout is random: outputs not compared)")


def attention_dropout(resolve: Callable[[str], Any], dropout_p: float
                      ) -> Callable[[Any], Any]:
    """What the attention weights go through before `@ v`: nothing without dropout, else
    MindSpore's ops.dropout in training mode with torch's p."""
    if not dropout_p:
        return _unchanged
    dropout = resolve("mindspore.ops.dropout")

    def dropped(weights: Any) -> Any:
        return dropout(weights, p=dropout_p, training=True)
    return dropped


def _unchanged(weights: Any) -> Any:
    return weights

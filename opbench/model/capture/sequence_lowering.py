"""torch's nn.LSTM and nn.EmbeddingBag as the function calls they perform (lowering.py's
rules for the layers over sequences; registered in its LOWERINGS):

- nn.LSTM(x[, (h0, c0)]) is `torch.lstm(x, hx, flat_weights, bias, num_layers, dropout,
  training, bidirectional, batch_first)`, the function the layer calls (through torch._VF),
  with hx None when the script passes none (the layer then starts from zeros; the replay
  does the same). The replay returns the layer's (output, (h_n, c_n)) (layer_routes.py).
- nn.EmbeddingBag(input[, offsets, per_sample_weights]) is `F.embedding_bag`.

Before these, both were "no function form for the layer": 75% of lstm_tagger_inference.py's
traced time and 19% of embedding_bag_text_classifier.py's (docs/model.md)."""
from __future__ import annotations

from typing import Any

from opbench.model.capture.lowering_record import Lowered

__all__ = ["lower_lstm", "lower_embedding_bag"]


def _argument(args: tuple, kwargs: dict, position: int, name: str) -> Any:
    return args[position] if len(args) > position else kwargs.get(name)


def lower_lstm(m: Any, args: tuple, kwargs: dict) -> Lowered | str:
    x = _argument(args, kwargs, 0, "input")
    if x is None or not hasattr(x, "shape"):
        return "nn.LSTM on a PackedSequence: not replayed"
    if len(x.shape) != 3:
        return "nn.LSTM on an unbatched (2-D) input: not replayed"
    if getattr(m, "proj_size", 0):
        return "nn.LSTM with proj_size: not replayed"
    hx = _argument(args, kwargs, 1, "hx")
    return Lowered("torch.lstm", (x, list(hx) if hx is not None else None,
                                  list(m._flat_weights), bool(m.bias), int(m.num_layers),
                                  float(m.dropout), bool(m.training), bool(m.bidirectional),
                                  bool(m.batch_first)))


def lower_embedding_bag(m: Any, args: tuple, kwargs: dict) -> Lowered | str:
    if m.max_norm is not None:
        return "EmbeddingBag with max_norm renormalises its weight in place: not replayed"
    if m.sparse:
        return "EmbeddingBag with sparse gradients: not replayed"
    if m.scale_grad_by_freq:
        return "EmbeddingBag with scale_grad_by_freq: not replayed"
    x = _argument(args, kwargs, 0, "input")
    offsets = _argument(args, kwargs, 1, "offsets")
    per_sample = _argument(args, kwargs, 2, "per_sample_weights")
    extra: list[tuple[str, Any]] = [("mode", m.mode)]
    if per_sample is not None:
        extra.append(("per_sample_weights", per_sample))
    if m.include_last_offset:
        extra.append(("include_last_offset", True))
    if m.padding_idx is not None:
        extra.append(("padding_idx", m.padding_idx))
    return Lowered("torch.nn.functional.embedding_bag", (x, m.weight, offsets), tuple(extra))

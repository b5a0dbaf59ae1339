"""Framework-neutral handling of operator outputs: nested conversion to numpy and pairing
outputs with their upstream-gradient weights for the backward loss."""
from __future__ import annotations

import numbers
from typing import Any, Callable, Sequence

import numpy as np


def nested_to_numpy(value: Any, is_tensor: Callable[[Any], bool],
                    tensor_to_numpy: Callable[[Any], np.ndarray]) -> Any:
    """Tensor -> ndarray; tuple/list/namedtuple (torch.return_types) -> tuple of converted
    items; python and numpy scalars -> 0-d ndarray; ndarray -> itself; None -> None."""
    if is_tensor(value):
        return tensor_to_numpy(value)
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (tuple, list)):
        return tuple(nested_to_numpy(item, is_tensor, tensor_to_numpy) for item in value)
    if isinstance(value, (numbers.Number, np.generic)):  # bool is a Number too
        return np.asarray(value)
    if value is None:
        return None
    raise TypeError(f"cannot convert an output of type {type(value).__module__}."
                    f"{type(value).__qualname__} to numpy")


def weighted_pairs(output: Any, grad_weight: Any) -> list[tuple[Any, Any]]:
    """The (output tensor, weight) pairs that make up the loss sum(output * weight).

    grad_weight None: every output with weight None (plain sum). A single weight: the output
    must be a single tensor. A sequence of weights: one per output, None skipping it."""
    outputs = list(output) if isinstance(output, (tuple, list)) else [output]
    if grad_weight is None:
        return [(item, None) for item in outputs]
    weights: Sequence[Any] = (list(grad_weight) if isinstance(grad_weight, (tuple, list))
                              else [grad_weight])
    if len(weights) != len(outputs):
        raise ValueError(f"grad_weight has {len(weights)} weight(s) but the operator returned "
                         f"{len(outputs)} output(s); pass one weight per output (None to skip)")
    pairs = [(item, weight) for item, weight in zip(outputs, weights) if weight is not None]
    if not pairs:
        raise ValueError("grad_weight skips every output: nothing to differentiate")
    return pairs


def weighted_loss(pairs: list[tuple[Any, Any]]) -> Any:
    """sum over pairs of sum(output * weight), with framework tensor arithmetic."""
    total = None
    for item, weight in pairs:
        term = (item if weight is None else item * weight).sum()
        total = term if total is None else total + term
    return total


def check_grad_positions(args: tuple, grad_positions: tuple[int, ...],
                         is_tensor: Callable[[Any], bool]) -> None:
    if not grad_positions:
        raise ValueError("forward_backward needs at least one grad position")
    for position in grad_positions:
        if not 0 <= position < len(args):
            raise ValueError(f"grad position {position} is out of range for {len(args)} "
                             f"positional argument(s)")
        if not is_tensor(args[position]):
            raise ValueError(f"grad position {position} is not a tensor "
                             f"(got {type(args[position]).__name__})")
    if len(set(grad_positions)) != len(grad_positions):
        raise ValueError(f"grad positions repeat: {grad_positions}")


def with_replaced(args: tuple, positions: tuple[int, ...], values: tuple) -> tuple:
    """args with args[positions[k]] replaced by values[k]."""
    replaced = list(args)
    for position, value in zip(positions, values):
        replaced[position] = value
    return tuple(replaced)

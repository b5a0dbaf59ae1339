"""opbench dtype names and how each framework spells them.

Inputs are generated as numpy arrays in a *carrier* dtype; bfloat16 has no numpy dtype
(numpy 1.x), so it travels as float32 already rounded to bfloat16 and is converted on the
framework side.
"""
from __future__ import annotations

import difflib

import numpy as np

from opbench.cases.case_files import DTYPES
from opbench.config.vocabulary import COMPLEX_DTYPES, MODEL_ONLY_INT_DTYPES

BFLOAT16 = "bfloat16"

NUMPY_CARRIERS: dict[str, np.dtype] = {
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(np.float32),
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "bool": np.dtype(np.bool_),
    # a model's replay only (config/vocabulary.py MODEL_DTYPES): numpy carries them as they are
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "uint8": np.dtype(np.uint8),
    "complex64": np.dtype(np.complex64),
    "complex128": np.dtype(np.complex128),
}

# Attribute names on the framework's top module.
TORCH_DTYPE_ATTRS = {name: name for name in (*DTYPES, *MODEL_ONLY_INT_DTYPES, *COMPLEX_DTYPES)}
MINDSPORE_DTYPE_ATTRS = {**{name: name for name in (*DTYPES, *MODEL_ONLY_INT_DTYPES, *COMPLEX_DTYPES)}, "bool": "bool_"}


def check_dtype(dtype: str) -> str:
    """Return `dtype` if it is an opbench dtype name, else raise ValueError with a suggestion."""
    if dtype in NUMPY_CARRIERS:
        return dtype
    close = difflib.get_close_matches(dtype, list(NUMPY_CARRIERS), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ValueError(f"unknown dtype {dtype!r}{hint}; expected one of "
                     f"{', '.join(NUMPY_CARRIERS)}")


def carrier_copy(array: np.ndarray, dtype: str) -> np.ndarray:
    """A C-contiguous copy of `array` in the numpy carrier of `dtype`.
    A copy, so a tensor made from it never shares memory with the arrays both frameworks
    receive: an in-place operator on one side must not change the other side's input."""
    return np.array(array, dtype=NUMPY_CARRIERS[check_dtype(dtype)], copy=True, order="C")

"""Seeded input arrays and comparison tolerances for case instances.

Both frameworks must see bit-identical inputs, on every run and every machine, so the seed
comes from a cryptographic hash of the instance id (never Python's salted `hash()`), and
every input of an instance is drawn, in declaration order, from one numpy PCG64 stream:
adding a sweep value does not change the inputs of the other instances, while reordering
the inputs of a case does (documented in docs/case-format.md).
"""
from __future__ import annotations

import hashlib
import math
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from opbench.cases.case_files import (DISTRIBUTIONS, DTYPES, FLOAT_DTYPES, DistOptions,
                                      InputSpec)

if TYPE_CHECKING:
    from opbench.cases.case_files import CaseInstance

__all__ = [
    "instance_seed", "generate_inputs", "generate_array", "grad_weight", "round_to_bfloat16",
    "numpy_dtype", "DEFAULT_TOLERANCES", "EXACT", "tolerance_for", "inputs_checksum",
]

# The seed is the first 8 bytes of sha256(id), cut to 63 bits so it fits a signed 64-bit
# integer wherever it is recorded (JSON readers, SQLite INTEGER).
SEED_BYTES = 8
SEED_MASK = (1 << 63) - 1
GRAD_STREAM_SUFFIX = ":grad"

# numpy has no bfloat16: such inputs are float32 arrays holding bfloat16 values.
_NUMPY_DTYPES: Mapping[str, Any] = {
    "float16": np.float16, "bfloat16": np.float32, "float32": np.float32,
    "float64": np.float64, "int32": np.int32, "int64": np.int64, "bool": np.bool_,
}

# Per-element agreement test: |a - b| <= atol + rtol * |b|. These compare two *different*
# libraries (MKL/oneDNN/Eigen/own kernels), which round, vectorise and accumulate
# differently, so they are looser than a framework's self-consistency checks; a genuinely
# wrong kernel is off by far more. Values for N(0, 1) inputs:
#  - float16: unit roundoff 2**-11 ~ 4.9e-4, spacing 2**-10 ~ 9.8e-4 at the bottom of a
#    binade. Each side rounds its result once (maybe after computing in float32, maybe not),
#    so two ulps (rtol 2e-3) of disagreement is normal; atol 1e-3 covers results near 0
#    whose error stems from larger intermediate terms.
#  - bfloat16: spacing 2**-7 ~ 7.8e-3; the same two-ulp rule gives rtol 1.6e-2.
#  - float32: elementwise math libraries differ by a few ulps (~1e-7 relative), but
#    reductions of a few hundred terms in a different order already differ by ~1e-5
#    relative (measured: torch vs numpy matmul, K=256, fails 0.6% of elements at
#    rtol=1e-5/atol=1e-6); rtol 1e-4 with atol 1e-5 passes K <= ~256 cleanly while still
#    resolving softmax-sized outputs (~1e-3). Longer reductions (matmul/conv with K in the
#    thousands, sums over 1e4+ elements) set `tolerance:` in the case, e.g. atol 1e-4.
#  - float64: the same reasoning scaled by the ~5e8 smaller unit roundoff, kept generous.
#  - integers and bool: exact.
DEFAULT_TOLERANCES: Mapping[str, tuple[float, float]] = {
    "float16": (2e-3, 1e-3),
    "bfloat16": (1.6e-2, 1e-2),
    "float32": (1e-4, 1e-5),
    "float64": (1e-10, 1e-12),
    "int32": (0.0, 0.0),
    "int64": (0.0, 0.0),
    "bool": (0.0, 0.0),
}
EXACT = (0.0, 0.0)

# float32 -> bfloat16 keeps the upper 16 bits; rounding adds just under half of the dropped
# part (0x7FFF) plus the lowest kept bit, which rounds ties to even.
# (numpy scalars: uint64 mixed with a Python int would be promoted to float64)
_BF16_DROPPED_BITS = np.uint64(16)
_BF16_HALF_MINUS_ONE = np.uint64(0x7FFF)
_BF16_KEEP_MASK = np.uint64(0xFFFF0000)
_ONE = np.uint64(1)


def instance_seed(instance_id: str) -> int:
    """A 63-bit seed from the instance id: the same in every process and on every machine."""
    digest = hashlib.sha256(instance_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:SEED_BYTES], "big") & SEED_MASK


def numpy_dtype(dtype: str) -> np.dtype:
    """The numpy dtype that holds an opbench dtype (bfloat16 -> float32)."""
    return np.dtype(_NUMPY_DTYPES[dtype])


def generate_inputs(instance: CaseInstance) -> dict[str, np.ndarray]:
    """The instance's inputs, by name, in declaration order, from one seeded stream.
    Arrays are C-contiguous and of numpy_dtype(spec.dtype)."""
    rng = np.random.Generator(np.random.PCG64(instance_seed(instance.id)))
    return {spec.name: generate_array(spec, rng) for spec in instance.inputs}


def inputs_checksum(arrays: Mapping[str, np.ndarray]) -> str:
    """sha256 over every input's name, dtype, shape and bytes: two processes (two
    interpreters, perhaps two numpy versions) that generated an instance's inputs compare
    this, so both sides of a comparison are known to get the same numbers."""
    digest = hashlib.sha256()
    for name, array in arrays.items():
        digest.update(f"{name}:{array.dtype.str}:{array.shape};".encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def generate_array(spec: InputSpec, rng: np.random.Generator) -> np.ndarray:
    """One input drawn from `rng` as the spec says (options missing from spec.options take
    the documented defaults)."""
    if spec.dtype not in DTYPES:
        raise ValueError(f"input '{spec.name}': unknown dtype {spec.dtype!r}")
    if spec.dist not in DISTRIBUTIONS:
        raise ValueError(f"input '{spec.name}': unknown dist {spec.dist!r}")
    options = DistOptions.of({**DISTRIBUTIONS[spec.dist], **spec.options})
    shape = tuple(spec.shape)
    # Draw in float64 only for float64; narrower floats are drawn in float32 and rounded
    # once at the end, like a float32 tensor cast down.
    work = np.float64 if spec.dtype == "float64" else np.float32
    values = _DRAW[spec.dist](rng, shape, work, options)
    return _finish(values, spec.dtype)


def grad_weight(instance_id: str, shape: tuple[int, ...] | list[int], dtype: str,
                index: int = 0) -> np.ndarray:
    """Seeded N(0, 1) weights w for a backward loss sum(output * w), so gradients are not
    all ones (which would hide wrong reductions). A stream separate from the inputs; pass
    `index` to get different weights for each output of a multi-output op."""
    if dtype not in FLOAT_DTYPES:
        raise ValueError(f"gradient weights need a floating dtype, not {dtype!r}")
    key = instance_id + GRAD_STREAM_SUFFIX + (f":{index}" if index else "")
    rng = np.random.Generator(np.random.PCG64(instance_seed(key)))
    work = np.float64 if dtype == "float64" else np.float32
    return _finish(rng.standard_normal(tuple(shape), dtype=work), dtype)


def round_to_bfloat16(values: Any) -> np.ndarray:
    """float32 values rounded (to nearest, ties to even) to the nearest bfloat16, returned
    as float32. NaN stays NaN; values beyond the bfloat16 range become +-inf."""
    x = np.asarray(values, dtype=np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    lowest_kept = (bits >> _BF16_DROPPED_BITS) & _ONE
    rounded = (bits + _BF16_HALF_MINUS_ONE + lowest_kept) & _BF16_KEEP_MASK
    out = rounded.astype(np.uint32).view(np.float32)
    # A NaN whose payload lives only in the dropped bits would otherwise become inf.
    return np.where(np.isnan(x), np.float32(np.nan), out).astype(np.float32)


def tolerance_for(instance: CaseInstance) -> tuple[float, float]:
    """(rtol, atol) for comparing the instance's outputs: the case's `tolerance` where set,
    else the default for the dtype of its first floating input (exact without one)."""
    first_float = next((s.dtype for s in instance.inputs if s.dtype in FLOAT_DTYPES), None)
    rtol, atol = DEFAULT_TOLERANCES[first_float] if first_float else EXACT
    case = instance.case
    return (rtol if case.rtol is None else float(case.rtol),
            atol if case.atol is None else float(case.atol))


# ---------------------------------------------------------------------------------------

def _finish(values: np.ndarray, dtype: str) -> np.ndarray:
    values = np.asarray(values)
    if dtype == "bfloat16":
        out = round_to_bfloat16(values)
    else:
        out = values.astype(_NUMPY_DTYPES[dtype], copy=False)
    # np.ascontiguousarray would turn a 0-d array into 1-d.
    return out if out.flags.c_contiguous else out.copy(order="C")


def _normal(rng, shape, work, o):
    return rng.standard_normal(shape, dtype=work) * work(o.std) + work(o.mean)


def _uniform(rng, shape, work, o):
    return work(o.low) + rng.random(shape, dtype=work) * work(o.high - o.low)


def _randint(rng, shape, work, o):
    return rng.integers(int(o.low), int(o.high), size=shape, dtype=np.int64)


def _mask(rng, shape, work, o):
    return rng.random(shape) < o.p


def _arange(rng, shape, work, o):
    return np.arange(math.prod(shape), dtype=np.int64).reshape(shape)


def _permutation(rng, shape, work, o):
    if not shape:
        raise ValueError("dist permutation needs at least one dimension")
    rows = np.broadcast_to(np.arange(shape[-1], dtype=np.int64), shape)
    return rng.permuted(rows, axis=-1)


_DRAW = {
    "normal": _normal,
    "uniform": _uniform,
    "positive": _uniform,     # the same draw, with bounds > 0
    "randint": _randint,
    "mask": _mask,
    "arange": _arange,
    "permutation": _permutation,
}

"""How much work one case instance does, from its record alone (so any saved results file
can be decomposed): bytes moved, or floating-point operations for matrix products and
convolutions, or what the case declares with its `work:` key.

The number only has to be proportional to the kernel's real work within one size sweep for
the fit's slope to mean "cost per unit"; for the roofline it has to be the real traffic, so
bytes count every input read once and every output written once (the minimum a kernel must
move), and FLOPs count a multiply-add as two.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from opbench.results.records import InstanceRecord

BYTES, FLOPS = "bytes", "flops"

# Matrix products: 2 x output elements x the contracted length. Their cost is arithmetic,
# so bytes moved would make a 768-wide GEMM look like a memory-bound op.
GEMM_OPS = frozenset({"matmul", "mm", "bmm", "linear", "addmm", "baddbmm"})
CONV_OPS = frozenset({"conv1d", "conv2d", "conv3d"})

_ITEMSIZE = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8,
             "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1, "complex64": 8,
             "complex128": 16}


@dataclass(frozen=True)
class Work:
    amount: float        # in `unit`
    unit: str            # BYTES or FLOPS
    source: str          # how it was counted, for the report ("inputs+outputs", "declared", ...)


def itemsize(dtype: str) -> int:
    return _ITEMSIZE.get(dtype, 4)


def _elements(shape: Sequence[int]) -> int:
    return int(math.prod(shape)) if shape else 1


def _output_shapes(inst: InstanceRecord) -> list[Sequence[int]]:
    """output_shapes is one shape ([16, 64]) or a list of them for tuple outputs."""
    shapes = inst.output_shapes
    if shapes is None:
        return []
    if shapes and all(isinstance(s, (list, tuple)) for s in shapes):
        return [s for s in shapes if all(isinstance(d, int) for d in s)]
    return [shapes] if all(isinstance(d, int) for d in shapes) else []


def bytes_moved(inst: InstanceRecord) -> float:
    """Inputs read once plus outputs written once. Outputs take the widest input dtype
    (the record keeps output shapes, not dtypes; a cast declares its own work)."""
    inputs = inst.inputs
    widest = max((itemsize(s.dtype) for s in inputs), default=4)
    read = sum(_elements(s.shape) * itemsize(s.dtype) for s in inputs)
    written = sum(_elements(s) * widest for s in _output_shapes(inst))
    return float(read + written)


def _contracted_length(shapes: Sequence[Sequence[int]], out: Sequence[int]) -> int | None:
    """K of a matrix product: the first pair of operands (in argument order) that multiply
    into the output, a[..., M, K] @ b[..., K, N] (matmul, bmm) or a[..., M, K] with
    b[N, K] (linear's weight is out x in). Checking M and N against the output keeps a
    bias operand (addmm, baddbmm) from passing for a factor. None when no pair fits."""
    if len(out) < 2:
        return None
    m, n = out[-2], out[-1]
    for i, a in enumerate(shapes):
        if len(a) < 2 or a[-2] != m:
            continue
        for b in shapes[i + 1:]:
            if len(b) >= 2 and a[-1] == b[-2] and b[-1] == n:
                return a[-1]
            if len(b) >= 2 and a[-1] == b[-1] and b[-2] == n:
                return a[-1]
    return None


def gemm_flops(inst: InstanceRecord) -> float | None:
    outputs = _output_shapes(inst)
    shapes = [s.shape for s in inst.inputs]
    k = _contracted_length(shapes, outputs[0]) if outputs else None
    if k is None:
        return None
    return 2.0 * _elements(outputs[0]) * k


def conv_flops(inst: InstanceRecord) -> float | None:
    """2 x output elements x (input channels per group x kernel elements), read off the
    weight: the operand after the input with the same rank (Cout, Cin/groups, k...)."""
    outputs = _output_shapes(inst)
    shapes = [s.shape for s in inst.inputs]
    if not outputs or len(shapes) < 2 or len(shapes[1]) != len(shapes[0]):
        return None
    return 2.0 * _elements(outputs[0]) * _elements(shapes[1][1:])


def work_of(inst: InstanceRecord) -> Work | None:
    """The instance's work, or None when it cannot be counted (no output shapes: the
    instance failed before its outputs were seen)."""
    declared = inst.work
    if declared is not None:
        outputs = _output_shapes(inst)
        if not outputs:
            return None
        per = float(declared.per_output_element)
        return Work(per * sum(_elements(s) for s in outputs), declared.unit, "declared")
    op = inst.op
    if op in GEMM_OPS and (flops := gemm_flops(inst)):
        return Work(flops, FLOPS, "2 x outputs x contracted length")
    if op in CONV_OPS and (flops := conv_flops(inst)):
        return Work(flops, FLOPS, "2 x outputs x weight elements per output channel")
    if not _output_shapes(inst):
        return None
    return Work(bytes_moved(inst), BYTES, "inputs read + outputs written")


__all__ = ["Work", "work_of", "bytes_moved", "gemm_flops", "conv_flops", "BYTES", "FLOPS"]

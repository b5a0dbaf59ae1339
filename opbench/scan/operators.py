"""Python operator syntax on tensors, named by the Tensor method it dispatches to.

`a + b` is reported as `Tensor.__add__` whichever side is the tensor (the reflected
`__radd__` is the same kernel), so a row joins with cases written against `Tensor.__add__`.
"""
from __future__ import annotations

import ast

BINARY_DUNDERS: dict[type, str] = {
    ast.Add: "__add__", ast.Sub: "__sub__", ast.Mult: "__mul__", ast.Div: "__truediv__",
    ast.FloorDiv: "__floordiv__", ast.Mod: "__mod__", ast.Pow: "__pow__",
    ast.MatMult: "__matmul__", ast.BitAnd: "__and__", ast.BitOr: "__or__",
    ast.BitXor: "__xor__", ast.LShift: "__lshift__", ast.RShift: "__rshift__",
}

# In-place forms: `x += y` -> Tensor.__iadd__.
AUGMENTED_DUNDERS: dict[type, str] = {
    op: "__i" + name[2:] for op, name in BINARY_DUNDERS.items()
}

UNARY_DUNDERS: dict[type, str] = {
    ast.USub: "__neg__", ast.UAdd: "__pos__", ast.Invert: "__invert__",
}

# `is`, `in` and their negations are Python identity/membership, not tensor kernels.
COMPARE_DUNDERS: dict[type, str] = {
    ast.Eq: "__eq__", ast.NotEq: "__ne__", ast.Lt: "__lt__", ast.LtE: "__le__",
    ast.Gt: "__gt__", ast.GtE: "__ge__",
}

GETITEM, SETITEM, DELITEM = "__getitem__", "__setitem__", "__delitem__"

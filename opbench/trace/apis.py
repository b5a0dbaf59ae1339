"""Which tensor attributes count as APIs (shared by the torch and MindSpore interceptors)."""
from __future__ import annotations

_BINARY = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
           "xor", "lshift", "rshift")
# Python operators on tensors: x + y is Tensor.__add__, x[i] is Tensor.__getitem__.
OPERATOR_DUNDERS = frozenset(
    [f"__{op}__" for op in _BINARY] + [f"__r{op}__" for op in _BINARY]
    + [f"__i{op}__" for op in _BINARY]
    + [f"__{op}__" for op in ("eq", "ne", "lt", "le", "gt", "ge", "neg", "pos", "abs",
                              "invert", "getitem", "setitem")])

# Hooks the interpreter calls for printing, hashing, pickling, iteration, attribute access and
# object construction: protocol plumbing, not operators a model computes with. Tracing them
# would fill the table with repr and len calls (and recurse while formatting the trace).
PROTOCOL_HOOKS = frozenset({
    "__repr__", "__str__", "__format__", "__hash__", "__dir__", "__sizeof__", "__reduce__",
    "__reduce_ex__", "__getstate__", "__setstate__", "__copy__", "__deepcopy__", "__array__",
    "__array_wrap__", "__array_priority__", "__len__", "__iter__", "__contains__", "__getattr__",
    "__getattribute__", "__setattr__", "__delattr__", "__init__", "__new__", "__del__",
    "__init_subclass__", "__subclasshook__", "__class__", "__torch_function__",
    "__torch_dispatch__", "__dlpack__", "__dlpack_device__", "__index__", "__bool__",
    "__int__", "__float__", "__complex__", "__nonzero__", "__ms_class__",
})


def is_traced_tensor_attribute(name: str) -> bool:
    """Public methods and operators; never private helpers or protocol hooks."""
    if name in PROTOCOL_HOOKS:
        return False
    return name in OPERATOR_DUNDERS or not name.startswith("_")

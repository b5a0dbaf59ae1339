"""Which objects a case file's API path may reach: only the framework's own.

A case file arrives in a pull request and CI runs it, so an API path is untrusted input.
Following attributes from `torch` reaches far more than torch: `torch.os.system`,
`torch.builtins.eval`, `numpy.lib.npyio.os.system` and `mindspore.context.os.system` all
resolved (and ran) before this module existed. The rules, checked at every step of the walk:

1. no dunder attribute in a dotted path (`__globals__`, `__class__`, `__subclasses__`,
   `__builtins__` are the classic ways out of an object to the interpreter);
2. every module reached is the framework's package or one of its submodules;
3. every other object reached belongs to the framework: its defining module (`__module__`,
   or its type's, or the module/class a builtin method is bound to) is inside the package;
4. nothing in a namespace or under a name that loads or writes files, unpickles, compiles
   or launches processes (`torch.load`, `numpy.distutils`, `torch.utils.cpp_extension`,
   `mindspore.load_checkpoint`, ...): those are the framework's own, so rule 3 lets them
   through, yet an operator benchmark never needs them.

`Tensor.method` paths name a method looked up on the receiver at call time; their name must
be a public method or one of the operator dunders (`__add__`, `__getitem__`, ...).
"""
from __future__ import annotations

import types
from typing import Any


class UnknownAPI(Exception):
    """A dotted API path does not resolve in the installed framework, or names something a
    case may not call (raised here at load time, and by frameworks/resolve.py at run time)."""

__all__ = ["check_path_text", "check_part", "check_reached", "check_tensor_method", "owner_module"]

# Namespaces (inside a framework) that run code, read or write files, or talk to other
# processes. A prefix matches the module itself and everything below it.
DENIED_NAMESPACES = (
    "torch.utils", "torch.hub", "torch.distributed", "torch.package", "torch.jit",
    "torch.compiler", "torch._dynamo", "torch._inductor", "torch.serialization",
    "torch.multiprocessing", "torch.onnx", "torch.export", "torch.cuda.memory",
    "numpy.distutils", "numpy.f2py", "numpy.testing", "numpy.lib.npyio", "numpy.ctypeslib",
    "numpy.lib.format", "numpy.lib._datasource", "numpy.core._internal",
    "mindspore.train.serialization", "mindspore.dataset", "mindspore.mindrecord",
    "mindspore.communication", "mindspore.profiler", "mindspore.run_check",
    "mindspore.parallel", "mindspore.utils",
)
# Names that read, write or unpickle files, or compile code, wherever they live.
DENIED_NAMES = frozenset({
    "load", "save", "loads", "dump", "dumps", "loadtxt", "savetxt", "savez",
    "savez_compressed", "genfromtxt", "fromfile", "tofile", "fromregex", "memmap",
    "load_checkpoint", "save_checkpoint", "load_param_into_net", "export", "load_mindir",
    "load_inline", "load_library", "system", "popen", "exec", "eval",
    # custom operators built from or loaded out of files named in the arguments
    "Custom", "CustomOpBuilder", "CustomRegOp",
})
# Dunder methods a `Tensor.` path may name: Python's operators on a tensor.
OPERATOR_DUNDERS = frozenset(
    f"__{name}__" for name in (
        "add radd iadd sub rsub isub mul rmul imul truediv rtruediv itruediv floordiv "
        "rfloordiv ifloordiv mod rmod imod pow rpow ipow matmul rmatmul imatmul and rand iand "
        "or ror ior xor rxor ixor lshift rlshift rshift rrshift neg pos abs invert eq ne lt "
        "le gt ge getitem setitem len bool float int index contains").split())


def _in_namespace(name: str, namespace: str) -> bool:
    return name == namespace or name.startswith(namespace + ".")


def _denied_namespace(module_name: str) -> str | None:
    return next((ns for ns in DENIED_NAMESPACES if _in_namespace(module_name, ns)), None)


def check_path_text(api: str, parts: list[str]) -> None:
    """The whole dotted path, before anything is imported: importing a module runs it.
    An operator dunder may end a path (`torch.Tensor.__add__`); no other dunder may appear."""
    for position, part in enumerate(parts[1:], start=2):
        if not (position == len(parts) and part in OPERATOR_DUNDERS):
            check_part(api, part)
    denied = _denied_namespace(api)
    if denied:
        raise UnknownAPI(f"{api}: {denied} reads or writes files or runs code; a case may "
                         f"not call it")


def check_part(api: str, part: str) -> None:
    """One attribute name of a dotted path, before it is looked up."""
    if part.startswith("__"):
        raise UnknownAPI(f"{api}: '{part}' is a special attribute; an API path may not "
                         f"walk through it")
    if part in DENIED_NAMES:
        raise UnknownAPI(f"{api}: '{part}' reads or writes files or runs code; a case may "
                         f"not call it")


def owner_module(obj: Any) -> str | None:
    """The module an object was defined in (a module: its own name), or None if unknown."""
    if isinstance(obj, types.ModuleType):
        return getattr(obj, "__name__", None)
    module = getattr(obj, "__module__", None)
    if isinstance(module, str):
        return module
    bound_to = getattr(obj, "__self__", None)   # C functions: the module or class holding them
    if isinstance(bound_to, types.ModuleType):
        return bound_to.__name__
    if isinstance(bound_to, type):
        return bound_to.__module__
    getter = getattr(obj, "fget", None)   # a property: where its getter was defined
    if getter is not None:
        return owner_module(getter)
    owner_class = getattr(obj, "__objclass__", None)   # C method descriptors
    if isinstance(owner_class, type):
        return owner_class.__module__
    module = getattr(type(obj), "__module__", None)
    return module if isinstance(module, str) else None


def _belongs(module: str | None, top_module: str) -> bool:
    # torch's C core names its functions' module "torch._C._VariableFunctions" or
    # "torch._C._nn"; both are inside the package.
    return module is not None and _in_namespace(module, top_module)


def check_reached(api: str, obj: Any, path: str, top_module: str) -> None:
    """An object reached by the walk (a module imported, or an attribute looked up) at
    `path` must belong to the framework `top_module` and lie outside the denied places."""
    module = owner_module(obj)
    kind = "module" if isinstance(obj, types.ModuleType) else "object"
    if not _belongs(module, top_module):
        raise UnknownAPI(f"{api}: '{path}' is {kind} {module or '(unknown)'!r}, which is not "
                         f"part of {top_module}; an API must belong to its framework")
    denied = _denied_namespace(module) or _denied_namespace(path)
    if denied:
        raise UnknownAPI(f"{api}: '{path}' is in {denied}, which reads or writes files or "
                         f"runs code; a case may not call it")
    name = getattr(obj, "__name__", None)
    if isinstance(name, str) and name in DENIED_NAMES:
        raise UnknownAPI(f"{api}: '{path}' is {name!r}, which reads or writes files or "
                         f"runs code; a case may not call it")


def check_tensor_method(api: str, method: str) -> None:
    if method.startswith("__") and method not in OPERATOR_DUNDERS:
        raise UnknownAPI(f"{api}: '{method}' is not an operator method; a Tensor path may "
                         f"name a public method or an operator such as __add__ or "
                         f"__getitem__")
    if method.startswith("_") and not method.startswith("__"):
        raise UnknownAPI(f"{api}: '{method}' is private; a Tensor path may name a public "
                         f"method or an operator such as __add__")
    if method in DENIED_NAMES:
        raise UnknownAPI(f"{api}: '{method}' reads or writes files or runs code; a case may "
                         f"not call it")

"""Turn an API path from a case file into a callable, without ever evaluating text.

"torch.nn.functional.softmax": import the longest importable module prefix
("torch.nn.functional"), then getattr the rest ("softmax").
"Tensor.__add__": a function f(receiver, *args, **kw) calling receiver.__add__(*args, **kw).
Every step of the walk must stay inside the framework (api_guard.py says why and how).
"""
from __future__ import annotations

import difflib
import importlib
import types
from typing import Any, Callable

from opbench.cases.api_guard import check_path_text, check_reached, check_tensor_method
from opbench.frameworks.base import UnknownAPI

TENSOR_PREFIX = "Tensor."
# difflib's default similarity cut-off (0.6) suggests nonsense for short names; 0.7 keeps
# "reshap" -> "reshape" and "sofmax" -> "softmax" but drops unrelated 3-letter neighbours.
SUGGESTION_CUTOFF = 0.7
MAX_SUGGESTIONS = 3
BROKEN_IMPORT = "a module on this path is installed but failed to import"


def resolve_api(api: str, top_module: str, tensor_class: Callable[[], type]) -> Callable[..., Any]:
    """Resolve `api` for the framework whose top module is `top_module` ("torch").
    `tensor_class` returns the class "Tensor.method" refers to (called only for such paths,
    so resolving a dotted path never needs it)."""
    if api.startswith(TENSOR_PREFIX):
        return tensor_method(api, tensor_class())
    if not api.startswith(top_module + "."):
        raise UnknownAPI(f"{api}: a {top_module} API must start with '{top_module}.' "
                         f"(or be '{TENSOR_PREFIX}method')")
    parts = api.split(".")
    if any(not part.isidentifier() for part in parts):
        raise UnknownAPI(f"{api}: not a dotted Python name")
    check_path_text(api, parts)
    module, used = import_longest_prefix(api, parts)
    target: Any = module
    owner_path = ".".join(parts[:used])
    check_reached(api, module, owner_path, top_module)
    for part in parts[used:]:
        target = attribute(api, target, owner_path, part)
        owner_path = f"{owner_path}.{part}"
        check_reached(api, target, owner_path, top_module)
    if not callable(target):
        raise UnknownAPI(f"{api}: resolves to a {type(target).__name__}, which is not callable")
    return target


def import_longest_prefix(api: str, parts: list[str]) -> tuple[types.ModuleType, int]:
    """Import the longest prefix of `parts` that is a module; return it and its length."""
    for length in range(len(parts), 0, -1):
        name = ".".join(parts[:length])
        try:
            return importlib.import_module(name), length
        except ModuleNotFoundError as err:
            # Only "this very prefix is not a module" means "try a shorter one"; a module that
            # exists but fails on one of its own imports is a broken install, said as such.
            if err.name is not None and not is_module_prefix(err.name, name):
                raise UnknownAPI(f"{api}: {BROKEN_IMPORT}: {err}") from err
        except ImportError as err:
            raise UnknownAPI(f"{api}: {BROKEN_IMPORT}: {err}") from err
    raise UnknownAPI(f"{api}: module {parts[0]!r} is not installed")


def is_module_prefix(prefix: str, name: str) -> bool:
    """'torch.nn' is a module prefix of 'torch.nn.functional'; 'torc' is not of 'torch'."""
    return name == prefix or name.startswith(prefix + ".")


def tensor_method(api: str, cls: type) -> Callable[..., Any]:
    """ "Tensor.sum" -> f(receiver, *args, **kw) = receiver.sum(*args, **kw).
    An attribute that is not callable on the class (a property such as Tensor.T) is read,
    not called: f(receiver) = receiver.T."""
    method = api[len(TENSOR_PREFIX):]
    if not method.isidentifier():
        raise UnknownAPI(f"{api}: {method!r} is not a method name")
    check_tensor_method(api, method)
    class_attr = attribute(api, cls, f"{cls.__module__}.{cls.__qualname__}", method)

    if callable(class_attr):
        def call(receiver: Any, *args: Any, **kwargs: Any) -> Any:
            return getattr(receiver, method)(*args, **kwargs)
    else:
        def call(receiver: Any) -> Any:  # type: ignore[misc]
            return getattr(receiver, method)
    call.__name__ = method
    call.__qualname__ = api
    return call


def attribute(api: str, owner: Any, owner_path: str, name: str) -> Any:
    try:
        return getattr(owner, name)
    except AttributeError:
        kind = "module" if isinstance(owner, types.ModuleType) else (
            "class" if isinstance(owner, type) else "object")
        raise UnknownAPI(f"{api}: {kind} {owner_path!r} has no attribute {name!r}"
                         f"{suggestion(name, public_names(owner))}") from None


def public_names(owner: Any) -> list[str]:
    try:
        return [n for n in dir(owner) if not n.startswith("_") or n.startswith("__")]
    except Exception:  # noqa: BLE001 - dir() of exotic extension objects can raise anything
        return []


def suggestion(name: str, candidates: list[str]) -> str:
    """' (did you mean 'reshape'?)' or '' when nothing is close."""
    close = difflib.get_close_matches(name, candidates, n=MAX_SUGGESTIONS,
                                      cutoff=SUGGESTION_CUTOFF)
    if not close:
        return ""
    quoted = [repr(c) for c in close]
    listed = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
    return f" (did you mean {listed}?)"

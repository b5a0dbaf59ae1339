"""Name bindings and import-alias resolution for the static scan.

A `Scope` maps local names to what the scan knows about them: a framework module/function/
class path (`F` -> `torch.nn.functional`), a framework object built from a class
(`self.fc = nn.Linear(...)`), a value believed to be a tensor, or "something else" (a local
that shadows an outer name). Only the two frameworks are tracked; every other import binds a
plain local, so `np.zeros` never resolves.
"""
from __future__ import annotations

import ast
from typing import NamedTuple

from opbench.config.vocabulary import FRAMEWORKS

# Binding kinds.
PATH = "path"            # a framework module / function / class, by full dotted name
INSTANCE = "instance"    # an object constructed from a framework class (nn module, primitive)
TENSOR = "tensor"        # a value believed to be a tensor (always a heuristic)
LOCAL = "local"          # anything else; shadows outer bindings


class Binding(NamedTuple):
    kind: str
    path: str = ""           # PATH: the dotted name; INSTANCE: the class it was built from
    framework: str = ""      # TENSOR / INSTANCE: which framework
    reason: str = ""         # TENSOR: why the scan believes it (goes into guess_reason)
    sticky: bool = False     # bound by an import (see Scope.bind)
    weak: bool = False       # TENSOR: evidence from a method-name chain only


LOCAL_BINDING = Binding(LOCAL)


def framework_of(path: str) -> str | None:
    root = path.split(".", 1)[0]
    return root if root in FRAMEWORKS else None


class Scope:
    """One Python scope (module, class, function, comprehension)."""

    __slots__ = ("names", "parent", "kind", "self_attrs", "self_name", "star_modules")

    def __init__(self, parent: Scope | None, kind: str, *,
                 self_attrs: dict[str, Binding] | None = None, self_name: str | None = None):
        self.names: dict[str, Binding] = {}
        self.parent = parent
        self.kind = kind                  # "module" | "class" | "function"
        # Attributes set on `self` in the methods of the enclosing class; shared by all methods
        # of one class so `forward` sees what `__init__` assigned.
        self.self_attrs = self_attrs if self_attrs is not None else {}
        self.self_name = self_name        # the first parameter of a method, usually "self"
        self.star_modules: list[str] = []  # framework modules star-imported into this scope

    def lookup(self, name: str) -> Binding | None:
        # Python semantics: a function does not see the names of an enclosing class body.
        scope: Scope | None = self
        first = True
        while scope is not None:
            if first or scope.kind != "class":
                found = scope.names.get(name)
                if found is not None:
                    return found
            first = False
            scope = scope.parent
        return None

    def star_module_for(self, name: str) -> str | None:
        """The framework module a bare, otherwise unbound name may come from (`import *`)."""
        scope: Scope | None = self
        while scope is not None:
            if scope.star_modules:
                return scope.star_modules[-1]
            scope = scope.parent
        return None

    def bind(self, name: str, binding: Binding) -> None:
        # At module level an import is "sticky": `try: import torch / except: torch = None`
        # must not erase `torch` for the rest of the file. Only another framework binding or
        # a def/class (which pass force) replaces it. Inside functions plain Python rules hold.
        current = self.names.get(name)
        if (self.kind == "module" and current is not None and current.sticky
                and binding.kind in (LOCAL, TENSOR)):
            return
        self.names[name] = binding

    def force_bind(self, name: str, binding: Binding) -> None:
        self.names[name] = binding


def bind_import(scope: Scope, node: ast.Import) -> set[str]:
    """Bind the names of `import a.b [as c]`; returns the frameworks imported."""
    seen: set[str] = set()
    for alias in node.names:
        framework = framework_of(alias.name)
        if framework:
            seen.add(framework)
        if alias.asname:
            # `import torch.nn.functional as F` binds F to the submodule itself.
            binding = Binding(PATH, alias.name, sticky=True) if framework else LOCAL_BINDING
            scope.force_bind(alias.asname, binding)
        else:
            # `import torch.nn.functional` binds only the root name `torch`.
            root = alias.name.split(".", 1)[0]
            binding = Binding(PATH, root, sticky=True) if framework else LOCAL_BINDING
            scope.force_bind(root, binding)
    return seen


def bind_import_from(scope: Scope, node: ast.ImportFrom) -> set[str]:
    """Bind `from a.b import c [as d]` and record `from a import *`."""
    module = node.module or ""
    # Relative imports (`from . import x`) name the scanned project's own modules.
    framework = framework_of(module) if node.level == 0 and module else None
    for alias in node.names:
        if alias.name == "*":
            if framework:
                scope.star_modules.append(module)
            continue
        local = alias.asname or alias.name
        binding = (Binding(PATH, f"{module}.{alias.name}", sticky=True) if framework
                   else LOCAL_BINDING)
        scope.force_bind(local, binding)
    return {framework} if framework else set()

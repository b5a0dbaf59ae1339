"""Attribute replacement that is undone exactly.

Every replacement remembers whether the owner (a module or a class) had the attribute in its
own namespace: undoing puts the original object back, or deletes the attribute so the class
inherits it again, as before. Undo runs in reverse order and never stops half way.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

_MISSING = object()

# Marks a wrapper made by the tracer, so a second tracer never wraps a wrapper.
ORIGINAL_ATTR = "__opbench_trace_original__"


def lookup_static(owner: type, name: str) -> Any:
    """The raw attribute `name` as stored on owner or the first class in its MRO that has it
    (no descriptor binding), or None."""
    for klass in getattr(owner, "__mro__", (owner,)):
        namespace = vars(klass)
        if name in namespace:
            return namespace[name]
    return None


def is_wrapper(obj: Any) -> bool:
    return getattr(obj, ORIGINAL_ATTR, None) is not None


def make_wrapper(original: Callable[..., Any], body: Callable[..., Any]) -> Callable[..., Any]:
    """`body` dressed as `original` (name, docs, __wrapped__), so code that introspects the
    API (signatures, docs, help()) still sees the original."""
    try:
        functools.update_wrapper(body, original)
    except (AttributeError, TypeError):  # builtins without __dict__ and the like
        body.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(body, ORIGINAL_ATTR, original)
    return body


class PatchSet:
    def __init__(self) -> None:
        # (owner, name, own value or _MISSING); and what each replaced name resolved to
        self._patches: list[tuple[Any, str, Any]] = []
        self._replaced: dict[tuple[int, str], Any] = {}

    def replace(self, owner: Any, name: str, new: Any) -> None:
        own = vars(owner).get(name, _MISSING)
        if (id(owner), name) not in self._replaced:
            if own is not _MISSING:
                previous = own
            else:       # inherited (classes) or absent until now
                previous = lookup_static(owner, name) if isinstance(owner, type) else None
            self._replaced[(id(owner), name)] = previous
        setattr(owner, name, new)
        self._patches.append((owner, name, own))

    def __len__(self) -> int:
        return len(self._patches)

    def original(self, owner: Any, name: str) -> Any:
        """What `owner.name` was before it was replaced here (for calling it untraced)."""
        if (id(owner), name) in self._replaced:
            return self._replaced[(id(owner), name)]
        return getattr(owner, name)

    def restore(self) -> list[str]:
        """Undo every replacement, newest first. Returns a message per failure (there should
        be none); failures never stop the rest from being undone."""
        problems: list[str] = []
        self._replaced.clear()
        while self._patches:
            owner, name, own = self._patches.pop()
            try:
                if own is _MISSING:
                    delattr(owner, name)
                else:
                    setattr(owner, name, own)
            except Exception as err:  # keep undoing the others
                problems.append(f"could not restore {getattr(owner, '__name__', owner)}.{name}: "
                                f"{err}")
        return problems

"""Which kernels are extra work of a known kind, by their names as the profilers write them.

  cast      a dtype conversion: MindSpore's Cast, torch's aten::_to_copy / aten::to, CUDA's
            elementwise copy kernels named for a cast
  layout    a layout change or a contiguous copy: TransData, Transpose, aten::contiguous,
            aten::clone of a strided view, MindSpore's Contiguous / TensorCopySlices
  fallback  a slow path or another device: Ascend's AI_CPU kernels (kernel_details.csv's
            accelerator core), MindSpore's "fallback" / aclnnFallback names, a host sync
            (aten::_local_scalar_dense, aten::item)
The names come from the profiles made here (docs/profile.md lists them) and from the formats'
documented kernel types; a name matching none is plain compute (None).
"""
from __future__ import annotations

import re

__all__ = ["CAST", "LAYOUT", "FALLBACK", "KINDS", "kind_of"]

CAST, LAYOUT, FALLBACK = "cast", "layout", "fallback"
KINDS = (CAST, LAYOUT, FALLBACK)

_CAST = re.compile(r"(^|::|_)(cast|_to_copy|to|type_as|convert)($|_)|Cast", re.IGNORECASE)
_LAYOUT = re.compile(
    r"TransData|Transpose|contiguous|^aten::clone$|TensorCopySlices|Contiguous|"
    r"^aten::copy_$|permute_copy|transpose_copy|AsStrided", re.IGNORECASE)
_FALLBACK = re.compile(r"AI_?CPU|fallback|_local_scalar_dense|^aten::item$",
                       re.IGNORECASE)


def kind_of(name: str, core: str | None = None) -> str | None:
    """The kind of extra work a kernel named `name` is (None: compute). `core` is the
    accelerator core a device profile names (Ascend's AI_CPU marks a fallback)."""
    if core and _FALLBACK.search(core):
        return FALLBACK
    if _FALLBACK.search(name):
        return FALLBACK
    if _CAST.search(name):
        return CAST
    if _LAYOUT.search(name):
        return LAYOUT
    return None

"""A profile's kernels: the events that did the work, each with its kind of extra work.

  - device kernels (CUDA, NPU), where the profile has any: the host ops are then host time;
  - else a MindSpore CPU profile's kernel events (HostCpuOps);
  - else a torch CPU profile's leaf operators: an aten op with no operator inside it is the
    kernel that ran on the CPU, except the ops that only make a view or a header (reshape,
    view, transpose, empty, ...: METADATA_OPS), which launch no kernel and count as host.
A torch CPU leaf takes the kind of the outermost op above it that has one (a cast is
aten::to -> aten::_to_copy -> aten::copy_: the copy_ is the cast's kernel, not a layout
change).
"""
from __future__ import annotations

from dataclasses import dataclass

from opbench.profiles.events import KERNEL, OP, Profile, ProfileEvent
from opbench.profiles.kinds import kind_of

__all__ = ["Kernel", "kernels_of", "METADATA_OPS", "enclosing_ops"]

# torch CPU ops that allocate or describe a tensor and run no kernel: measured here, each
# 1-15 us of dispatch in a profile (aten::view under aten::reshape 8x16: 14.7 us), no data
# touched. Counting them as kernels would read a reshape as kernel-bound.
METADATA_OPS = frozenset({
    "aten::view", "aten::reshape", "aten::_reshape_alias", "aten::as_strided",
    "aten::t", "aten::transpose", "aten::permute", "aten::expand", "aten::expand_as",
    "aten::squeeze", "aten::unsqueeze", "aten::flatten", "aten::unflatten", "aten::select",
    "aten::slice", "aten::narrow", "aten::split", "aten::chunk", "aten::unbind",
    "aten::alias", "aten::detach", "aten::detach_", "aten::lift_fresh", "aten::empty",
    "aten::empty_like", "aten::empty_strided", "aten::resolve_conj", "aten::resolve_neg",
    "aten::view_as", "aten::numpy_T", "aten::unfold", "aten::diagonal", "aten::movedim",
    "aten::swapaxes", "aten::result_type", "aten::is_nonzero", "aten::set_",
    "aten::_unsafe_view", "aten::contiguous", "aten::resize_", "aten::to", "aten::type_as",
})


@dataclass(frozen=True)
class Kernel:
    event: ProfileEvent
    kind: str | None            # kinds.py: cast, layout, fallback, or None (compute)
    op: ProfileEvent | None     # the outermost host op it ran under (torch), if any


def enclosing_ops(events: tuple[ProfileEvent, ...]) -> dict[int, list[int]]:
    """For each OP event's index, the indices of the OP events enclosing it on its thread,
    outermost first (events sorted by start, longer first on ties)."""
    parents: dict[int, list[int]] = {}
    stacks: dict[str, list[int]] = {}
    for i, e in enumerate(events):
        if e.category != OP:
            continue
        stack = stacks.setdefault(e.tid, [])
        while stack and events[stack[-1]].end_us <= e.start_us:
            stack.pop()
        parents[i] = list(stack)
        stack.append(i)
    return parents


def _torch_cpu_kernels(events: tuple[ProfileEvent, ...]) -> list[Kernel]:
    parents = enclosing_ops(events)
    # an op is a leaf when nothing but metadata ops runs inside it (aten::mm calls
    # aten::resolve_conj on its operands: still the matrix product's kernel)
    has_child = {chain[-1] for i, chain in parents.items()
                 if chain and events[i].name not in METADATA_OPS}
    kernels = []
    for i, chain in parents.items():
        e = events[i]
        if i in has_child or e.name in METADATA_OPS:
            continue
        kind = next((k for k in (kind_of(events[p].name) for p in chain) if k), None)
        kernels.append(Kernel(e, kind or kind_of(e.name), events[chain[0]] if chain else e))
    return kernels


def _device_kernels(profile: Profile) -> list[Kernel]:
    return [Kernel(e, kind_of(e.name, core=e.tid if e.device == "npu" else None), None)
            for e in profile.events if e.category == KERNEL]


def kernels_of(profile: Profile) -> list[Kernel]:
    """The profile's kernels in time order (see the module's docstring for which)."""
    if any(e.category == KERNEL for e in profile.events):
        return _device_kernels(profile)
    return _torch_cpu_kernels(profile.events)

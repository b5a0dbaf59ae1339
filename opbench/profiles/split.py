"""A call's time split by its profile, and the cause a profile gives a SLOW row. Pure.

kernel time per call: the profile's kernels per call (call_profile.py), scaled by the timed
call over the profiled one where the profiler slowed the call down, and at most the timed
call's time; host time per call: the timed call less its kernels (the framework's Python,
dispatch, launch, allocation, and the sync a serial sample waits for), floored at 0. When
the profiled kernels exceed the timed call (the profiler's process ran in another speed
mode, or the kernels of an async loop overlap), the split says so (`floored`) and the kernel
time is the call's: a kernel time above the call's cannot be true of the timed call.

The cause of a SLOW row, from both sides' splits (target slower by `gap`):
  - extra kernels: the target's casts / layout changes / fallbacks, beyond the reference's,
    take at least EXTRA_SHARE of the gap;
  - host: the target's host time exceeds the reference's by more than its kernel time does;
  - kernel: the other way round; the basis names each side's heaviest kernel.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from opbench.profiles.call_profile import CallProfile
from opbench.profiles.kinds import KINDS

__all__ = ["Split", "split", "ProfileCause", "profile_cause", "HOST", "KERNEL_BOUND",
           "EXTRA", "EXTRA_SHARE", "SWEEP_KIND_OF"]

HOST, KERNEL_BOUND, EXTRA = "host", "kernel", "extra kernels"
# Extra work of a known kind that explains at least a third of the gap is named first: a
# framework engineer removes a cast or a transpose before tuning a kernel.
EXTRA_SHARE = 1 / 3
# The sweep's cause kinds (gapmap/attribute.py CAUSE_KINDS) each profile cause agrees with.
SWEEP_KIND_OF = {HOST: "overhead", KERNEL_BOUND: "kernel", EXTRA: "kernel"}


@dataclass(frozen=True)
class Split:
    call_s: float
    kernel_s: float
    host_s: float
    floored: bool           # the profiled kernels exceeded the timed call

    @property
    def host_share(self) -> float:
        return self.host_s / self.call_s if self.call_s > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"call_s": self.call_s, "kernel_s": self.kernel_s, "host_s": self.host_s,
                "host_floored": self.floored}


def split(profile: CallProfile, call_s: float) -> Split:
    kernel_s = profile.kernel_s
    if profile.wall_s and profile.wall_s > call_s:
        # The profiler's own cost (its event stamps, inside and around each op) makes the
        # profiled call slower than the timed one: torch's 4x64 softmax took 3.84 us a call
        # profiled against 1.46 us timed, its kernel 2.2 us. The kernels keep their share of
        # the profiled call, so the split is of the timed call, not of the profiler's.
        kernel_s *= call_s / profile.wall_s
    floored = kernel_s > call_s
    kernel_s = min(kernel_s, call_s)
    return Split(call_s, kernel_s, max(call_s - kernel_s, 0.0), floored)


@dataclass(frozen=True)
class ProfileCause:
    kind: str               # host | kernel | extra kernels
    basis: str
    source: str = "profile"

    @property
    def sweep_kind(self) -> str:
        return SWEEP_KIND_OF[self.kind]

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "basis": self.basis, "source": self.source}


def _time(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} us"


def _heaviest(profile: CallProfile) -> str:
    if not profile.kernels:
        return "no kernel"
    k = profile.kernels[0]
    return f"`{k.name}` {_time(k.time_s)}"


def _count(calls: float) -> str:
    return f"{calls:.3g}"


def profile_cause(reference: CallProfile, reference_split: Split, target: CallProfile,
                  target_split: Split, names: tuple[str, str] = ("reference", "target")
                  ) -> ProfileCause | None:
    """Why the target is slower, from the two profiles (None when it is not slower)."""
    ref_name, tgt_name = names
    gap = target_split.call_s - reference_split.call_s
    if gap <= 0:
        return None
    extra_kinds = []
    extra_s = 0.0
    for kind in KINDS:
        more = target.kind_time_s(kind) - reference.kind_time_s(kind)
        launches = target.extra().get(kind, 0.0) - reference.extra().get(kind, 0.0)
        if more > 0 and launches > 0:
            extra_s += more
            extra_kinds.append(f"{_count(launches)} {kind} kernel(s) per call")
    if extra_kinds and extra_s >= EXTRA_SHARE * gap:
        return ProfileCause(EXTRA, f"extra kernels: {tgt_name} runs {', '.join(extra_kinds)} "
                                   f"more than {ref_name} ({_time(extra_s)} of the "
                                   f"{_time(gap)} gap)")
    host_gap = target_split.host_s - reference_split.host_s
    kernel_gap = target_split.kernel_s - reference_split.kernel_s
    if host_gap >= kernel_gap:
        return ProfileCause(HOST, f"host: {target_split.host_share:.0%} of {tgt_name}'s "
                                  f"{_time(target_split.call_s)} call is outside its kernels "
                                  f"({ref_name}: {reference_split.host_share:.0%} of "
                                  f"{_time(reference_split.call_s)})")
    return ProfileCause(KERNEL_BOUND, f"kernel: {tgt_name}'s kernels take "
                                      f"{_time(target_split.kernel_s)} a call against "
                                      f"{ref_name}'s {_time(reference_split.kernel_s)} "
                                      f"(heaviest: {_heaviest(target)} against "
                                      f"{_heaviest(reference)})")

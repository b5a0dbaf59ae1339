"""N profiled calls of one callable, as kernels per call: what `--profile` records.

The profiler ran around `calls` calls of one measured call (after its timing, never inside
a timed sample), so every kernel in the profile is that call's: a kernel seen 10 times in 5
calls runs twice per call. `wall_s` is the wall time per call under the profiler (the loop
timed around it, synced), kept to show the profiler's own cost; the split against the
*timed* call is split.py's.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Mapping

from opbench.profiles.events import Profile
from opbench.profiles.kernels import kernels_of

__all__ = ["KernelTime", "CallProfile", "call_profile"]

US = 1e-6


@dataclass(frozen=True)
class KernelTime:
    """One kernel name's launches and time per profiled call."""

    name: str
    calls: float           # launches per call (a kernel of every second call: 0.5)
    time_s: float          # its time per call, all launches
    kind: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "calls": self.calls, "time_s": self.time_s,
                "kind": self.kind}


@dataclass(frozen=True)
class CallProfile:
    framework: str
    source: str
    devices: tuple[str, ...]
    profiled_calls: int
    wall_s: float | None               # per call under the profiler; None: not timed
    kernels: tuple[KernelTime, ...]    # heaviest first
    notes: tuple[str, ...] = ()

    @property
    def kernel_s(self) -> float:
        return sum(k.time_s for k in self.kernels)

    def extra(self) -> dict[str, float]:
        """Launches per call of each kind of extra work (cast, layout, fallback)."""
        found: dict[str, float] = defaultdict(float)
        for k in self.kernels:
            if k.kind:
                found[k.kind] += k.calls
        return dict(found)

    def kind_time_s(self, kind: str) -> float:
        return sum(k.time_s for k in self.kernels if k.kind == kind)

    def as_dict(self) -> dict[str, Any]:
        return {"framework": self.framework, "source": self.source,
                "devices": list(self.devices), "profiled_calls": self.profiled_calls,
                "wall_s": self.wall_s, "kernels": [k.as_dict() for k in self.kernels],
                "profiled_kernel_s": self.kernel_s, "extra": self.extra(),
                "notes": list(self.notes)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "CallProfile":
        """A profile entry of a results record again (as_dict's keys; split.py's added keys
        are ignored)."""
        return cls(str(d["framework"]), str(d["source"]), tuple(d.get("devices", ())),
                   int(d["profiled_calls"]), d.get("wall_s"),
                   tuple(KernelTime(str(k["name"]), float(k["calls"]), float(k["time_s"]),
                                    k.get("kind")) for k in d.get("kernels", ())),
                   tuple(d.get("notes", ())))


def call_profile(profile: Profile, calls: int, wall_s: float | None = None,
                 notes: tuple[str, ...] = ()) -> CallProfile:
    """The kernels of `profile`, which holds `calls` calls of one callable, per call."""
    if calls < 1:
        raise ValueError("a call profile needs at least one profiled call")
    # by name and kind: torch's aten::copy_ is a cast's kernel under aten::_to_copy and a
    # layout change's under aten::contiguous
    count: dict[tuple[str, str | None], int] = defaultdict(int)
    total_us: dict[tuple[str, str | None], float] = defaultdict(float)
    for k in kernels_of(profile):
        count[(k.event.name, k.kind)] += 1
        total_us[(k.event.name, k.kind)] += k.event.dur_us
    kernels = tuple(sorted(
        (KernelTime(name, n / calls, total_us[(name, kind)] * US / calls, kind)
         for (name, kind), n in count.items()), key=lambda k: -k.time_s))
    return CallProfile(profile.framework, profile.source, profile.devices, calls, wall_s,
                       kernels, tuple(profile.notes) + tuple(notes))

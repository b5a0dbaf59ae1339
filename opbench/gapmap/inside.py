"""The profiles' figures (`--profile`): each side's call split into kernel and host time
against its timed median, and the cause both sides' profiles give a SLOW row, beside the
sweep's cause (attribute.py), with whether the two agree. Pure: a record in, figures out;
gapmap/figures.py writes them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from opbench.profiles.call_profile import CallProfile
from opbench.profiles.split import profile_cause, split
from opbench.results.records import InstanceRecord

__all__ = ["InsideFigures", "inside_figures"]

SLOW = "SLOW"


@dataclass(frozen=True)
class InsideFigures:
    profile: Mapping[str, Mapping[str, Any]]        # the instance's profile, split added
    causes: Mapping[str, Mapping[str, Any]]         # measurement key -> profile cause


def _entry(entry: Mapping[str, Any], call_s: float | None) -> tuple[dict[str, Any],
                                                                    CallProfile | None]:
    plain = {k: v for k, v in entry.items()
             if k not in ("call_s", "kernel_s", "host_s", "host_floored")}
    if "error" in entry or call_s is None:
        return plain, None
    profile = CallProfile.from_dict(entry)
    return {**plain, **split(profile, call_s).as_dict()}, profile


def inside_figures(inst: InstanceRecord, reference: str, target: str,
                   sweep_kinds: Mapping[str, str] | None = None) -> InsideFigures:
    """`sweep_kinds`: measurement key -> the sweep cause's kind (overhead, kernel, ...)."""
    profile: dict[str, dict[str, Any]] = {}
    causes: dict[str, dict[str, Any]] = {}
    for key, sides in inst.profile.items():
        m = inst.measurements.get(key)
        entries, profiles = {}, {}
        for side, entry in sides.items():
            call_s = m.median_s(side) if m is not None else None
            entries[side], profiles[side] = _entry(entry, call_s)
        profile[key] = entries
        if m is None or m.verdict != SLOW or profiles.get(reference) is None \
                or profiles.get(target) is None:
            continue
        ref_split = split(profiles[reference], m.median_s(reference))
        tgt_split = split(profiles[target], m.median_s(target))
        cause = profile_cause(profiles[reference], ref_split, profiles[target], tgt_split,
                              names=(reference, target))
        if cause is None:
            continue
        found = cause.as_dict()
        sweep = (sweep_kinds or {}).get(key)
        found["agrees_with_sweep"] = (None if sweep in (None, "unknown", "threading")
                                      else sweep == cause.sweep_kind)
        causes[key] = found
    return InsideFigures(profile, causes)

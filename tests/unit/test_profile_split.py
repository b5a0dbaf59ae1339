"""The profile's split of a timed call into kernel and host time, and the cause it gives a
SLOW row (opbench/profiles/split.py, call_profile.py, gapmap/inside.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from opbench.profiles.call_profile import CallProfile, KernelTime, call_profile
from opbench.profiles.read import read_profile
from opbench.profiles.split import EXTRA, HOST, KERNEL_BOUND, profile_cause, split

FIXTURES = Path(__file__).parent / "fixtures" / "profiles"


def _profile(*kernels: KernelTime, wall_s: float | None = None, framework="mindspore"):
    return CallProfile(framework, "test", ("cpu",), 10, wall_s, tuple(kernels))


def test_host_time_is_the_timed_call_less_its_kernels():
    s = split(_profile(KernelTime("Softmax", 1, 7e-6)), 30e-6)
    assert s.kernel_s == pytest.approx(7e-6) and s.host_s == pytest.approx(23e-6)
    assert not s.floored and s.host_share == pytest.approx(23 / 30)


def test_kernel_time_never_exceeds_the_timed_call_and_says_when_it_was_floored():
    s = split(_profile(KernelTime("aten::_softmax", 1, 2.2e-6)), 1.5e-6)
    assert s.kernel_s == 1.5e-6 and s.host_s == 0.0 and s.floored


def test_a_profiler_that_slowed_the_call_keeps_the_kernels_share_of_it():
    # profiled 3.84 us a call with a 2.2 us kernel; timed 1.46 us: the kernel keeps 57%
    s = split(_profile(KernelTime("aten::_softmax", 1, 2.2e-6), wall_s=3.84e-6), 1.46e-6)
    assert s.kernel_s == pytest.approx(1.46e-6 * 2.2 / 3.84)
    assert s.host_s == pytest.approx(1.46e-6 - s.kernel_s) and not s.floored


def _cause(ref, ref_call, tgt, tgt_call):
    return profile_cause(ref, split(ref, ref_call), tgt, split(tgt, tgt_call),
                         names=("torch", "mindspore"))


def test_a_call_mostly_outside_its_kernel_is_host_bound():
    cause = _cause(_profile(KernelTime("aten::_softmax", 1, 1e-6), framework="torch"), 1.5e-6,
                   _profile(KernelTime("Softmax", 1, 7e-6)), 31e-6)
    assert cause.kind == HOST and "77% of mindspore's" in cause.basis
    assert cause.sweep_kind == "overhead" and cause.as_dict()["source"] == "profile"


def test_a_slower_kernel_is_kernel_bound_and_named():
    cause = _cause(_profile(KernelTime("aten::_softmax", 1, 140e-6), framework="torch"), 141e-6,
                   _profile(KernelTime("Softmax", 1, 4.3e-3)), 4.4e-3)
    assert cause.kind == KERNEL_BOUND and "`Softmax` 4.3 ms" in cause.basis
    assert "`aten::_softmax` 140 us" in cause.basis


def test_extra_casts_that_take_the_gap_are_named_first():
    ref = _profile(KernelTime("aten::add", 1, 10e-6), framework="torch")
    tgt = _profile(KernelTime("Add", 1, 10e-6), KernelTime("Cast", 2, 30e-6, "cast"))
    cause = _cause(ref, 12e-6, tgt, 50e-6)
    assert cause.kind == EXTRA and "2 cast kernel(s) per call" in cause.basis


def test_no_cause_when_the_target_is_not_slower():
    ref = _profile(KernelTime("aten::add", 1, 10e-6), framework="torch")
    assert _cause(ref, 12e-6, ref, 11e-6) is None


def test_a_profile_entry_round_trips_through_the_record():
    cp = call_profile(read_profile(FIXTURES / "mindspore_cpu_block"), 5, wall_s=0.02)
    back = CallProfile.from_dict(cp.as_dict())
    assert back == cp
    # 45 HostCpuOps kernels in 5 calls: 9 launches per call, Mul twice
    assert sum(k.calls for k in cp.kernels) == pytest.approx(9)
    assert next(k for k in cp.kernels if k.name == "Mul").calls == 2
    assert cp.extra() == {"cast": 1.0}


def test_torch_cpu_kernels_leave_views_out_and_give_a_copy_its_callers_kind():
    cp = call_profile(read_profile(FIXTURES / "torch_cpu_block.json"), 5)
    names = {(k.name, k.kind) for k in cp.kernels}
    assert ("aten::mm", None) in names and ("aten::gelu", None) in names
    assert ("aten::copy_", "cast") in names and ("aten::copy_", "layout") in names
    assert not any(k.name in ("aten::view", "aten::reshape", "aten::t") for k in cp.kernels)

"""replay/allocator.py: a suggestion's replay process holds glibc's heap (no trimming, a fixed
mmap threshold) through mallopt, and says why where it cannot; a fake C library records the
calls. One test calls the real one where it is glibc."""
from __future__ import annotations

import ctypes
import platform
import resource

import pytest

from opbench.model.replay import allocator


class FakeLibc:
    def __init__(self, answer=1):
        self.calls: list[tuple[int, int]] = []
        self.answer = answer

    def mallopt(self, parameter, value):
        self.calls.append((parameter.value, value.value))
        return self.answer


def test_both_thresholds_are_set_to_the_held_state():
    libc = FakeLibc()
    assert allocator.hold_heap(libc) is None
    assert libc.calls == [(allocator.M_MMAP_THRESHOLD, 32 * 1024 * 1024),
                          (allocator.M_TRIM_THRESHOLD, 2**31 - 1)]


def test_a_refusal_or_a_library_without_mallopt_is_said():
    assert "refused" in allocator.hold_heap(FakeLibc(answer=0))
    assert "no mallopt" in allocator.hold_heap(object())


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mallopt only")
def test_the_real_glibc_keeps_a_freed_block_s_pages():
    """Held, a 4 MiB block freed and asked for again comes back with its pages mapped: no
    new minor faults to touch it. Handed back to the kernel (what the default thresholds do
    to a block above them, or at the heap's top past the trim threshold), touching it again
    takes a fault per 4 KiB page: 1,024."""
    assert allocator.hold_heap() is None
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    size = 4 << 20
    block = libc.malloc(size)
    ctypes.memset(block, 1, size)
    libc.free(block)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    block = libc.malloc(size)
    ctypes.memset(block, 2, size)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    libc.free(block)
    assert faults < 100, faults

"""The C allocator of a suggestion's replay process held in one state: no heap trimming, and
a fixed threshold below which a block comes from the heap (glibc's mallopt; elsewhere,
nothing is changed and the caller is told so).

glibc moves both thresholds as a process runs: a large block freed raises the mmap threshold
to its size, and a free that leaves more than twice that at the heap's top hands the pages
back to the kernel, so the next step takes them again as page faults. Whether a step's
intermediates land there depends on what else the process allocated before, so two processes
of one program run it at two speeds: the torch GELU-formula pair's naive step read 5.90 ms
with 942 minor faults a step in one process and 4.46 ms with 25 in the next, the script's
step and the replayed one alike (tools run 2026-12-02, 30 alternated rounds, medians). A
swap that removes intermediates then saves what they cost in that process's state: six
replay processes of that swap claimed 1.880 ms [0.904, 2.856] a step where the script
pair's six processes (all in the few-faults state) measured 0.820 [0.706, 0.934]. Held in
the state a long-running process settles in (the heap kept, blocks under 32 MiB from it), the
same six processes claimed 0.682 [0.536, 0.827] and 0.586 [0.567, 0.606] in two runs.
Only the suggestions' paired replays set it: the projection's replays time a step against
the script's own, which runs with glibc's defaults."""
from __future__ import annotations

import ctypes
import ctypes.util

__all__ = ["hold_heap", "M_TRIM_THRESHOLD", "M_MMAP_THRESHOLD", "MMAP_THRESHOLD",
           "TRIM_THRESHOLD"]

# mallopt's parameters (malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
# glibc's largest mmap threshold on a 64-bit system (DEFAULT_MMAP_THRESHOLD_MAX): where its
# dynamic threshold ends in a process that freed a block that large
MMAP_THRESHOLD = 32 * 1024 * 1024
# never trim in a replay's lifetime (a process times for seconds, then exits): mallopt's
# largest value
TRIM_THRESHOLD = 2**31 - 1


def hold_heap(libc: object | None = None) -> str | None:
    """Set the thresholds; None when set, else why not (not glibc, or mallopt refused).
    `libc`: the C library (a test passes a fake)."""
    if libc is None:
        name = ctypes.util.find_library("c")
        if name is None:
            return "no C library found"
        try:
            libc = ctypes.CDLL(name)
        except OSError as error:
            return f"the C library did not load: {error}"
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None:
        return "the C library has no mallopt (not glibc): its allocator left as it is"
    for parameter, value in ((M_MMAP_THRESHOLD, MMAP_THRESHOLD),
                             (M_TRIM_THRESHOLD, TRIM_THRESHOLD)):
        if not mallopt(ctypes.c_int(parameter), ctypes.c_int(value)):
            return f"mallopt({parameter}, {value}) refused"
    return None

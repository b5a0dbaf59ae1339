"""A measured call run again under its framework's own profiler (`--profile`).

After an instance's timing, never inside a timed sample, each side runs the call it timed
a few more times under its profiler, in the same process, launch mode and threads as the
measurement: serial calls each synced, async calls synced once at the end. The framework's
files go to a scratch directory that is removed after they are read (opbench/profiles), and
the side's entry is the CallProfile's record: its kernels per call, their kinds, and the wall
time per call under the profiler. A profiler that fails is the entry's `error`; the
measurement stands.
"""
from __future__ import annotations

import tempfile
import time
from typing import Any, Callable

from opbench.config import ASYNC
from opbench.frameworks import Adapter
from opbench.profiles.call_profile import call_profile

__all__ = ["PROFILE_MIN_CALLS", "PROFILE_MAX_CALLS", "profiled_calls", "profile_side"]

# Calls per profile: the measurement's loop count (each sample's calls, calibrated to take
# well past the clock's resolution) within [3, 20]. Three give a kernel per call to a third;
# twenty keep a 10 ms call's profile at 0.2 s next to MindSpore's ~1.0 s analyse().
PROFILE_MIN_CALLS = 3
PROFILE_MAX_CALLS = 20


def profiled_calls(loops: int) -> int:
    return max(PROFILE_MIN_CALLS, min(PROFILE_MAX_CALLS, int(loops)))


def profile_side(adapter: Adapter, call: Callable[[], Any], sync: Callable[[], None],
                 mode: str, loops: int, clock: Callable[[], float] = time.perf_counter
                 ) -> dict[str, Any]:
    """The side's profile entry for one measurement (the CallProfile's record, or
    {"error": ...})."""
    calls = profiled_calls(loops)
    window: list[float] = []

    def run() -> None:
        call()              # one call before the window: the profiler's first-op set-up
        sync()
        start = clock()
        for _ in range(calls):
            call()
            if mode != ASYNC:
                sync()
        sync()
        window.append(clock() - start)

    try:
        with tempfile.TemporaryDirectory(prefix="opbench-profile-") as workdir:
            profile = adapter.profile_calls(run, workdir)
    except Exception as exc:  # a profiler that fails leaves the measurement as it is
        return {"error": f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"}
    # the untimed first call is in the profile too: its kernels are one more call's
    return call_profile(profile, calls + 1,
                        wall_s=window[0] / calls if window else None).as_dict()

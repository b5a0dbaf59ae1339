"""The self-test facility (OPBENCH_INJECT_SLOWDOWN): parsing and the extra-call schedule."""
from __future__ import annotations

import pytest

from opbench.runner.injection import INJECT_ENV, injection_from_env, parse_injection, slowed


def test_parse_injection():
    inj = parse_injection("add[shape=1x128x768,dtype=float32]:1.25")
    assert inj.id_substring == "add[shape=1x128x768,dtype=float32]" and inj.factor == 1.25
    assert "SELF-TEST" in inj.describe()
    for bad in ("add", "add:1.0", "add:0.5", ":1.25", "add:x", "add:9"):
        with pytest.raises(ValueError, match=INJECT_ENV):
            parse_injection(bad)
    assert injection_from_env({}) is None
    assert injection_from_env({INJECT_ENV: "relu:1.5"}).factor == 1.5


@pytest.mark.parametrize("factor, calls, extra", [(1.25, 100, 25), (1.5, 10, 5), (2.0, 7, 7),
                                                  (1.1, 100, 10)])
def test_slowed_repeats_the_call_evenly(factor, calls, extra):
    log: list[str] = []

    def fn(x):
        log.append("call")
        return x * 2

    wrapped = slowed(fn, lambda: log.append("sync"), factor)
    assert [wrapped(3) for _ in range(calls)] == [6] * calls     # the result is unchanged
    assert log.count("call") == calls + extra
    assert log.count("sync") == extra       # each extra call follows its own sync

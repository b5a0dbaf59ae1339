"""Hooks the opbench plugin adds to pytest."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from opbench.config import RunConfig
    from opbench.runner.session import Session


@pytest.hookspec(firstresult=True)
def pytest_opbench_make_session(config: pytest.Config, run_config: RunConfig) -> Session | Any:
    """Return the (not yet opened) opbench Session that runs the case instances of this
    pytest session in this process (run_config.processes is 1 here), or None for the
    default: `--opbench-processes` worker processes (opbench/runner/workers.py), or a
    `opbench.runner.session.Session` in this process when that is 1.

    Called once, when the first case item runs. The plugin opens it (which sets up the
    frameworks, their device and thread count) and, with --benchmark, measures each side's
    overheads. Use it to give each pytest-xdist worker a device of its own, to inject a fake
    clock in tests, or to run a Session subclass with adapters of your own."""

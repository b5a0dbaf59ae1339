"""Hooks the opbench plugin adds to pytest."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..runner import RunConfig, Session


@pytest.hookspec(firstresult=True)
def pytest_opbench_make_session(config: pytest.Config, run_config: RunConfig) -> Session | Any:
    """Return the (not yet opened) opbench Session that runs the case instances of this
    pytest session, or None for the default `opbench.runner.Session(run_config)`.

    Called once, when the first case item runs. The plugin opens it (which sets up the
    frameworks, their device and thread count) and, with --benchmark, measures each side's
    overheads. Use it to give each pytest-xdist worker a device of its own, to inject a fake
    clock in tests, or to run a Session subclass with adapters of your own."""

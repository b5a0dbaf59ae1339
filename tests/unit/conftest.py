"""What every unit test shares: a machine-facts cache of its own (runner/machine_facts.py),
so no test reads the floors another test (or the user's own runs) measured, and none writes
into the user's cache directory."""
import pytest

from opbench.runner.machine_facts import CACHE_DIR_ENV


@pytest.fixture(autouse=True)
def own_machine_facts_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path_factory.mktemp("machine-facts")))

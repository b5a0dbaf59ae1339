"""Registers the opbench pytest plugin for runs in this repository; nothing else.

An installed opbench registers the same module through its `pytest11` entry point, which
pytest loads before any conftest; registering it a second time would be an error, so it is
named here only when nothing has loaded it yet (a source checkout that is not installed,
or PYTEST_DISABLE_PLUGIN_AUTOLOAD=1).
"""
import sys

PLUGIN = "opbench.pytest_plugin.plugin"

if PLUGIN not in sys.modules:
    pytest_plugins = [PLUGIN]

"""The parts of the pytest front door (`pytest cases/`, `pytest --benchmark cases/`).

opbench/pytest_plugin.py is the thin shell pytest loads; it only wires hooks to these
modules. Each module has one job:
  options      the command-line options and their translation into a RunConfig
  collect      which YAML files are case files; the file collector and the instance item
  run_state    the one measuring Session of a pytest session, created lazily
  outcome      a result record -> pass / fail / inconclusive, with a readable message
  bench_entries result records -> pytest-benchmark entries (save, compare, json)
  summary      the end-of-session table of ratios and verdict counts
  hookspec     `pytest_opbench_make_session`, for supplying a Session of one's own
"""
from __future__ import annotations

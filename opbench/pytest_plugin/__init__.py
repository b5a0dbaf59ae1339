"""The pytest front door (`pytest cases/`, `pytest --benchmark cases/`).

plugin.py is the thin shell pytest loads (entry point `opbench`); it only wires hooks to the
modules beside it. Each has one job:
  options          the command-line options and their translation into a RunConfig
  collect          which YAML files are case files; the file collector and the instance item
  run_state        the one measuring session of a pytest session, created lazily
  outcome          a result record -> pass / fail / inconclusive, with a readable message
  bench_entries    result records -> pytest-benchmark entries (save, compare, json)
  summary          the end-of-session table of ratios and verdict counts
  results_file     --opbench-json: the session's record, merged across xdist workers
  sharding         --opbench-shard K/N over the collected items
  case_scheduling  pytest-xdist: a case's instances stay on one worker
  xdist_isolation  pytest-xdist: timing only where workers own disjoint cores or devices
  extras           the shipped case library collected when no path is given
  hookspec         `pytest_opbench_make_session`, for supplying a Session of one's own
"""

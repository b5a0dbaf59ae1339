"""The `opbench` command: one thin module per command group, each mapping options to one
library call (click). `python -m opbench.cli` runs it.

  __main__           `python -m opbench.cli`: the opbench command
  common             What every `opbench` command shares: consoles, user-facing errors, case
                     selection, the timing options and the run-save-print-exit sequence
  gate               `opbench gate` and `opbench history`: argument parsing and wiring only
  gate_noise         `opbench noise`: each instance's noise floor from several runs of the same
                     code (the measuring is `opbench run --for-gate`, once per process;
                     gate/noise.py does the rest), and `opbench resample` (alias `replay`): the gate
                     resampled over such runs (gate/resample.py)
  interrupts         SIGINT and SIGTERM as an exception that carries the signal, so a run saves
                     what it measured, marks it interrupted and exits 130 (SIGINT) or 143
                     (SIGTERM)
  main               The `opbench` command: argument parsing and wiring only (shared pieces:
                     common.py)
  merge              `opbench merge`: the command-line shell of merge.py (reading, writing,
                     messages)
  scan               `opbench scan PATH...`: list the framework calls a code base makes,
                     statically
  selection_options  The selection options every case-running command takes (`-k`, `--op`,
                     `--tag`), with one help text each, so `opbench run`, `compare`, `check`,
                     `list` and `gate` select alike (and like `pytest cases/`)
  trace              `opbench trace [OPTIONS] -- python script.py ARGS` (wiring only: parse,
                     run, write outputs)
  xdist_run          `opbench run --workers N`: the run measured by pytest-xdist's workers
"""

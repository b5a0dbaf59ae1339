"""Measured affinity suggestions (`opbench model --suggest`, `opbench suggest`): over the
captured steady step, calls and data-flow patterns with an equivalent in the script's own
framework, each swapped, checked for equal outputs and timed against the original.

  graph      The step's data flow read for patterns: operations, operands, consumers
  patterns   The candidates (families and APIs from the static scan's catalogue)
  optimizer_loop  A hand-written SGD loop over the weights, found by its data flow
  swap       A candidate applied: the swapped program, Refs rewired
  saving     The saving per step and its interval from interleaved timings (pure)
  measure    Each candidate: output check, interleaved replay processes, its row
  run        The library calls: a step or a script -> rows (views: report/suggestions.py)
"""

"""Results records: the JSON file (versioned, schema-checked, written atomically) and its
typed records, merging shards, the run history database, reproducibility across runs. No
measuring: the run loop that fills a record is opbench/runloop/.

  change_sim       The change-point method's detection and false-alarm rates by simulation
  changes          Change points in the run history: each series' steps, run, size, direction
  history          The run history: every recorded run in one SQLite file, queried per operator
  io               The results file's version, its JSON Schema, the facts of the machine a record
                   starts with, and the atomic JSON write
  merge            Join results records that each hold part of one selection into one record:
                   the shards of a CI matrix (`opbench run --shard K/N`, `opbench merge`) and
                   the workers of `pytest -n N`
  records          The results file as typed, frozen records (RunRecord and its parts), the one
                   loader (load_results: read, migrate, schema-check) and the one writer
  reproducibility  How well N independent runs of one selection agree: the check of a
                   measurement protocol
  safe_write       Results files that cannot be written must not cost the measurements
"""

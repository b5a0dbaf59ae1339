"""Results records: the JSON file (versioned, schema-checked, written atomically) and its
typed records, the recorded run (the one execute-and-record path every front door uses),
merging shards, the run history database, reproducibility across runs.

  history          The run history: every recorded run in one SQLite file, queried per operator
  io               The results file's version, its JSON Schema, the facts of the machine a record
                   starts with, and the atomic JSON write
  merge            Join results records that each hold part of one selection into one record:
                   the shards of a CI matrix (`opbench run --shard K/N`, `opbench merge`) and
                   the workers of `pytest -n N`
  records          The results file as typed, frozen records (RunRecord and its parts), the one
                   loader (load_results: read, migrate, schema-check) and the one writer
  recorded_run     A run recorded: every instance measured through a session (this process or
                   worker processes), judged, and kept in a results record that is rewritten
                   atomically after every instance and every pass, so an interrupt or a crash
                   keeps what was measured
  reproducibility  How well N independent runs of one selection agree: the check of a
                   measurement protocol
  safe_write       Results files that cannot be written must not cost the measurements
"""

"""Case files and what they select: the case model, YAML read with the position of every key,
validation, sweep expansion (within opbench/config/limits.py), `-k/--op/--tag` selection,
`--shard K/N` slicing, the shipped case library and its coverage. Imports only
opbench.config.

  api_guard    Which objects a case file's API path may reach: only the framework's own
  case_errors  CaseError (file:line, case and key; every problem of a file at once) and the
               wording every check shares
  case_expansion  Sweeps into instances: ids, substitution, each instance's inputs checked
               (dtypes, distributions, budgets)
  case_files   The case format's public surface: load, expand, select, and the names the
               rest of opbench imports (from the four case_* modules)
  case_model   The records (Case, CaseInstance, InputSpec, FrameworkCall, Ref) and the
               `$name` reference syntax
  case_validation  Files, YAML, the JSON Schema's errors reworded, and the checks a schema
               cannot express
  coverage     What the case library covers: operators, instances, tags, backward, dtypes
  ids          Short instance ids for tables: `reshape[1x128x768,float16]` for
               `reshape[shape=1x128x768,dtype=float16]`
  library      Where the shipped case library is, and how user case directories add to it
  selection    Which case instances a command runs: `-k EXPR`, `--op OP`, `--tag TAG`, the same
               in every `opbench` command and with the same meaning as in `pytest cases/`
  shard        `--shard K/N`: a stable slice of a selection, so a CI matrix of N jobs covers it
               once
  yaml_source  Reading one case file's YAML: data, the line of every key and list item, and the
               problems a plain `yaml.safe_load` would hide or choke on, in one pass over the
               parser's events
"""

"""What runs in opbench's own process: the pipeline from a captured program to what each API
costs the model.

  pipeline         `measure_model`: capture, steady state, probe, timed replays, projection
  processes        The capture and replay processes started (the interpreter checked first)
  project          Projected step time per framework, time lost per signature and per API
  alone_cases      The heaviest signatures measured alone through the case flow
  alone_programs   ... and those whose route is not one API, through replay processes
  record           The frozen JSON object of the result (schema: model.schema.json)
  alias_windows    Aliases whose traced window holds work no replay runs: not covered
"""
